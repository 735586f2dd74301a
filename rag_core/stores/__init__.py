"""Store factory: the one place that picks a chunk store from the settings."""

from __future__ import annotations

from ..config import Settings
from ..db import Database
from ..errors import GroundworkError
from .base import ChunkStore


def make_store(settings: Settings, db: Database) -> ChunkStore:
    if settings.store == "embedded":
        from .embedded import EmbeddedStore

        return EmbeddedStore(db)
    if settings.store == "weaviate":
        if not settings.weaviate_url:
            raise GroundworkError("RAG_STORE=weaviate needs WEAVIATE_URL (e.g. http://localhost:8080)")
        from .weaviate_store import WeaviateStore

        return WeaviateStore(settings.weaviate_url, settings.weaviate_api_key, settings.weaviate_grpc_port)
    raise GroundworkError(
        f"store '{settings.store}' is not available in this version; use RAG_STORE=embedded or weaviate"
    )


__all__ = ["ChunkStore", "make_store"]
