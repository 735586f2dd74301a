"""Ingestion: file → load → chunk → keyword index (searchable) → embed → vectors (indexed).

Two phases, so a document can be found by its words seconds after upload while its vectors
(~99% of the work) follow:
1. per document: register as 'indexing' → write all chunks without vectors in one store
   transaction → 'searchable'. A crash in between leaves an 'indexing' row whose writer is
   gone; `recover_interrupted` removes whatever it wrote, so no half document ever stays.
2. `fill_vectors`: embed the chunks of 'searchable' documents (cached, batched) → set their
   vectors → 'indexed'. Any process may resume it after a crash (`claim_for_vectors`).
A bad file fails alone with its reason; the batch goes on.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import logging
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ..appdb import AppDB
from ..config import Settings
from ..embeddings import text_key
from ..errors import GroundworkError, InputError, LoadError
from ..models import Chunk, Document, FileReport, KnowledgeBase, LoadedDocument, iso_to_day, upload_day
from ..text.language import chunk_languages, document_language
from .chunker import chunk_document
from .isolation import IsolatedLoader
from .loaders import SUPPORTED_EXTENSIONS, load_file

# Chunks embedded per model call group: big enough that length-sorted batches pad little,
# small enough that a crash, a cancel or Ctrl-C loses little work (each group's vectors are
# committed) and progress moves every few seconds.
EMBED_GROUP = 256



log = logging.getLogger(__name__)

_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def describe(ld: LoadedDocument, summarize=None) -> str:
    """What a document says it is, for the planner to match a question against (beside its file
    name and title): its first heading other than its title, else its first line of text,
    at most 120 characters. With a model (`summarize`), its one-line summary follows: "the
    canteen menu" names a scan whose first line is a date. A record of a JSONL file is not
    summarised (thousands of model calls); a model that fails leaves the rule's line."""
    text = "\n".join(ld.pages[:2])[:4000]
    line = _first_line(ld, text)
    if summarize is not None and not ld.doc_id and text.strip():
        try:
            said = " ".join(str(summarize(text[:2000])).split())[:160]
            if said:
                return f"{line} — {said}" if line else said
        except Exception:  # noqa: BLE001 - the rule's line stands
            log.warning("summary at ingest failed for %s", ld.source, exc_info=True)
    return line


def _first_line(ld: LoadedDocument, text: str) -> str:
    for m in _HEADING.finditer(text):
        h = " ".join(m.group(1).split())
        if h.casefold() != (ld.title or "").casefold() and len(h) > 3 and not h.isupper():
            return h[:120]
    for line in text.splitlines():
        line = " ".join(line.strip("#|-*> \t").split())
        if len(line) > 12 and line.casefold() != (ld.title or "").casefold():
            return line[:120]
    return ""

class Cancelled(GroundworkError):
    """The caller asked to stop (a cancelled ingestion job)."""


