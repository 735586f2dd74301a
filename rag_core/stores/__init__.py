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

        return WeaviateStore(settings.weaviate_url, settings.weaviate_api_key, settings.weaviate_grpc_ports,
                             replication_factor=settings.weaviate_replication_factor,
                             shards=settings.weaviate_shards or None, consistency=settings.weaviate_consistency)
    if settings.store == "weaviate-embedded":
        # A Weaviate process of our own, its data inside RAG_DATA_DIR, stopped at exit.
        import atexit

        from .weaviate_local import WeaviateUnavailable, start_weaviate
        from .weaviate_store import WeaviateStore

        try:
            server = start_weaviate(settings.data_dir / "weaviate")
        except WeaviateUnavailable as exc:
            raise GroundworkError(str(exc)) from None
        atexit.register(server.stop)
        return WeaviateStore(server.url, settings.weaviate_api_key, server.grpc_port)
    raise GroundworkError(f"unknown store '{settings.store}' (embedded, weaviate or weaviate-embedded)")


__all__ = ["ChunkStore", "make_store"]
