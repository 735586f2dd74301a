"""The store protocol every chunk store implements (embedded, Weaviate).

Small on purpose (Haystack's DocumentStore is the model): writes are per document and
atomic, searches apply filters inside the store, and one contract test suite
(tests/stores/test_contract.py) runs against every implementation.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..models import Chunk, ScoredChunk, SearchFilters


@runtime_checkable
class ChunkStore(Protocol):
    name: str

    def add_chunks(self, chunks: list[Chunk], vectors: np.ndarray | None) -> None:
        """Add one document's chunks: all become visible or none. With `vectors=None` they
        are keyword-searchable at once and take part in vector search only after
        `set_vectors` (hybrid then uses their keyword side only)."""

    def set_vectors(self, chunk_ids: list[str], vectors: np.ndarray) -> int:
        """Vectors for chunks added without; chunks deleted meanwhile are skipped. Returns
        how many were set."""

    def delete_document(self, kb_id: str, doc_id: str) -> int:
        """Remove every chunk of a document from keyword and vector indexes; returns the count."""

    def delete_kb(self, kb_id: str) -> int: ...

    def set_document_date(self, kb_id: str, doc_id: str, day: int) -> int:
        """Stamp a document's chunks with a new date (models.iso_to_day); returns the count.
        Date filters (SearchFilters.after/before) apply inside the search, like the others."""

    def clear_vectors(self, kb_id: str, doc_id: str) -> int:
        """Drop a document's vectors (re-embedding with another model): it stays keyword-
        searchable and leaves vector search until `set_vectors`. Returns the count."""

    def vector_dim(self) -> int:
        """Size of the stored vectors; 0 when none is stored."""

    def reanalyse_document(self, kb_id: str, doc_id: str, language: str) -> int:
        """Re-index a document's chunks as written in `language` (keyword terms analysed anew,
        vectors kept), atomically: the document is never missing meanwhile. Returns the count."""

    def keyword_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        """BM25 over the chunks' index text; scores are larger-is-better."""

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        """Cosine similarity (vectors are unit length)."""

    def hybrid_search(
        self,
        query: str,
        vector: np.ndarray,
        k: int,
        filters: SearchFilters,
        *,
        alpha: float = 0.5,
        fusion: str = "relative_score",
        overfetch: int = 4,
        timings: dict[str, float] | None = None,
    ) -> list[ScoredChunk]:
        """Keyword + vector fused (relative_score or rrf) over the top `overfetch × k` of each;
        alpha 0 = keyword ranking, 1 = vector ranking. Results carry scores["keyword"],
        scores["vector"] and scores["fused"]."""

    def get_chunks(self, chunk_ids: list[str]) -> list[Chunk]: ...

    def vectors_for(self, chunk_ids: list[str]) -> np.ndarray:
        """Stored vectors in the given order (MMR; migration without re-embedding); a chunk
        not embedded yet gives a zero row."""

    def idf(self, terms: list[str]) -> dict[str, float]:
        """Inverse document frequency of analysed terms (the reranker's coverage feature)."""

    def document_chunks(self, kb_id: str, doc_id: str) -> list[Chunk]: ...

    def count(self, kb_id: str | None = None) -> int: ...

    def health(self) -> dict: ...

    def close(self) -> None: ...