@dataclass
class IngestStats:
    files: int = 0
    documents: int = 0
    pages: int = 0
    chunks: int = 0
    embedded: int = 0  # chunks actually sent to the model (the rest came from the cache)
    seconds_total: float = 0.0
    seconds_embed: float = 0.0
    reports: list[FileReport] = field(default_factory=list)


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given, folders walked (sorted, hidden files skipped)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(
                f for f in p.rglob("*") if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
        else:
            out.append(p)
    return out


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


class Ingestor:
    def __init__(self, settings: Settings, appdb: AppDB, store, embedder, summarize=None):
        # summarize(text) -> one line saying what a document is (the fast model's, when a model
        # is configured): the planner matches questions against it (generation/planner.py)
        self.summarize = summarize
        self.settings = settings
        self.appdb = appdb
        self.store = store
        self.embedder = embedder
        self._isolated = (
            IsolatedLoader(settings.ingest_timeout_s, settings.ingest_memory_mb) if settings.ingest_timeout_s > 0 else None
        )

    def close(self) -> None:
        """Stop the isolated loader's worker process (terminate, join with a time limit, kill
        if it lingers). Call once when the owner shuts down; later loads are refused."""
        if self._isolated is not None:
            self._isolated.close()

    def load(self, path: Path, name: str, password: str | None = None) -> list[LoadedDocument]:
        if self._isolated is None:
            return load_file(path, display_name=name, max_pages=self.settings.max_pages, ocr=self.settings.ocr,
                             password=password)
        return self._isolated.load(path, name, self.settings.max_pages, self.settings.ocr, password)

    # ---- recovery --------------------------------------------------------------------
    def recover_interrupted(self) -> int:
        finish_deletes(self.appdb, self.store)
        stale = self.appdb.stale_documents()
        for doc in stale:
            self.store.delete_document(doc.kb_id, doc.doc_id)
            self.appdb.remove_document(doc.kb_id, doc.doc_id)
        return len(stale)

    # ---- embedding with cache --------------------------------------------------------
    def embed_chunks(self, chunks: list[Chunk], stats: IngestStats) -> np.ndarray:
        texts = [c.index_text() for c in chunks]
        model_id = getattr(self.embedder, "model_id", "unknown")
        keys = [text_key(model_id, t) for t in texts]
        cached = self.appdb.cached_vectors(keys)
        missing = [i for i, k in enumerate(keys) if k not in cached]
        t0 = time.perf_counter()
        fresh = self.embedder.embed_array([texts[i] for i in missing]) if missing else None
        stats.seconds_embed += time.perf_counter() - t0
        stats.embedded += len(missing)
        if fresh is not None:
            self.appdb.cache_vectors({keys[i]: fresh[j] for j, i in enumerate(missing)})
        dim = fresh.shape[1] if fresh is not None else len(next(iter(cached.values())))
        out = np.zeros((len(chunks), dim), dtype=np.float32)
        for i, k in enumerate(keys):
            if k in cached:
                out[i] = cached[k]
        if fresh is not None:
            out[missing] = fresh
        return out

    # ---- main entry ------------------------------------------------------------------
    def ingest(
        self,
        kb: KnowledgeBase,
        paths: list[Path],
        *,
        display_names: dict[Path, str] | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        vector_progress: Callable[[int, int], None] | None = None,
        cancel: Callable[[], bool] | None = None,
        on_report: Callable[[FileReport], None] | None = None,
        embed: bool = True,
        passwords: dict[Path, str] | None = None,
        date: str | None = None,
        language: str | None = None,
    ) -> IngestStats:
        """Phase 1 for every file, then (with `embed`) phase 2 for what they added. `cancel`
        is polled between files and between embedding groups (raises `Cancelled`; the file
        being written is rolled back). `on_report` gets each file's report as it is made.
        `date` (YYYY-MM-DD) dates every document of this call, over what its file states;
        `language` (ISO 639-1) says what language they are in, over what detection finds."""
        if date is not None:
            date = check_date(date)
        if language is not None:
            language = check_language(language)
        self.recover_interrupted()
        files = expand_paths(paths)
        stats = IngestStats(files=len(files))
        t_start = time.perf_counter()
        if len(files) > self.settings.max_files_per_batch:
            raise GroundworkError(
                f"{len(files)} files in one batch; the limit is {self.settings.max_files_per_batch} (RAG_MAX_FILES_PER_BATCH)"
            )
        for n, path in enumerate(files):
            if cancel and cancel():
                raise Cancelled("cancelled")
            name = (display_names or {}).get(path, path.name)
            t0 = time.perf_counter()
            try:
                report = self._ingest_file(kb, path, name, stats, cancel, (passwords or {}).get(path), date, language)
            except Cancelled:
                raise
            except GroundworkError as exc:
                report = FileReport(file=name, status="failed", reason=str(exc))
            except MemoryError:
                report = FileReport(file=name, status="failed", reason="file too large to process in memory")
            except Exception as exc:  # a bug or an unforeseen file: report it, keep the batch going
                report = FileReport(file=name, status="failed", reason=f"unexpected error: {type(exc).__name__}: {exc}")
            report.seconds = round(time.perf_counter() - t0, 3)
            stats.reports.append(report)
            if on_report:
                on_report(report)
            if progress:
                progress(n + 1, len(files), name)
        if embed:
            self.fill_vectors(kb.kb_id, stats=stats, progress=vector_progress, cancel=cancel)
        stats.seconds_total = time.perf_counter() - t_start
        return stats

    def fill_vectors(
        self,
        kb_id: str | None = None,
        *,
        stats: IngestStats | None = None,
        progress: Callable[[int, int], None] | None = None,
        cancel: Callable[[], bool] | None = None,
        doc_ids: set[str] | None = None,
    ) -> int:
        """Phase 2: vectors for every 'searchable' document (of `kb_id`, or all), in groups of
        EMBED_GROUP chunks across documents; a document becomes 'indexed' when its last chunk
        has its vector. Returns the chunks given vectors."""
        stats = stats if stats is not None else IngestStats()
        docs = [d for d in self.appdb.waiting_for_vectors(kb_id) if doc_ids is None or d.doc_id in doc_ids]
        total = sum(d.chunks for d in docs)
        done = 0
        queue: list[Chunk] = []
        remaining: dict[tuple[str, str], int] = {}
        by_key = {(d.kb_id, d.doc_id): d for d in docs}

        def flush() -> None:
            nonlocal done
            if not queue:
                return
            vecs = self.embed_chunks(queue, stats)
            self.store.set_vectors([c.chunk_id for c in queue], vecs)
            for c in queue:
                key = (c.kb_id, c.doc_id)
                remaining[key] -= 1
                if remaining[key] == 0:
                    doc = by_key[key]
                    self.appdb.finish_document(doc.kb_id, doc.doc_id, doc.chunks)
                    self._replace_older_versions(doc.kb_id, doc.source, doc.doc_id)
            done += len(queue)
            queue.clear()
            if progress:
                progress(done, total)

        for d in docs:
            if cancel and cancel():
                raise Cancelled("cancelled")
            if not self.appdb.claim_for_vectors(d.kb_id, d.doc_id):
                continue  # another live process is embedding it
            chunks = self.store.document_chunks(d.kb_id, d.doc_id)
            if not chunks:  # deleted meanwhile
                continue
            remaining[(d.kb_id, d.doc_id)] = len(chunks)
            by_key[(d.kb_id, d.doc_id)].chunks = len(chunks)
            for c in chunks:
                queue.append(c)
                if len(queue) >= EMBED_GROUP:
                    flush()
                    if cancel and cancel():
                        raise Cancelled("cancelled")
        flush()
        if done:
            self.appdb.prune_embed_cache()
        return done

    def _ingest_file(self, kb: KnowledgeBase, path: Path, name: str, stats: IngestStats,
                     cancel: Callable[[], bool] | None = None, password: str | None = None,
                     date: str | None = None, language: str | None = None) -> FileReport:
        if not path.exists():
            raise LoadError("file not found")
        # Uploads arrive under temporary names: the display name's extension counts then.
        ext = path.suffix.lower() if path.suffix.lower() in SUPPORTED_EXTENSIONS else Path(name).suffix.lower()
        if ext not in SUPPORTED_EXTENSIONS:
            # load_file says the same; checked first so an unsupported 2 GB file is not hashed.
            return FileReport(
                file=name,
                status="failed",
                reason=f"unsupported file type '{ext or '(none)'}' (supported: {', '.join(sorted(SUPPORTED_EXTENSIONS))})",
            )
        size_mb = path.stat().st_size / 1e6
        if size_mb > self.settings.max_file_mb:
            raise LoadError(f"file is {size_mb:.0f} MB; the limit is {self.settings.max_file_mb} MB (RAG_MAX_FILE_MB)")
        sha = file_sha256(path)
        is_records = ext == ".jsonl"
        if not is_records:
            dup = self.appdb.find_duplicate(kb.kb_id, sha)
            if dup:
                return FileReport(
                    file=name, status="duplicate", reason=f"same content as '{dup.source}'", doc_ids=[dup.doc_id],
                    pages=dup.pages, chunks=dup.chunks,
                )
        loaded = self.load(path, name, password)
        report = FileReport(file=name, status="ingested")
        new_docs = 0
        # Records (JSONL) are many small documents: chunk a group, embed it in one batch.
        pending: list[tuple[Document, list[Chunk]]] = []
        pending_chunks = 0
        for ld in loaded:
            doc, chunks = self._prepare(kb, ld, sha if not is_records else None, path, date, language)
            if doc is None:
                report.doc_ids.append(ld.doc_id or "")
                continue
            pending.append((doc, chunks))
            pending_chunks += len(chunks)
            if pending_chunks >= EMBED_GROUP:
                new_docs += self._write(pending, stats, report)
                pending, pending_chunks = [], 0
                if cancel and cancel():
                    raise Cancelled("cancelled")
        if pending:
            new_docs += self._write(pending, stats, report)
        report.pages = sum(ld.page_count for ld in loaded)
        stats.pages += report.pages if new_docs else 0
        if new_docs == 0:
            report.status = "duplicate"
            report.reason = "already in this knowledge base"
            return report
        # Ingested, but not all of it (a PDF page whose text could not be extracted): the
        # reason says what is missing, so the upload page and `ingest --json` show it.
        report.reason = "; ".join(load_warnings(loaded))
        if not is_records:
            self._store_original(kb, path, name, report.doc_ids[0], loaded[0].metadata.get("ocr_lines"))
        report.ocr_pages = sorted({p for ld in loaded for p in ld.metadata.get("ocr_pages", ())})
        return report

    def _prepare(self, kb: KnowledgeBase, ld: LoadedDocument, sha: str | None, path: Path, date: str | None = None,
                 language: str | None = None):
        """(Document, chunks) to write, or (None, []) when this exact content is already in."""
        content_sha = sha or hashlib.sha256("\n\n".join(ld.pages).encode() + ld.title.encode()).hexdigest()
        doc_id = ld.doc_id or hashlib.sha256(f"{kb.kb_id}:{content_sha}".encode()).hexdigest()[:16]
        existing = self.appdb.get_document(kb.kb_id, doc_id)
        if existing and existing.status in ("indexed", "searchable") and existing.sha256 == content_sha:
            return None, []
        chunks = chunk_document(
            ld, doc_id=doc_id, kb_id=kb.kb_id, chunk_size=self.settings.chunk_size, chunk_overlap=self.settings.chunk_overlap
        )
        if not chunks:
            raise LoadError("no text found to index")
        if len(chunks) > self.settings.max_chunks_per_doc:
            raise LoadError(
                f"document would make {len(chunks)} chunks; the limit is {self.settings.max_chunks_per_doc} (RAG_MAX_CHUNKS_PER_DOC)"
            )
        ocr_pages = set(ld.metadata.get("ocr_pages", ()))
        for c in chunks:
            # Chunk ids are unique across knowledge bases: the same record may live in two.
            c.chunk_id = f"{kb.kb_id}/{doc_id}#{c.ordinal}"
            if ocr_pages.intersection(range(c.page_start, c.page_end + 1)):
                c.chunk_type = "ocr"  # read by OCR: shown as such wherever it is cited
            c.tenant, c.acl_users, c.acl_groups = kb.tenant, list(kb.acl_users), list(kb.acl_groups)
        doc = Document(
            doc_id=doc_id, kb_id=kb.kb_id, source=ld.source, title=ld.title,
            mime=ld.mime or (mimetypes.guess_type(path.name)[0] or "application/octet-stream"),
            sha256=content_sha, pages=ld.page_count, chunks=len(chunks),
            tenant=kb.tenant, acl_users=list(kb.acl_users), acl_groups=list(kb.acl_groups),
            description=describe(ld, self.summarize),
        )
        # The date the person gave, else the one the file states, else the upload day.
        stated = ld.metadata.get("date")
        doc.date, doc.date_source = (date, "set") if date else (stated, "metadata") if stated else (
            upload_day(doc.created_at), "upload")
        # The language the person gave (every chunk in it), else detected: the document's from
        # spread samples, a long chunk's own where it is confidently another (text/language.py).
        if language:
            doc.language, doc.language_source = language, "set"
            langs = [language] * len(chunks)
        else:
            doc.language = document_language(ld.pages)
            langs = chunk_languages([c.text for c in chunks], doc.language)
        for c, lang in zip(chunks, langs):
            c.doc_day = doc.doc_day
            c.language = lang
        return doc, chunks

    def _write(self, pending: list[tuple[Document, list[Chunk]]], stats: IngestStats, report: FileReport) -> int:
        """Phase 1: each document's chunks into the keyword index, all or nothing."""
        for doc, chunks in pending:
            self.appdb.begin_document(doc)
            try:
                # A re-imported record with new text replaces the old chunks.
                self.store.delete_document(doc.kb_id, doc.doc_id)
                self.store.add_chunks(chunks, None)
                self.appdb.mark_searchable(doc.kb_id, doc.doc_id, len(chunks))
            except BaseException:
                self.store.delete_document(doc.kb_id, doc.doc_id)
                self.appdb.remove_document(doc.kb_id, doc.doc_id)
                raise
            report.doc_ids.append(doc.doc_id)
            report.chunks += len(chunks)
            stats.documents += 1
            stats.chunks += len(chunks)
        return len(pending)

    def _store_original(self, kb: KnowledgeBase, path: Path, report_name: str, doc_id: str,
                        ocr_lines: dict | None = None) -> None:
        """Keep the uploaded file so the UI can offer it for download next to a citation, and
        beside it the OCR lines of its scanned pages: the page viewer's first look at a scanned
        page then marks the citation without reading the page again (22.6 s on a newcomer's
        scan)."""
        dest_dir = self.settings.files_dir / kb.kb_id
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / f"{doc_id}{Path(report_name).suffix.lower()}"
        if not dest.exists():
            shutil.copyfile(path, dest)
        if ocr_lines:
            ocr_sidecar(dest).write_text(json.dumps(ocr_lines, ensure_ascii=False))
        with self.appdb.db.transaction() as c:
            c.execute("UPDATE documents SET stored_path=? WHERE kb_id=? AND doc_id=?", (str(dest), kb.kb_id, doc_id))

    def _replace_older_versions(self, kb_id: str, source: str, keep_doc_id: str) -> None:
        """Uploading a new version of 'handbook.pdf' replaces the old one (after the new one
        is fully indexed, so the KB never lacks the document). Records (JSONL) share a
        source and are never versions of each other."""
        if source.lower().endswith(".jsonl"):
            return
        for old in self.appdb.list_documents(kb_id):
            if old.source == source and old.doc_id != keep_doc_id:
                delete_document(self.appdb, self.store, kb_id, old.doc_id)


def load_warnings(loaded: list[LoadedDocument]) -> list[str]:
    """What the loaders could not read in files they still loaded (LoadedDocument.metadata
    "ingest_warnings", e.g. PDF pages whose text extraction failed), each line once."""
    out: list[str] = []
    for ld in loaded:
        found = ld.metadata.get("ingest_warnings")
        if isinstance(found, list):
            out += [w for w in found if isinstance(w, str) and w and w not in out]
    return out


def delete_document(appdb: AppDB, store, kb_id: str, doc_id: str) -> bool:
    """The row marked 'deleting' (out of every listing at once), then the chunks, then the row:
    a chunk is never left without its row, and a process that dies part way leaves a
    'deleting' row that `finish_deletes` completes. (Chunks-then-row alone left, after a kill
    between the two, a row listed as indexed with no chunks: a replaced version that never went
    away, found by benchmarks/crash_anywhere.py.)"""
    doc = appdb.get_document(kb_id, doc_id)
    if doc is None:
        return False
    appdb.mark_deleting(kb_id, doc_id)
    store.delete_document(kb_id, doc_id)
    appdb.remove_document(kb_id, doc_id)
    remove_original(doc)
    return True


def finish_deletes(appdb: AppDB, store) -> int:
    """Complete the deletes a dead process began (idempotent: a live one finishing the same
    delete at the same time does no harm)."""
    left = appdb.deleting_documents()
    for doc in left:
        store.delete_document(doc.kb_id, doc.doc_id)
        appdb.remove_document(doc.kb_id, doc.doc_id)
        remove_original(doc)
    return len(left)


def ocr_sidecar(stored: Path) -> Path:
    """Where the OCR lines of a stored original's scanned pages are kept."""
    return stored.with_name(stored.name + ".ocr.json")


def remove_original(doc) -> None:
    """A deleted document's stored file and what was kept beside it."""
    if doc.stored_path:
        Path(doc.stored_path).unlink(missing_ok=True)
        ocr_sidecar(Path(doc.stored_path)).unlink(missing_ok=True)


def check_language(value: str) -> str:
    """A language a person gave, as an ISO 639-1 code (InputError saying what is wrong otherwise)."""
    code = (value or "").strip().lower()
    if not re.fullmatch(r"[a-z]{2}", code):
        raise InputError(f"'{value}' is not a language code: use two letters (ISO 639-1), e.g. en, de, ja")
    return code


def check_date(value: str) -> str:
    """A date a person typed, as YYYY-MM-DD (InputError saying what is wrong otherwise)."""
    try:
        day = iso_to_day(value)
    except (ValueError, TypeError):
        raise InputError(f"'{value}' is not a date: use YYYY-MM-DD") from None
    if day < 1:
        raise InputError(f"'{value}' is before 1900")
    return value.strip()[:10]
