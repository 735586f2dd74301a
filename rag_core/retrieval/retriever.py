"""The LangChain face of retrieval: a `BaseRetriever`, so it composes into LCEL chains,
streams and traces like any LangChain retriever, over whichever store is configured.

One instance serves every request: the caller's filters and the knowledge bases' settings
come with each call (`retriever.invoke(q, config, filters=..., settings=...)`) or, for a
retriever handed to other LangChain code, as the instance's defaults. It keeps no state
between calls, so concurrent chat sessions can share it."""

from __future__ import annotations

from dataclasses import asdict, fields, replace
from typing import Any

import numpy as np
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ..models import Chunk, RetrievalSettings, ScoredChunk, SearchFilters

_CHUNK_FIELDS = tuple(f.name for f in fields(Chunk) if f.name != "text")


def to_lc_document(r: ScoredChunk, retrieval: dict[str, Any] | None = None) -> LCDocument:
    meta = {k: v for k, v in asdict(r.chunk).items() if k != "text"}
    meta.update(score=r.score, scores=dict(r.scores))
    if retrieval is not None:
        meta["retrieval"] = retrieval
    return LCDocument(id=r.chunk.chunk_id, page_content=r.chunk.text, metadata=meta)


def from_lc_document(doc: LCDocument) -> ScoredChunk:
    m = doc.metadata
    chunk = Chunk(text=doc.page_content, **{k: m[k] for k in _CHUNK_FIELDS if k in m})
    return ScoredChunk(chunk, float(m.get("score", 0.0)), dict(m.get("scores", {})))


class GroundworkRetriever(BaseRetriever):
    """Hybrid search → rerank → MMR → budget, with filters applied inside the store.

    Each document's metadata holds the chunk's fields, its scores, and under "retrieval"
    the run's timings and, for a whole-document lookup, the document's name."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pipeline: Any  # RetrievalPipeline
    filters: SearchFilters | None = None
    settings: RetrievalSettings | None = None
    mode: str = "hybrid"
    # LangChain's convention: `k` documents, from the constructor or `invoke(q, k=…)`. With a k
    # the retriever ranks: min(k, available) documents, no minimum-relevance cut, MMR or token
    # budget below k. Without one it chooses an answer's context (the knowledge bases' top_k,
    # MMR, threshold and budget), as the answer chain needs.
    k: int | None = Field(default=None, ge=1)
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
        filters: SearchFilters | None = None, settings: RetrievalSettings | None = None,
        query_vector: np.ndarray | None = None, report: dict[str, Any] | None = None, k: int | None = None,
        lookup: bool = True,
    ) -> list[LCDocument]:
        """`report`, when given, receives the run's info (the same dict each document carries
        under "retrieval") even when no document comes back: e.g. how many passages the
        minimum relevance dropped when it dropped them all."""
        filters = filters or self.filters
        if filters is None:
            raise ValueError("GroundworkRetriever needs filters (which knowledge bases, for whom)")
        k = k if k is not None else self.k
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"k must be a positive integer, not {k!r}")
        rs = settings or self.settings or RetrievalSettings()
        if k is not None:
            rs = replace(rs, score_threshold=0.0)
        r = self.pipeline.run(query, filters, rs, mode=self.mode, query_vector=query_vector, k=k, lookup=lookup)
        info = {"timings_ms": r.timings_ms, "lookup_source": r.lookup_source, "candidates": r.candidates,
                "below_threshold": r.below_threshold, "lookup_chunks": r.lookup_chunks}
        if report is not None:
            report.update(info)
        results = r.results[:k] if k is not None else r.results  # a whole-document lookup returns all its passages
        return [to_lc_document(x, info) for x in results]
