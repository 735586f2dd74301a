"""The facade the CLI and the Streamlit pages call: one data folder, its database, store,
embedder and ingestor, created once and reused (the app caches a Workspace per data dir)."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from pathlib import Path

from . import access
from .access import Caller
from .appdb import AppDB
from .config import Settings, get_settings
from .db import Database
from .embeddings import get_embedder
from .feedback import FeedbackLog
from .errors import InputError, NotFound
from .ingest.pipeline import IngestStats, Ingestor, delete_document
from .models import Chunk, Citation, Document, KnowledgeBase, SearchFilters
from .generation.llm import make_chat_model
from .retrieval.factory import make_reranker
from .retrieval.pipeline import RetrievalPipeline, Retrieved
from .retrieval.settings import merged_settings
from .text.analysis import analyze
from .stores import make_store


class Workspace:
    def __init__(self, settings: Settings | None = None):
        self.settings = settings or get_settings()
        self.db = Database(self.settings.db_path)
        self.appdb = AppDB(self.db)
        self.store = make_store(self.settings, self.db)
        self.feedback = FeedbackLog(self.db)

    @cached_property
    def embedder(self):
        """Loaded on first use (keyword-only commands never pay for the model)."""
        emb = get_embedder(self.settings)
        model = getattr(emb, "model_id", "unknown")
        recorded = self.appdb.get_meta("embedding_model")
        if recorded is None:
            self.appdb.set_meta("embedding_model", model)
        elif recorded != model and self.store.count() > 0:
            raise InputError(
                f"this data folder was indexed with the embedding model '{recorded}', but '{model}' is "
                "configured; set the embedding settings back or use a new RAG_DATA_DIR"
            )
        return emb

    @cached_property
    def ingestor(self) -> Ingestor:
        return Ingestor(self.settings, self.appdb, self.store, self.embedder)

    # ---- knowledge bases -------------------------------------------------------------
    def create_kb(self, name: str, **kw) -> KnowledgeBase:
        return self.appdb.create_kb(name, **kw)

    def list_kbs(self, caller: Caller | None = None) -> list[KnowledgeBase]:
        """Every knowledge base, or those `caller` may see."""
        kbs = self.appdb.list_kbs()
        return kbs if caller is None else access.visible(caller, kbs)

    def get_kb(self, name_or_id: str) -> KnowledgeBase:
        return self.appdb.get_kb(name_or_id)

    def resolve_kbs(self, kb_names: list[str], caller: Caller | None = None) -> list[KnowledgeBase]:
        """The named knowledge bases; one the caller may not see is reported exactly like one
        that does not exist (its name is not leaked)."""
        kbs = [self.get_kb(n) for n in kb_names]
        if caller is not None:
            for kb in kbs:
                if not access.can_see(caller, kb):
                    raise NotFound(f"no knowledge base named '{kb.name}'")
        if not kbs:
            raise InputError("select at least one knowledge base")
        return kbs

    def delete_kb(self, name_or_id: str) -> None:
        kb = self.get_kb(name_or_id)
        self.store.delete_kb(kb.kb_id)
        for doc in self.appdb.list_documents(kb.kb_id, status=None):
            if doc.stored_path:
                Path(doc.stored_path).unlink(missing_ok=True)
        self.appdb.delete_kb_row(kb.kb_id)

    @cached_property
    def threads(self):
        from .threads import ThreadStore

        return ThreadStore(self.db)

    # ---- background ingestion ----------------------------------------------------------
    @cached_property
    def jobs(self):
        from .ingest.jobs import JobQueue

        return JobQueue(self.db, self.settings.data_dir / "uploads")

    @cached_property
    def job_runner(self):
        from .ingest.jobs import JobRunner

        return JobRunner(self.jobs, lambda: self.ingestor, self.appdb, self.store, self.get_kb)

    def submit_upload(self, kb_name: str, files: list[tuple[str, bytes]], user: str | None = None) -> str:
        """Queue uploaded files for the background worker; returns the job id at once."""
        kb = self.get_kb(kb_name)
        job_id = self.jobs.submit(kb.kb_id, files, user)
        self._wake_worker()
        return job_id

    def retry_with_password(self, job_id: str, name: str, password: str, user: str | None = None) -> str:
        """Open an encrypted PDF that an upload could not read: a new job, password in memory only."""
        new_id = self.jobs.retry_locked(job_id, name, password, user)
        self._wake_worker()
        return new_id

    def _wake_worker(self) -> None:
        self.job_runner.start()
        self.job_runner.wake()

    def indexing_progress(self, kb_names: list[str]) -> float | None:
        """Share of the selected knowledge bases' chunks that have their vectors, while some
        do not (None when everything is indexed): answers may still improve."""
        waiting, total = self.appdb.vector_progress([self.get_kb(n).kb_id for n in kb_names])
        return None if waiting == 0 or total == 0 else 1 - waiting / total

    # ---- documents -------------------------------------------------------------------
    def ingest(self, kb_name: str, paths: list[Path], **kw) -> IngestStats:
        kb = self.get_kb(kb_name)
        return self.ingestor.ingest(kb, paths, **kw)

    def delete_document(self, kb_name: str, doc_id: str) -> bool:
        kb = self.get_kb(kb_name)
        return delete_document(self.appdb, self.store, kb.kb_id, doc_id)

    def accessible_document(self, kb_id: str, doc_id: str, user: str | None = None,
                            groups: list[str] | None = None, caller: Caller | None = None) -> Document:
        """The indexed document, if this identity may see it; NotFound otherwise (the same
        answer for "does not exist" and "not yours", so access cannot be probed)."""
        kb = self.appdb.find_kb(kb_id)
        doc = self.appdb.get_document(kb_id, doc_id) if kb else None
        if doc is None or doc.status not in ("indexed", "searchable") or not access.can_see(self.caller(user, groups, caller=caller), kb):
            raise NotFound("that document is not available")
        return doc

    def original_bytes(self, kb_id: str, doc_id: str, user=None, groups=None, caller: Caller | None = None) -> bytes:
        """The uploaded file, read only when asked for (the download button calls this on click)."""
        doc = self.accessible_document(kb_id, doc_id, user, groups, caller)
        if not doc.stored_path or not Path(doc.stored_path).exists():
            raise NotFound(f"the original of {doc.source} was not kept")
        return Path(doc.stored_path).read_bytes()

    @cached_property
    def page_cache(self):
        from .citation_view import PageCache

        return PageCache()

    def cited_page(self, citation: Citation, page: int | None = None, user=None, groups=None,
                   caller: Caller | None = None):
        """The cited PDF page as an image with the passage highlighted (None when the original
        is not a PDF or was not kept: show `cited_context` instead)."""
        doc = self.accessible_document(citation.kb_id, citation.doc_id, user, groups, caller)
        path = Path(doc.stored_path) if doc.stored_path else None
        if path is None or path.suffix.lower() != ".pdf" or not path.exists():
            return None
        from .citation_view import best_page

        # The snippet is what the answer took from the passage (the sentences, extractive
        # mode) or the whole passage (LLM mode): highlight exactly that.
        chunk = self._cited_chunk(citation)
        passage = citation.snippet or chunk.text
        span = (chunk.page_start, max(chunk.page_end, chunk.page_start))
        if page is None:
            page = best_page(path, *span, passage)
        return replace(self.page_cache.get(path, page, passage, ocr=self.settings.ocr), span=span)

    def cited_context(self, citation: Citation, user=None, groups=None,
                      caller: Caller | None = None) -> list[tuple[str, bool]]:
        """The cited text inside the passages around it, as (text, is_cited) segments, for
        sources without page images: three chunks fetched by id, never the whole document."""
        from .citation_view import highlight_in_context

        self.accessible_document(citation.kb_id, citation.doc_id, user, groups, caller)
        prefix, _, ordinal = citation.chunk_id.rpartition("#")
        n = int(ordinal) if ordinal.isdigit() else None
        ids = [f"{prefix}#{i}" for i in (n - 1, n, n + 1)] if n is not None else [citation.chunk_id]
        got = {c.chunk_id: c for c in self.store.get_chunks(ids)}
        if citation.chunk_id not in got:
            raise NotFound("that passage is no longer indexed")
        prev, cur, nxt = (got.get(i) for i in ids) if n is not None else (None, got[citation.chunk_id], None)
        return highlight_in_context(prev, cur, nxt, citation.snippet)

    def _cited_chunk(self, citation: Citation) -> Chunk:
        chunks = self.store.get_chunks([citation.chunk_id])
        if not chunks:
            raise NotFound("that passage is no longer indexed")
        return chunks[0]

    # ---- search ----------------------------------------------------------------------
    @cached_property
    def reranker(self):
        # RAG_RERANKER=llm scores with the configured chat model (it was never passed before,
        # so every retrieval failed with "needs an LLM").
        chat = self.chat_model if self.settings.reranker == "llm" else None
        return make_reranker(self.settings, self.store, chat)

    @cached_property
    def retrieval(self) -> RetrievalPipeline:
        return RetrievalPipeline(self.store, self.embedder, self.reranker, find_document=self.find_document)

    def caller(self, user: str | None = None, groups: list[str] | None = None, tenant: str | None = None,
               caller: Caller | None = None) -> Caller:
        """Who is asking: an explicit Caller, else --user/--groups (or RAG_USER/RAG_GROUPS);
        with no identity at all, the operator (sees everything)."""
        if caller is not None:
            return caller
        return Caller.of(user if user is not None else self.settings.user,
                         groups if groups is not None else self.settings.group_list,
                         tenant if tenant is not None else self.settings.tenant)

    def filters_for(self, kbs: list[KnowledgeBase], user: str | None = None, groups: list[str] | None = None,
                    caller: Caller | None = None) -> SearchFilters:
        """The policy's filters for this caller over these knowledge bases (rag_core/access.py)."""
        return access.search_filters(self.caller(user, groups, caller=caller), kbs)

    def find_document(self, name: str, filters: SearchFilters) -> tuple[str, str] | None:
        """The document a lookup request names ("the biography file"), if the caller may see it:
        the best match of the name's words against file names and titles."""
        wanted = set(analyze(name)) - _GENERIC
        if not wanted:
            return None
        best, best_score = None, 0.0
        for kb_id in filters.kb_ids or []:
            for doc in self.appdb.list_documents(kb_id):
                if not _visible(doc, filters):
                    continue
                have = set(analyze(f"{doc.source} {doc.title}"))
                score = len(wanted & have) / len(wanted)
                if score > best_score:
                    best, best_score = (kb_id, doc.doc_id), score
        return best if best_score >= 0.6 else None

    def retriever(self, kb_names: list[str], user: str | None = None, groups: list[str] | None = None,
                  caller: Caller | None = None):
        """A LangChain retriever over the given knowledge bases for this identity."""
        from .retrieval.retriever import GroundworkRetriever

        kbs = self.resolve_kbs(kb_names, caller)
        return GroundworkRetriever(
            pipeline=self.retrieval, filters=self.filters_for(kbs, user, groups, caller), settings=merged_settings(kbs)
        )

    def search(
        self,
        kb_names: list[str],
        query: str,
        k: int | None = None,
        mode: str = "hybrid",
        rerank: bool | None = None,
        alpha: float | None = None,
        fusion: str | None = None,
        user: str | None = None,
        groups: list[str] | None = None,
        caller: Caller | None = None,
    ) -> Retrieved:
        """Retrieval with the selected knowledge bases' merged settings (retrieval/settings.py; overridable here)."""
        kbs = self.resolve_kbs(kb_names, caller)
        rs = merged_settings(kbs)
        if alpha is not None:
            rs.alpha = alpha
        if fusion is not None:
            rs.fusion = fusion
        return self.retrieval.run(query, self.filters_for(kbs, user, groups, caller), rs, mode=mode, rerank=rerank, k=k)

    # ---- answers ---------------------------------------------------------------------
    @cached_property
    def chat_model(self):
        return make_chat_model(self.settings)

    @cached_property
    def answers(self):
        from .generation.chain import AnswerEngine
        from .generation.tracing import make_callbacks

        return AnswerEngine(self.retrieval, self.embedder, self.store, self.settings, chat=self.chat_model,
                            callbacks=make_callbacks(self.settings.trace))

    def answer_request(self, kb_names: list[str], question: str, history=None, user=None, groups=None,
                       doc_ids: list[str] | None = None, caller: Caller | None = None):
        """`doc_ids` scopes the question to chosen documents of these knowledge bases (the store
        applies it inside the query, like the ACL)."""
        from .generation.chain import AnswerRequest

        kbs = self.resolve_kbs(kb_names, caller)
        filters = self.filters_for(kbs, user, groups, caller)
        filters.doc_ids = list(doc_ids) if doc_ids else None
        return AnswerRequest(question=question, kbs=kbs, filters=filters, history=list(history or []))

    def ask(self, kb_names: list[str], question: str, history=None, user=None, groups=None,
            caller: Caller | None = None):
        """One verified Answer (DESIGN.md §3)."""
        return self.answers.answer(self.answer_request(kb_names, question, history, user, groups, caller=caller))

    # ---- scale-out ---------------------------------------------------------------------
    def migrate_to(self, target, progress=None, target_key: str | None = None, restart: bool = False) -> dict:
        """Copy every indexed document's chunks and stored vectors into another store
        (e.g. Weaviate) without re-embedding. The registry (SQLite) is shared, so after
        this the app can switch RAG_STORE and find everything in place.

        Resumable: with `target_key` (the target's address), each document is recorded here
        once the target has acknowledged all its chunks, and a rerun after an interruption
        skips those. A document cut off mid-copy is replaced whole on the rerun (its objects
        have fixed ids, so nothing is duplicated); none is recorded before it is complete,
        so nothing is missed. `restart` copies everything again."""
        if target_key and restart:
            self.appdb.forget_migration(target_key)
        done = self.appdb.migrated(target_key) if target_key else set()
        docs = chunks = skipped = 0
        kbs = self.list_kbs()
        for kb in kbs:
            for doc in self.appdb.list_documents(kb.kb_id, status="indexed"):  # with their vectors
                if (kb.kb_id, doc.doc_id) in done:
                    skipped += 1
                    continue
                cs = self.store.document_chunks(kb.kb_id, doc.doc_id)
                vecs = self.store.vectors_for([c.chunk_id for c in cs])
                target.delete_document(kb.kb_id, doc.doc_id)
                target.add_chunks(cs, vecs)
                if target_key:
                    self.appdb.mark_migrated(target_key, kb.kb_id, doc.doc_id, len(cs))
                docs += 1
                chunks += len(cs)
                if progress:
                    progress(docs)
        return {"knowledge_bases": len(kbs), "documents": docs, "chunks": chunks, "skipped_already_copied": skipped}

    def close(self) -> None:
        if "job_runner" in self.__dict__:
            self.job_runner.stop()
        self.store.close()
        self.db.close()


_GENERIC = set(analyze("file document doc pdf docx report paper page the whole full entire complete"))


def _visible(doc: Document, f: SearchFilters) -> bool:
    """A document is visible when its knowledge base passed the policy (f.kb_ids) and, for a
    question scoped to chosen documents, it is one of them."""
    if f.kb_ids is not None and doc.kb_id not in f.kb_ids:
        return False
    return f.doc_ids is None or doc.doc_id in f.doc_ids
