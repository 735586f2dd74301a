"""The facade the CLI and the Streamlit pages call: one data folder, its database, store,
embedder and ingestor, created once and reused (the app caches a Workspace per data dir)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from .appdb import AppDB
from .config import Settings, get_settings
from .db import Database
from .embeddings import get_embedder
from .errors import InputError
from .ingest.pipeline import IngestStats, Ingestor, delete_document
from .models import KnowledgeBase, SearchFilters
from .retrieval.search import SearchResult, candidate_search
from .stores import make_store


class Workspace:
    def __init__(self, settings: Settings | None = None):
        self.settings = settings or get_settings()
        self.db = Database(self.settings.db_path)
        self.appdb = AppDB(self.db)
        self.store = make_store(self.settings, self.db)

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

    def list_kbs(self) -> list[KnowledgeBase]:
        return self.appdb.list_kbs()

    def get_kb(self, name_or_id: str) -> KnowledgeBase:
        return self.appdb.get_kb(name_or_id)

    def delete_kb(self, name_or_id: str) -> None:
        kb = self.get_kb(name_or_id)
        self.store.delete_kb(kb.kb_id)
        for doc in self.appdb.list_documents(kb.kb_id, status=None):
            if doc.stored_path:
                Path(doc.stored_path).unlink(missing_ok=True)
        self.appdb.delete_kb_row(kb.kb_id)

    # ---- documents -------------------------------------------------------------------
    def ingest(self, kb_name: str, paths: list[Path], **kw) -> IngestStats:
        kb = self.get_kb(kb_name)
        return self.ingestor.ingest(kb, paths, **kw)

    def delete_document(self, kb_name: str, doc_id: str) -> bool:
        kb = self.get_kb(kb_name)
        return delete_document(self.appdb, self.store, kb.kb_id, doc_id)

    # ---- search ----------------------------------------------------------------------
    def filters_for(self, kbs: list[KnowledgeBase], user: str | None = None, groups: list[str] | None = None) -> SearchFilters:
        user = user if user is not None else self.settings.user
        groups = groups if groups is not None else self.settings.group_list
        return SearchFilters(
            kb_ids=[kb.kb_id for kb in kbs],
            user=user,
            groups=list(groups),
            # An identity switches ACL enforcement on; without one the caller is the operator.
            enforce_acl=bool(user or groups),
        )

    def search(
        self,
        kb_names: list[str],
        query: str,
        k: int = 10,
        mode: str = "hybrid",
        alpha: float | None = None,
        fusion: str | None = None,
        user: str | None = None,
        groups: list[str] | None = None,
    ) -> SearchResult:
        query = (query or "").strip()
        if not query:
            raise InputError("the query is empty")
        kbs = [self.get_kb(n) for n in kb_names]
        rs = kbs[0].retrieval
        return candidate_search(
            self.store,
            self.embedder if mode != "keyword" else None,
            query,
            k,
            self.filters_for(kbs, user, groups),
            mode=mode,
            alpha=rs.alpha if alpha is None else alpha,
            fusion=fusion or rs.fusion,
        )

    def close(self) -> None:
        self.db.close()
