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
    raise GroundworkError(
        f"store '{settings.store}' is not available in this version; use RAG_STORE=embedded"
    )


__all__ = ["ChunkStore", "make_store"]
