"""The facade the CLI and the Streamlit pages call: one data folder, its database, store,
embedder and ingestor, created once and reused (the app caches a Workspace per data dir)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from . import access
from .access import Caller, PermissionDenied
from .appdb import AppDB
from .config import Settings, get_settings
from .db import Database
from .embeddings import get_embedder
from .feedback import FeedbackLog
from .errors import InputError, NotFound
from .ingest.pipeline import IngestStats, Ingestor, delete_document
from .privacy import LOG_LEVELS
from .models import Chunk, Citation, Document, KnowledgeBase, RetrievalSettings, SearchFilters
from .process import bound_malloc_arenas
from .reader import LEGACY_ANSWERS, answers_calibration
from .generation.llm import make_chat_model
from .retrieval.factory import make_reranker
from .retrieval.pipeline import RetrievalPipeline, Retrieved
from .retrieval.settings import merged_settings
from .text.analysis import analyze
from .stores import make_store


class Workspace:
    def __init__(self, settings: Settings | None = None):
        bound_malloc_arenas()  # a long-running process: see rag_core/process.py
        self.settings = settings or get_settings()
        self.db = Database(self.settings.db_path)
        self.appdb = AppDB(self.db, lease_seconds=self.settings.lease_seconds)
        self.store = make_store(self.settings, self.db)
        # a delete a killed process began is finished before anything is read (its chunks may
        # still be in the store): cheap, one query when there is none
        from .ingest.pipeline import finish_deletes

        finish_deletes(self.appdb, self.store)
        now = answers_calibration()
        self.feedback = FeedbackLog(self.db, answers_scale=((now.a, now.b), (LEGACY_ANSWERS.a, LEGACY_ANSWERS.b)))
        self._backfill_dates()
        self._backfill_languages()
        self._purged_at = 0.0
        self._catalogues: dict[str, tuple] = {}  # kb_id -> (content version, documents, catalogue entries)
        # the tables retention's deletes reach (learnt records cascade, thread links are cut)
        self.signals  # noqa: B018
        self.threads  # noqa: B018
        self.purge_expired()

    def purge_expired(self) -> int:
        """Delete logged questions past their knowledge bases' retention (rag_core/privacy.py)."""
        from .privacy import purge_expired

        self._purged_at = time.time()
        return purge_expired(self.db, {kb.kb_id: kb.retention_days for kb in self.appdb.list_kbs()},
                             everything=self.settings.query_log_retention_days)

    def _maybe_purge(self) -> None:
        from .privacy import PURGE_EVERY_S

        if time.time() - self._purged_at > PURGE_EVERY_S:
            self.purge_expired()

    def _backfill_dates(self) -> None:
        """Data folders from before document dates: each document's chunks get its date (the
        upload day) once, so date filters find them."""
        if self.appdb.get_meta("doc_dates") == "1":
            return
        for kb in self.appdb.list_kbs():
            for doc in self.appdb.list_documents(kb.kb_id):
                self.store.set_document_date(kb.kb_id, doc.doc_id, doc.doc_day)
        self.appdb.set_meta("doc_dates", "1")

    def _backfill_languages(self) -> None:
        """Documents from before languages: each gets its detected language once; one that is
        not English is re-indexed in it (its keyword terms were English stems), atomically and
        with its vectors kept. English documents' index is already right and is left alone."""
        from .text.language import document_language

        for doc in self.appdb.documents_without_language():
            chunks = self.store.document_chunks(doc.kb_id, doc.doc_id)
            lang = document_language([c.text for c in chunks[:40]]) or "en"
            if lang != "en":
                self.store.reanalyse_document(doc.kb_id, doc.doc_id, lang)
            self.appdb.set_document_language(doc.kb_id, doc.doc_id, lang, "detected")

    def search_filters(self, kbs: list[KnowledgeBase], doc_ids: list[str] | None = None, *,
                       caller: Caller, include_drafts: bool = False) -> SearchFilters:
        """The caller's filters (rag_core/access.py) plus the languages of the documents
        searched, which the keyword side reads the question in, and the owners' marks: draft
        documents left out unless asked for, trusted ones to rank higher (retrieval/trust.py)."""
        f = access.search_filters(caller, kbs, doc_ids)
        marks = self.appdb.trust_marks(f.kb_ids or [])
        return replace(f, languages=self.appdb.languages(f.kb_ids or []), trusted_docs=frozenset(marks["trusted"]),
                       exclude_docs=() if include_drafts else tuple(marks["draft"]))

    def set_document_trust(self, kb_name: str, doc_id: str, trust: str, *, caller: Caller) -> Document:
        """An owner's mark on a document (owners and admins): trusted, normal or draft. It
        applies to the next question (the knowledge base's content version moves, so no cached
        answer made before it is served)."""
        from .models import TRUST_LEVELS

        if trust not in TRUST_LEVELS:
            raise InputError(f"trust must be one of {', '.join(TRUST_LEVELS)}")
        kb = self.writable_kb(kb_name, caller=caller)
        doc = self.appdb.get_document(kb.kb_id, doc_id)
        if doc is None or doc.status not in ("indexed", "searchable"):
            raise NotFound("no such document in this knowledge base")
        self.appdb.set_document_trust(kb.kb_id, doc_id, trust)
        doc.trust = trust
        return doc

    def set_document_language(self, kb_name: str, doc_id: str, language: str, *, caller: Caller) -> Document:
        """An owner's correction of a document's language: the registry and its keyword index."""
        from .ingest.pipeline import check_language

        kb = self.writable_kb(kb_name, caller=caller)
        doc = self.appdb.get_document(kb.kb_id, doc_id)
        if doc is None or doc.status not in ("indexed", "searchable"):
            raise NotFound("no such document in this knowledge base")
        doc.language, doc.language_source = check_language(language), "set"
        self.store.reanalyse_document(kb.kb_id, doc_id, doc.language)
        self.appdb.set_document_language(kb.kb_id, doc_id, doc.language, "set")
        return doc

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
                "configured; run `python -m rag_core reembed` to re-embed it with the new model (searchable "
                "by keywords meanwhile), or set the embedding settings back"
            )
        return emb

    def reembed(self, *, caller: Caller, progress=None, cancel=None) -> dict:
        """Re-embed every document with the configured embedding model (admins), after a model
        change. First every document's vectors are dropped and it is marked 'searchable' (found
        by its keywords, not by vectors in another model's space); then the usual vector phase
        computes the new ones, a document turning 'indexed' as it completes. Resumable: run it
        again after an interruption and it goes on where it stopped (the two meta keys say how
        far it got); the background job runner also finishes what is 'searchable'."""
        if not caller.admin:
            raise PermissionDenied("only admins may re-embed the data folder")
        emb = get_embedder(self.settings)
        model = getattr(emb, "model_id", "unknown")
        recorded, target = self.appdb.get_meta("embedding_model"), self.appdb.get_meta("reembed_to")
        if recorded == model and target is None:
            return {"model": model, "changed": False, "chunks": 0}
        dim = self.store.vector_dim()
        if dim and target != model:
            probe = emb.embed_array(["dimension probe"])
            if probe.shape[1] != dim:
                raise InputError(
                    f"'{model}' makes {probe.shape[1]}-dimensional vectors and this data folder holds {dim}-dimensional "
                    "ones: use a new RAG_DATA_DIR and ingest again (a store's vector index has one size)")
        if self.appdb.get_meta("reembed_cleared") != model:
            self.appdb.set_meta("reembed_to", model)
            self.appdb.set_meta("embedding_model", model)
            for kb in self.appdb.list_kbs():
                for doc in self.appdb.list_documents(kb.kb_id, status="indexed"):
                    self.store.clear_vectors(kb.kb_id, doc.doc_id)
                    self.appdb.mark_searchable(kb.kb_id, doc.doc_id, doc.chunks)
            self.appdb.set_meta("reembed_cleared", model)
        # the check in `embedder` passes now (the folder records the new model): rebuild what holds one
        for name in ("embedder", "ingestor"):
            self.__dict__.pop(name, None)
        done = self.ingestor.fill_vectors(progress=progress, cancel=cancel)
        self.appdb.delete_meta("reembed_to")
        self.appdb.delete_meta("reembed_cleared")
        return {"model": model, "changed": True, "chunks": done}

    @cached_property
    def ingestor(self) -> Ingestor:
        return Ingestor(self.settings, self.appdb, self.store, self.embedder, summarize=self._summarizer())

    def _summarizer(self):
        """One line on what a document is, written by the fast model at ingest (None offline)."""
        if not self.settings.describes_documents:
            return None
        from .generation.prompts import DESCRIBE_PROMPT

        model = self.fast_chat_model or self.chat_model
        if model is None:
            return None
        return lambda text: model.invoke(DESCRIBE_PROMPT.format(text=text)).content

    # ---- identity --------------------------------------------------------------------
    # Every public method below takes `caller` (keyword-only, no default): the edge (CLI, page,
    # API) resolves who is asking once and says so; nothing here falls back to the operator.
    # tests/test_access_matrix.py enumerates these methods and fails on one without it.

    def _kb(self, name_or_id: str, caller: Caller) -> KnowledgeBase:
        """The knowledge base this caller means: among those it may see, by id or by name
        (case-insensitive). Hidden and missing read the same, in the caller's own words."""
        seen = access.visible(caller, self.appdb.find_kbs(name_or_id))
        by_id = [kb for kb in seen if kb.kb_id == name_or_id]
        exact = [kb for kb in seen if kb.name == (name_or_id or "").strip()]
        found = by_id or exact or seen
        # Names are unique only among what one caller could see when creating, so another
        # user's open knowledge base may share a name with yours: yours wins, never a guess.
        owned = [kb for kb in found if access.is_owner(caller, kb)]
        found = owned or found
        if not found:
            raise access.hidden_error(name_or_id)
        if len(found) > 1:
            raise InputError(f"several knowledge bases you can see are named '{name_or_id}': use an id "
                             f"({', '.join(kb.kb_id for kb in found)})")
        return found[0]

    # ---- knowledge bases -------------------------------------------------------------
    def create_kb(self, name: str, *, caller: Caller, description: str = "", instructions: str = "",
                  grounded_only: bool = False, retrieval: RetrievalSettings | None = None,
                  acl_users: list[str] | None = None, acl_groups: list[str] | None = None,
                  owners: list[str] | None = None, tenant: str | None = None) -> KnowledgeBase:
        """A knowledge base in its creator's tenant, owned by its creator (and the co-owners
        named). Only an admin may place one in another tenant (`tenant`)."""
        if tenant is not None and (tenant or None) != caller.tenant and not caller.admin:
            raise PermissionDenied("a knowledge base is created in your own tenant")
        kb_tenant = (tenant or None) if caller.admin and tenant is not None else caller.tenant
        all_owners = sorted({*(owners or []), *([caller.user] if caller.user else [])})
        return self.appdb.create_kb(
            name, lambda kb: access.can_see(caller, kb), description=description, instructions=instructions,
            grounded_only=grounded_only, retrieval=retrieval, tenant=kb_tenant, acl_users=acl_users,
            acl_groups=acl_groups, owners=all_owners)

    def update_kb(self, name_or_id: str, *, caller: Caller, **changes) -> KnowledgeBase:
        """Change a knowledge base (owners and admins). Access edits apply at once, to the
        documents already in it too: the policy reads the knowledge base at every question."""
        kb = self.writable_kb(name_or_id, caller=caller)
        allowed = {"name", "description", "instructions", "grounded_only", "retrieval", "acl_users", "acl_groups",
                   "owners", "retention_days", "query_log"}
        if caller.admin:
            allowed.add("tenant")  # moving a knowledge base between tenants is an admin's call
        unknown = set(changes) - allowed
        if unknown:
            raise PermissionDenied(f"cannot change {', '.join(sorted(unknown))} here")
        new = replace(kb, **changes)
        if new.retention_days < 0:
            raise InputError("retention is a number of days ≥ 0 (0 = keep until deleted)")
        if new.query_log and new.query_log not in LOG_LEVELS:
            raise InputError("query log is one of full, anonymous, off (or empty: the deployment's setting)")
        if new.owners != kb.owners and not new.owners and not caller.admin:
            raise InputError("a knowledge base keeps at least one owner")
        self.appdb.update_kb(new, lambda other: access.can_see(caller, other))
        return new

    def list_kbs(self, *, caller: Caller) -> list[KnowledgeBase]:
        """The knowledge bases `caller` may see."""
        return access.visible(caller, self.appdb.list_kbs())

    def get_kb(self, name_or_id: str, *, caller: Caller) -> KnowledgeBase:
        return self._kb(name_or_id, caller)

    def can_write(self, name_or_id: str, *, caller: Caller) -> bool:
        """Whether the caller may change this knowledge base (pages show or hide controls)."""
        return access.can_write(caller, self._kb(name_or_id, caller))

    def writable_kb(self, name_or_id: str, *, caller: Caller) -> KnowledgeBase:
        """The knowledge base, if the caller may change it: NotFound when hidden or missing,
        PermissionDenied for a reader."""
        return access.require_write(caller, self._kb(name_or_id, caller), name_or_id)

    def kb_counts(self, name_or_id: str, *, caller: Caller) -> tuple[int, int]:
        """(documents, chunks) searchable in the knowledge base."""
        return self.appdb.counts(self._kb(name_or_id, caller).kb_id)

    def resolve_kbs(self, kb_names: list[str], *, caller: Caller) -> list[KnowledgeBase]:
        """The named knowledge bases; one the caller may not see is reported exactly like one
        that does not exist (its name is not leaked)."""
        kbs = [self._kb(n, caller) for n in kb_names]
        if not kbs:
            raise InputError("select at least one knowledge base")
        return kbs

    def delete_kb(self, name_or_id: str, *, caller: Caller) -> None:
        kb = self.writable_kb(name_or_id, caller=caller)
        self.store.delete_kb(kb.kb_id)
        from .ingest.pipeline import remove_original

        for doc in self.appdb.list_documents(kb.kb_id, status=None):
            remove_original(doc)
        self.appdb.delete_kb_row(kb.kb_id)

    def last_kbs(self, *, caller: Caller) -> list[str]:
        """The knowledge bases this caller last chose (names it can still see)."""
        saved = (self.appdb.get_meta(_last_kbs_key(caller.user)) or "").split("\n")
        names = {kb.name for kb in self.list_kbs(caller=caller)}
        return [n for n in saved if n in names]

    def remember_kbs(self, names: list[str], *, caller: Caller) -> None:
        self.appdb.set_meta(_last_kbs_key(caller.user), "\n".join(names))

    # ---- conversations and feedback ------------------------------------------------------
    @cached_property
    def threads(self):
        from .threads import ThreadStore

        return ThreadStore(self.db)

    def conversations(self, *, caller: Caller):
        """This caller's saved conversations (nobody else's can be named or opened)."""
        from .threads import UserThreads

        return UserThreads(self.threads, caller.user)

    @cached_property
    def api_keys(self):
        """Keys for the HTTP API (every method takes `by=`, the caller managing them)."""
        from .api_keys import ApiKeys

        return ApiKeys(self.db)

    def feedback_for(self, *, caller: Caller):
        """The query log and feedback as this caller may use them: log and rate their own
        answers; analytics over their own answers (admins: everyone's) in knowledge bases they
        can see."""
        from .feedback import CallerFeedback

        self._maybe_purge()
        return CallerFeedback(self.feedback, caller, {kb.kb_id: kb.name for kb in self.list_kbs(caller=caller)},
                              on_rated=self._rated, level_of=self._query_log_level,
                              on_logged=self.alerts.maybe_check)

    def query_log_notice(self, *, caller: Caller) -> list[str]:
        """What Analytics can show under the query-log levels in force, over the knowledge bases
        this caller can see (privacy.log_notice)."""
        from .privacy import log_notice

        return log_notice(self.settings.query_log, self.list_kbs(caller=caller))

    def _query_log_level(self, kb_ids: list[str]) -> str:
        """What the query log keeps of a question asked in these knowledge bases (privacy.py)."""
        from .privacy import log_level

        return log_level(self.settings.query_log, [kb.query_log for k in kb_ids if (kb := self.appdb.find_kb(k))])

    def _rated(self, query_id: str, rating: int, reason: str | None) -> None:
        """After a rating: retrieval learns from it, and an answer rated wrong (or not in the
        documents) leaves the answer cache for everyone it would be served to."""
        from .answer_cache import EVICTING_REASONS

        self.signals.learn(query_id, rating, reason)
        self.alerts.maybe_check()
        if rating == -1 and reason in EVICTING_REASONS:
            row = self.db.query_one("SELECT answer FROM queries WHERE query_id=?", (query_id,))
            if row is not None:
                self.answer_cache.evict_answer(row["answer"])

    def gap_report(self, frame=None, *, caller: Caller) -> dict:
        """What the knowledge bases are missing (rag_core/gaps.py), over the analytics frame this
        caller may see (its own questions; an admin: everyone's) or the slice of it given."""
        from .gaps import follow_ups, gap_topics, precision_estimate

        df = self.feedback_for(caller=caller).frame() if frame is None else frame
        topics = gap_topics(df, embed=self.embedder.embed_array)
        return {"topics": topics, "precision": precision_estimate(df), "follow_ups": follow_ups(df, topics)}

    # ---- privacy (rag_core/privacy.py) ----------------------------------------------------
    def delete_my_questions(self, *, caller: Caller) -> int:
        """The caller's own logged questions, with their feedback and what it taught."""
        from .privacy import delete_user_questions

        return delete_user_questions(self.db, caller.user)

    def export_user_data(self, user: str | None, *, caller: Caller) -> dict:
        """Everything stored about `user` (their own, or any user's for an admin)."""
        from .privacy import export_user

        if not caller.admin and user != caller.user:
            raise PermissionDenied("only an admin may export another user's data")
        return export_user(self.db, self.threads, user)

    def erase_user_data(self, user: str | None, *, caller: Caller) -> dict:
        """An admin erases a user's log, feedback, learnt records and conversations."""
        from .privacy import erase_user

        if not caller.admin:
            raise PermissionDenied("only an admin may erase a user's data")
        erased = erase_user(self.db, self.threads, user)
        self.appdb.delete_meta(_last_kbs_key(user))
        return erased

    @cached_property
    def signals(self):
        """What retrieval learns from ratings (retrieval/feedback_signals.py)."""
        from .retrieval.feedback_signals import FeedbackSignals

        return FeedbackSignals(self.db, embed=lambda text: self.embedder.embed_array([text])[0])

    def feedback_signals(self, *, caller: Caller) -> list:
        """The learning records of the knowledge bases this caller owns (admins: all they see),
        newest first, for review."""
        kbs = [kb.kb_id for kb in self.list_kbs(caller=caller) if caller.admin or access.is_owner(caller, kb)]
        return self.signals.list(kbs)

    def revert_feedback(self, *, caller: Caller, signal_id: int | None = None, kb_name: str | None = None) -> int:
        """An admin undoes what feedback taught: one record, or all of a knowledge base's."""
        if not caller.admin:
            raise PermissionDenied("only an admin may revert what feedback taught")
        who = caller.user or "operator"
        if kb_name is not None:
            return self.signals.revert_kb(self._kb(kb_name, caller).kb_id, who)
        if signal_id is None:
            raise InputError("name a record or a knowledge base")
        return int(self.signals.revert(signal_id, who))

    # ---- background ingestion ----------------------------------------------------------
    @cached_property
    def jobs(self):
        from .ingest.jobs import JobQueue

        return JobQueue(self.db, self.settings.data_dir / "uploads")

    @cached_property
    def job_runner(self):
        from .ingest.jobs import JobRunner

        return JobRunner(self.jobs, lambda: self.ingestor, self.appdb, self.store, self.appdb.get_kb)

    def start_worker(self) -> None:
        """Start the background ingestion worker (resumes jobs a previous run left queued)."""
        self.job_runner.start()

    def submit_upload(self, kb_name: str, files: list[tuple[str, bytes]], *, caller: Caller) -> str:
        """Queue uploaded files for the background worker (owners and admins); returns the job
        id at once."""
        kb = self.writable_kb(kb_name, caller=caller)
        job_id = self.jobs.submit(kb.kb_id, files, caller.user)
        self._wake_worker()
        return job_id

    def _job(self, job_id: str, caller: Caller):
        """A job of this caller (admins: anyone's) whose knowledge base it may still change."""
        try:
            job = self.jobs.get(job_id)
        except NotFound:
            job = None
        if job is None or not (caller.admin or job.user == caller.user):
            raise NotFound("no such ingestion job")
        kb = self.appdb.find_kb(job.kb_id)
        if kb is None or not access.can_write(caller, kb):
            raise NotFound("no such ingestion job")
        return job

    def list_jobs(self, kb_name: str, *, caller: Caller, limit: int = 5) -> list:
        """The caller's own upload jobs in this knowledge base (admins: everyone's)."""
        kb = self._kb(kb_name, caller)
        if not access.can_write(caller, kb):
            return []
        return self.jobs.list(kb.kb_id, limit=limit, user=caller.user, all_users=caller.admin)

    def job(self, job_id: str, *, caller: Caller):
        return self._job(job_id, caller)

    def cancel_job(self, job_id: str, *, caller: Caller) -> None:
        self.jobs.cancel(self._job(job_id, caller).job_id)

    def retry_with_password(self, job_id: str, name: str, password: str, *, caller: Caller) -> str:
        """Open an encrypted PDF that an upload could not read: a new job, password in memory only."""
        job = self._job(job_id, caller)
        new_id = self.jobs.retry_locked(job.job_id, name, password, caller.user)
        self._wake_worker()
        return new_id

    def _wake_worker(self) -> None:
        self.job_runner.start()
        self.job_runner.wake()

    def indexing_progress(self, kb_names: list[str], *, caller: Caller) -> float | None:
        """Share of the selected knowledge bases' chunks that have their vectors, while some
        do not (None when everything is indexed): answers may still improve."""
        waiting, total = self.appdb.vector_progress([kb.kb_id for kb in self.resolve_kbs(kb_names, caller=caller)])
        return None if waiting == 0 or total == 0 else 1 - waiting / total

    # ---- documents -------------------------------------------------------------------
    def ingest(self, kb_name: str, paths: list[Path], *, caller: Caller, **kw) -> IngestStats:
        """Add files to a knowledge base now (owners and admins)."""
        kb = self.writable_kb(kb_name, caller=caller)
        return self.ingestor.ingest(kb, paths, **kw)

    def ingest_url(self, kb_name: str, url: str, *, caller: Caller, max_pages: int = 50) -> IngestStats:
        """Add a web page, or the pages its sitemap lists, to a knowledge base (owners and
        admins; ingest/web.py): each page's main text, its URL as the source and the day it was
        fetched as its date. Fetching a URL again replaces a page whose text changed. Pages
        that could not be fetched or read are in the report with the reason."""
        import tempfile

        from .ingest.web import fetch
        from .models import FileReport

        kb = self.writable_kb(kb_name, caller=caller)  # checked before anything is fetched
        if not (1 <= max_pages <= 1000):
            raise InputError("max_pages is 1 to 1000")
        got = fetch(url, max_pages=max_pages, allow_private=self.settings.url_allow_private,
                    max_bytes=self.settings.max_file_mb * 1024 * 1024)
        stats = IngestStats()
        with tempfile.TemporaryDirectory(prefix="gw-web-") as tmp:
            names = {}
            for i, page in enumerate(got.pages):
                p = Path(tmp) / f"page-{i:04d}.md"
                p.write_text(f"# {page.title}\n\n{page.markdown}\n", encoding="utf-8")
                names[p] = page.url
            if names:  # fetch() dates every page of one call with the same day
                stats = self.ingestor.ingest(kb, list(names), display_names=names, date=got.pages[0].fetched)
        stats.files += len(got.skipped)
        stats.reports += [FileReport(file=u, status="failed", reason=why) for u, why in got.skipped]
        return stats

    def fill_vectors(self, kb_name: str, *, caller: Caller, **kw) -> int:
        """Compute the vectors still missing in a knowledge base (owners and admins)."""
        kb = self.writable_kb(kb_name, caller=caller)
        return self.ingestor.fill_vectors(kb.kb_id, **kw)

    def list_documents(self, kb_name: str, *, caller: Caller, status: str | None = "visible") -> list[Document]:
        """The documents of a knowledge base the caller may see ('visible': searchable ones;
        other states only for those who may change it)."""
        kb = self._kb(kb_name, caller)
        if status != "visible" and not access.can_write(caller, kb):
            status = "visible"
        return self.appdb.list_documents(kb.kb_id, status=status)

    def delete_document(self, kb_name: str, doc_id: str, *, caller: Caller) -> bool:
        """Remove a document everywhere (owners and admins); False when there is none."""
        kb = self.writable_kb(kb_name, caller=caller)
        return delete_document(self.appdb, self.store, kb.kb_id, doc_id)

    def set_document_date(self, kb_name: str, doc_id: str, date: str, *, caller: Caller) -> Document:
        """Change a document's date (owners and admins): the registry and every chunk of it,
        so date filters and recency see the new date at once."""
        from .ingest.pipeline import check_date

        kb = self.writable_kb(kb_name, caller=caller)
        doc = self.appdb.get_document(kb.kb_id, doc_id)
        if doc is None or doc.status not in ("indexed", "searchable"):
            raise NotFound("no such document in this knowledge base")
        doc.date, doc.date_source = check_date(date), "set"
        self.appdb.set_document_date(kb.kb_id, doc_id, doc.date, "set")
        self.store.set_document_date(kb.kb_id, doc_id, doc.doc_day)
        return doc

    def accessible_document(self, kb_id: str, doc_id: str, *, caller: Caller) -> Document:
        """The indexed document, if this caller may see it; NotFound otherwise (the same
        answer for "does not exist" and "not yours", so access cannot be probed)."""
        kb = self.appdb.find_kb(kb_id)
        doc = self.appdb.get_document(kb_id, doc_id) if kb else None
        if doc is None or doc.status not in ("indexed", "searchable") or not access.can_see(caller, kb):
            raise NotFound("that document is not available")
        return doc

    def original_bytes(self, kb_id: str, doc_id: str, *, caller: Caller) -> bytes:
        """The uploaded file, read only when asked for (the download button calls this on click)."""
        doc = self.accessible_document(kb_id, doc_id, caller=caller)
        if not doc.stored_path or not Path(doc.stored_path).exists():
            raise NotFound(f"the original of {doc.source} was not kept")
        return Path(doc.stored_path).read_bytes()

    def chunks(self, kb_name: str, *, caller: Caller) -> list[Chunk]:
        """Every chunk of a knowledge base the caller may see, in document order."""
        kb = self._kb(kb_name, caller)
        out: list[Chunk] = []
        for doc in self.appdb.list_documents(kb.kb_id):
            out.extend(self.store.document_chunks(kb.kb_id, doc.doc_id))
        return out

    @cached_property
    def page_cache(self):
        from .citation_view import PageCache

        return PageCache()

    def thread_kbs(self, thread_id: str, *, caller: Caller) -> list[str]:
        """The knowledge bases a conversation's last question was asked of, by name, those the
        caller may still see: opening the conversation selects them again (issue 50)."""
        asked = [m["query_id"] for m in self.conversations(caller=caller).messages(thread_id) if m.get("query_id")]
        ids = self.feedback_for(caller=caller).kb_ids_of(asked[-1]) if asked else []
        return [kb.name for kb in self.list_kbs(caller=caller) if kb.kb_id in ids]

    def cited_page(self, citation: Citation, page: int | None = None, *, caller: Caller):
        """The cited PDF page as an image with the passage highlighted (None when the original
        is not a PDF or was not kept: show `cited_context` instead)."""
        doc = self.accessible_document(citation.kb_id, citation.doc_id, caller=caller)
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
            # the page the citation names ("p. 9"), placed by the words that cite it
            # (record.place_pages): the viewer opens that one, not another guess of its own
            page = citation.page if span[0] <= (citation.page or 0) <= span[1] else best_page(path, *span, passage)
        return replace(self.page_cache.get(path, page, passage, ocr=self.settings.ocr), span=span)

    def cited_context(self, citation: Citation, *, caller: Caller) -> list[tuple[str, bool]]:
        """The cited text inside the passages around it, as (text, is_cited) segments, for
        sources without page images: three chunks fetched by id, never the whole document."""
        from .citation_view import highlight_in_context
        from .stores.adjacent import neighbours

        self.accessible_document(citation.kb_id, citation.doc_id, caller=caller)
        cur = next((c for c in self.store.get_chunks([citation.chunk_id]) if c.doc_id == citation.doc_id), None)
        if cur is None:
            raise NotFound("that passage is no longer indexed")
        prev, nxt = neighbours(self.store, cur)
        return highlight_in_context(prev, cur, nxt, citation.snippet)

    def cited_code(self, citation: Citation, *, caller: Caller) -> tuple[str, str] | None:
        """(language, code) of a citation into a source-code file: the cited definition's
        code as written, for a view that colours it; None when the source is not code."""
        from .text.source_code import code_part, language_of_mime

        doc = self.accessible_document(citation.kb_id, citation.doc_id, caller=caller)
        language = language_of_mime(doc.mime)
        if language is None:
            return None
        return language, code_part(self._cited_chunk(citation).text)

    def _cited_chunk(self, citation: Citation) -> Chunk:
        chunks = [c for c in self.store.get_chunks([citation.chunk_id]) if c.doc_id == citation.doc_id]
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
        return RetrievalPipeline(self.store, self.embedder, self.reranker, find_document=self._find_document,
                                 signals=self.signals, max_query_chars=self.settings.api_max_question_chars)

    def _find_document(self, name: str, filters: SearchFilters) -> tuple[str, str] | None:
        """The document a lookup request names ("the biography file"), among those the filters
        (already the caller's) let through: the best match of the name's words against file
        names and titles."""
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

    def retriever(self, kb_names: list[str], *, caller: Caller, k: int | None = None):
        """A LangChain retriever over the given knowledge bases for this caller (`k`: see
        GroundworkRetriever; outside the app, GroundworkRetriever.from_data_dir builds one)."""
        from .retrieval.retriever import GroundworkRetriever

        kbs = self.resolve_kbs(kb_names, caller=caller)
        return GroundworkRetriever(pipeline=self.retrieval, filters=self.search_filters(kbs, caller=caller),
                                   settings=merged_settings(kbs), k=k)

    def search(
        self,
        kb_names: list[str],
        query: str,
        k: int | None = None,
        mode: str = "hybrid",
        rerank: bool | None = None,
        alpha: float | None = None,
        fusion: str | None = None,
        *,
        caller: Caller,
        after: str | None = None,
        before: str | None = None,
        include_drafts: bool = False,
    ) -> Retrieved:
        """Retrieval with the selected knowledge bases' merged settings (retrieval/settings.py;
        overridable here); `after`/`before` (YYYY-MM-DD, inclusive) keep documents dated in range;
        draft documents are searched only with `include_drafts`."""
        kbs = self.resolve_kbs(kb_names, caller=caller)
        rs = merged_settings(kbs)
        if alpha is not None:
            rs.alpha = alpha
        if fusion is not None:
            rs.fusion = fusion
        filters = date_range(self.search_filters(kbs, caller=caller, include_drafts=include_drafts), after, before)
        return self.retrieval.run(query, filters, rs, mode=mode, rerank=rerank, k=k)

    # ---- answers ---------------------------------------------------------------------
    @cached_property
    def chat_model(self):
        return make_chat_model(self.settings)

    @cached_property
    def fast_chat_model(self):
        from .generation.llm import make_fast_chat_model

        return make_fast_chat_model(self.settings)

    @cached_property
    def answer_cache(self):
        from .answer_cache import AnswerCache

        return AnswerCache(self.db, self.settings.answer_cache_entries)

    @cached_property
    def answers(self):
        from .generation.chain import AnswerEngine
        from .generation.tracing import make_callbacks

        return AnswerEngine(self.retrieval, self.embedder, self.store, self.settings, chat=self.chat_model,
                            callbacks=make_callbacks(self.settings.trace), locate_page=self._page_of,
                            fast_chat=self.fast_chat_model if self.chat_model is not None else None,
                            cache=self.answer_cache)

    def _catalogue(self, kbs: list[KnowledgeBase], filters: SearchFilters, versions: dict[str, int]) -> list:
        """The documents the planner may name for this question: those of these knowledge bases
        (already the caller's) that the filters let through, searchable or indexed. Each
        knowledge base's list is read from the registry once per content version (appdb), not
        per question."""
        from .generation.planner import CatalogueEntry

        out = []
        for kb in kbs:
            got = self._catalogues.get(kb.kb_id)
            if got is None or got[0] != versions[kb.kb_id]:
                docs = self.appdb.list_documents(kb.kb_id)
                # a date is shown only where the document carries one (not its upload day)
                got = (versions[kb.kb_id], docs, [CatalogueEntry(kb.kb_id, d.doc_id, d.source, d.title,
                                                                 d.date if d.date_source != "upload" else "",
                                                                 d.language, d.chunks, trust=d.trust,
                                                                 description=d.description) for d in docs])
                self._catalogues[kb.kb_id] = got
            _, docs, entries = got
            if (filters.doc_ids is None and filters.day_range() is None and filters.tenant is None
                    and not filters.exclude_docs):
                out += entries  # the whole knowledge base is in scope: nothing to filter
            else:
                out += [e for d, e in zip(docs, entries) if _visible(d, filters)]
        return out

    def _cache_key(self, kbs: list[KnowledgeBase], filters: SearchFilters, question: str, history, route,
                   versions: dict[str, int], options=None) -> str:
        """The answer cache's key for this caller (answer_cache.py says what goes in)."""
        from dataclasses import asdict

        from .answer_cache import cache_key, normalise_question
        from .generation.policy_choice import policy_for_kbs

        ids = [kb.kb_id for kb in kbs]
        if self.chat_model is None and history:
            # offline the answer depends on the conversation only through the standalone
            # question it condenses to (generation/condense.py): "How many volcanoes?" asked
            # again later in a chat is the same question; a follow-up becomes its standalone form
            from .generation.condense import condense

            question, history = condense(question.strip(), history), []
        if history:  # a follow-up is searched as its condensed form: any record may reach it
            learnt = [list(r) for r in self.db.query(
                f"SELECT signal_id, active FROM feedback_signals WHERE kb_id IN ({','.join('?' * len(ids))}) "
                "ORDER BY signal_id", ids)] if ids else []
        else:  # only the records that can reorder this question's passages (feedback_signals.py)
            learnt = self.signals.reaching(ids, question)
        policy = policy_for_kbs(self.settings, kbs, llm=self.chat_model is not None)
        secret = {"openai_api_key", "weaviate_api_key", "data_dir", "user", "groups", "tenant"}
        return cache_key({
            "question": normalise_question(question),
            "history": [[r, t] for r, t in (history or [])],
            "route": route,
            "options": asdict(options) if options is not None else None,
            "kbs": [{**asdict(kb), "created_at": None} for kb in sorted(kbs, key=lambda k: k.kb_id)],
            "scope": {"doc_ids": sorted(filters.doc_ids) if filters.doc_ids is not None else None,
                      "after": filters.after, "before": filters.before, "tenant": filters.tenant},
            # what the caller can find there: the knowledge bases' content versions (any ingest,
            # delete, state, date, language or access change moves them) within the scope above
            "content": versions,
            "learnt": learnt,
            "settings": self.settings.model_dump(mode="json", exclude=secret),
            "models": {"embedding": getattr(self.embedder, "model_id", "?"), "reader": self.answers.reader.sha256,
                       "policy": repr(policy.params), "files": _model_files(self.settings)},
        })

    @cached_property
    def alerts(self):
        """Alert rules over the query log (rag_core/alerts.py); managed by admins (below)."""
        from .alerts import Alerts

        return Alerts(self.db, self.settings.alerts_every_s)

    def _admin(self, caller: Caller, what: str) -> None:
        if not caller.admin:
            raise PermissionDenied(f"only an admin may {what}")

    def alert_rules(self, *, caller: Caller) -> list:
        """Every alert rule, with its measure when last checked (admins)."""
        self._admin(caller, "see the alert rules")
        return self.alerts.rules()

    def add_alert_rule(self, metric: str, threshold: float, window_minutes: int = 15, webhook: str = "",
                       min_answers: int = 5, *, caller: Caller):
        """A rule that fires when `metric` over the last `window_minutes` exceeds `threshold` (admins)."""
        self._admin(caller, "set alert rules")
        return self.alerts.add(metric, threshold, window_minutes, webhook, min_answers)

    def delete_alert_rule(self, rule_id: str, *, caller: Caller) -> None:
        self._admin(caller, "delete alert rules")
        self.alerts.delete(rule_id)

    def check_alerts(self, *, caller: Caller) -> list[dict]:
        """Check every rule now: the events fired or resolved (admins)."""
        self._admin(caller, "check the alert rules")
        return self.alerts.check()

    def firing_alerts(self, *, caller: Caller) -> list:
        """The rules firing now, for Analytics' banner (admins)."""
        self._admin(caller, "see the alerts")
        return self.alerts.firing()

    def cache_stats(self, *, caller: Caller) -> dict:
        """The answer cache's entries and hits (admins: it holds every user's answers)."""
        if not caller.admin:
            raise PermissionDenied("only an admin may read the answer cache's figures")
        return self.answer_cache.stats()

    def _page_of(self, kb_id: str, doc_id: str, first: int, last: int, text: str) -> int:
        """The page of a stored PDF, among first..last, that holds most of `text` (the chain's
        citations are already the caller's: it only read passages the filters let through)."""
        doc = self.appdb.get_document(kb_id, doc_id)
        path = Path(doc.stored_path) if doc and doc.stored_path else None
        if path is None or path.suffix.lower() != ".pdf" or not path.exists():
            return first
        from .citation_view import best_page

        return best_page(path, first, last, text)

    def answer_request(self, kb_names: list[str], question: str, history=None, doc_ids: list[str] | None = None,
                       *, caller: Caller, after: str | None = None, before: str | None = None,
                       route: str | None = None, no_cache: bool = False, options=None):
        """What the answer chain runs for this caller: only knowledge bases it may see reach the
        chain (their instructions go into the prompt), and their filters. `doc_ids` scopes the
        question to chosen documents of these knowledge bases, `after`/`before` to documents
        dated in that range (the store applies both inside the query, like the access filter).
        The catalogue the planner may name is the caller's too; `route` overrides the planner
        ("search" for "search instead"); `no_cache` (or RAG_ANSWER_CACHE=false) answers afresh.
        `options` (generation.steps.AnswerOptions) are the request's own settings; its
        `kb_weights` are keyed by knowledge-base name or id here, and only those in the request
        count (a weight on any other reads as an unknown knowledge base)."""
        from dataclasses import replace as _replace

        from .generation.chain import AnswerRequest
        from .generation.planner import ROUTES
        from .generation.steps import AnswerOptions

        if route is not None and route not in ROUTES:
            raise InputError(f"route must be one of {', '.join(ROUTES)}")
        kbs = self.resolve_kbs(kb_names, caller=caller)
        options = options or AnswerOptions()
        if options.kb_weights:
            by_name = {**{kb.name.casefold(): kb.kb_id for kb in kbs}, **{kb.kb_id.casefold(): kb.kb_id for kb in kbs}}
            unknown = [k for k in options.kb_weights if k.casefold() not in by_name]
            if unknown:
                raise InputError(f"kb_weights names a knowledge base not in this request: {', '.join(unknown)}")
            if any(not (0 <= w <= 100) for w in options.kb_weights.values()):
                raise InputError("kb_weights are numbers from 0 (leave out) to 100")
            options = _replace(options, kb_weights={by_name[k.casefold()]: float(w) for k, w in options.kb_weights.items()})
        if options.grounded_only:  # a request may ask for grounded-only; it never relaxes an owner's
            kbs = [_replace(kb, grounded_only=True) for kb in kbs]
        filters = date_range(self.search_filters(kbs, doc_ids, caller=caller, include_drafts=options.include_drafts),
                             after, before)
        history = list(history or [])
        versions = self.appdb.content_versions([kb.kb_id for kb in kbs])  # read once: catalogue and key agree
        catalogue = self._catalogue(kbs, filters, versions)
        key = None
        # nothing the person asked is written where the query log is off: not the cache either
        if self.settings.answer_cache and not no_cache and kbs and self._query_log_level([kb.kb_id for kb in kbs]) != "off":
            key = self._cache_key(kbs, filters, question, history, route, versions, options)
        return AnswerRequest(question=question, kbs=kbs, filters=filters, history=history, catalogue=catalogue,
                             route=route, cache_key=key, options=options)

    def ask(self, kb_names: list[str], question: str, history=None, doc_ids: list[str] | None = None,
            *, caller: Caller, after: str | None = None, before: str | None = None,
            route: str | None = None, no_cache: bool = False, options=None):
        """One verified Answer (DESIGN.md §3)."""
        return self.answers.answer(self.answer_request(kb_names, question, history, doc_ids, caller=caller,
                                                       after=after, before=before, route=route, no_cache=no_cache,
                                                       options=options))

    # ---- the answer policy -------------------------------------------------------------
    def answer_policy(self, *, caller: Caller, kb_names: list[str] | None = None) -> dict:
        """The answer policy in force (for these knowledge bases, when given), with its source,
        date and calibration figures in words: any signed-in caller may read it."""
        from .generation.policy_choice import policy_for_kbs

        kbs = self.resolve_kbs(kb_names, caller=caller) if kb_names else []
        policy = policy_for_kbs(self.settings, kbs)
        return {**policy.describe(), "setting": self.settings.answer_policy,
                "model": self.settings.llm_label if self.settings.llm_configured else "offline reader"}

    def calibrate_answer_policy(self, *, caller: Caller, limit: int | None = None, target: float | None = None,
                                progress=None, set_path: Path | None = None):
        """Fit the answer policy to the configured model on the shipped calibration set (admins
        only: it runs hundreds of questions through the model and changes every answer's rule)."""
        if not caller.admin:
            raise PermissionDenied("only an admin may calibrate the answer policy")
        from .generation.calibrate import KB_NAME, SET_PATH, calibrate

        def open_set(settings, docs, sha):
            ws = Workspace(settings)
            op = Caller.operator()  # the calibration folder is the system's own, not a user's
            marker = Path(settings.data_dir) / "set.sha256"
            kb = next(iter(ws.appdb.find_kbs(KB_NAME)), None)
            if kb is None or not marker.exists() or marker.read_text().strip() != sha:
                if kb is not None:
                    ws.delete_kb(KB_NAME, caller=op)
                kb = ws.create_kb(KB_NAME, description="answer-policy calibration set", caller=op)
                src = Path(settings.data_dir) / "calibration_documents.jsonl"
                src.write_text("".join(json.dumps({"_id": d["id"], "title": d["title"], "text": d["text"]}) + "\n"
                                       for d in docs))
                ws.ingestor.ingest(kb, [src])
                marker.write_text(sha)
            return (lambda question: ws.ask([KB_NAME], question, caller=op)), ws.close

        return calibrate(self.settings, open_set, limit=limit, target=target, progress=progress,
                         set_path=set_path or SET_PATH)

    def start_calibration(self, *, caller: Caller, limit: int | None = None) -> dict:
        """Calibrate in a background thread (the Knowledge bases page's button): one at a time
        per workspace; `calibration_status` reports its progress. Admins only."""
        import threading

        if not caller.admin:
            raise PermissionDenied("only an admin may calibrate the answer policy")
        state = self._calibration
        with self._calibration_lock:
            if state.get("running"):
                return dict(state)
            state.clear()
            state.update(running=True, done=0, total=None, eta_s=None, error=None, result=None, started=time.time())

        def progress(done, total, eta):
            state.update(done=done, total=total, eta_s=eta)

        def work():
            try:
                run = self.calibrate_answer_policy(caller=caller, limit=limit, progress=progress)
                state.update(result={"questions": run.rows, "minutes": round(run.minutes, 2), "params": run.params,
                                     "figures": run.figures})
            except Exception as exc:  # noqa: BLE001 - shown on the page; the rows so far are kept (resumable)
                state.update(error=f"{type(exc).__name__}: {exc}")
            finally:
                state.update(running=False)

        threading.Thread(target=work, name="calibrate-answer-policy", daemon=True).start()
        return dict(state)

    def calibration_status(self, *, caller: Caller) -> dict:
        """The background calibration's progress (admins: they start it)."""
        if not caller.admin:
            raise PermissionDenied("only an admin may calibrate the answer policy")
        return dict(self._calibration)

    @cached_property
    def _calibration(self) -> dict:
        return {}

    @cached_property
    def _calibration_lock(self):
        import threading

        return threading.Lock()

    # ---- scale-out ---------------------------------------------------------------------
    def migrate_to(self, target, progress=None, target_key: str | None = None, restart: bool = False, *,
                   caller: Caller) -> dict:
        """Copy every indexed document's chunks and stored vectors into another store
        (e.g. Weaviate) without re-embedding. The registry (SQLite) is shared, so after
        this the app can switch RAG_STORE and find everything in place.

        Resumable: with `target_key` (the target's address), each document is recorded here
        once the target has acknowledged all its chunks, and a rerun after an interruption
        skips those. A document cut off mid-copy is replaced whole on the rerun (its objects
        have fixed ids, so nothing is duplicated); none is recorded before it is complete,
        so nothing is missed. `restart` copies everything again."""
        if not caller.admin:
            raise PermissionDenied("only the operator or an admin may migrate the whole data folder")
        if target_key and restart:
            self.appdb.forget_migration(target_key)
        done = self.appdb.migrated(target_key) if target_key else set()
        docs = chunks = skipped = 0
        kbs = self.appdb.list_kbs()
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
        """Stop the workspace's workers and close its files; closing twice does nothing."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        if "job_runner" in self.__dict__:
            self.job_runner.stop()
        if "ingestor" in self.__dict__ and hasattr(self.ingestor, "close"):
            self.ingestor.close()  # its spawned loader process
        self.appdb.leases.stop()
        self.store.close()
        self.db.close()


def _last_kbs_key(user: str | None) -> str:
    """Where the knowledge bases a user last chose are remembered."""
    return f"last_kbs:{user or ''}"


def date_range(filters: SearchFilters, after: str | None, before: str | None) -> SearchFilters:
    """The filters with a document-date range (checked: YYYY-MM-DD, after ≤ before)."""
    from .ingest.pipeline import check_date

    filters.after = check_date(after) if after else None
    filters.before = check_date(before) if before else None
    if filters.after and filters.before and filters.after > filters.before:
        raise InputError(f"the date range is empty: {filters.after} is after {filters.before}")
    return filters


_GENERIC = set(analyze("file document doc pdf docx report paper page the whole full entire complete"))


def _visible(doc: Document, f: SearchFilters) -> bool:
    """A document is visible when its knowledge base passed the policy (f.kb_ids) and, for a
    question scoped to chosen documents, it is one of them."""
    if f.kb_ids is not None and doc.kb_id not in f.kb_ids:
        return False
    if f.tenant is not None and doc.tenant != f.tenant:
        return False
    days = f.day_range()
    if days is not None and not days[0] <= doc.doc_day <= days[1]:
        return False
    if (doc.kb_id, doc.doc_id) in f.exclude_docs:
        return False
    return f.doc_ids is None or doc.doc_id in f.doc_ids


def _model_files(settings) -> dict:
    """Local model files by size and modification time: a file replaced at the same path is
    another model (the answer cache's key)."""
    out = {}
    for name in ("llm_gguf", "llm_fast_gguf"):
        path = getattr(settings, name, None)
        if path:
            try:
                st = Path(path).stat()
                out[name] = [st.st_size, st.st_mtime_ns]
            except OSError:
                out[name] = None
    return out
