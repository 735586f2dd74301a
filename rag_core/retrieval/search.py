"""Candidate search over a store: keyword, vector, or hybrid (both, then fused)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..embeddings import embed_queries
from ..models import ScoredChunk, SearchFilters

Mode = Literal["hybrid", "keyword", "vector"]


@dataclass
class SearchResult:
    results: list[ScoredChunk]
    timings_ms: dict[str, float] = field(default_factory=dict)
    query_vector: np.ndarray | None = None  # the question's embedding, when the search made one


def candidate_search(
    store,
    embedder,
    query: str,
    k: int,
    filters: SearchFilters,
    *,
    mode: Mode = "hybrid",
    alpha: float = 0.5,
    fusion: str = "relative_score",
    overfetch: int = 4,
    query_vector: np.ndarray | None = None,
) -> SearchResult:
    """Over-retrieve `overfetch × k` from each side before fusing: a passage ranked 30th by
    keywords but 2nd by meaning must still reach the fusion step."""
    timings: dict[str, float] = {}
    if mode == "keyword" or (mode == "hybrid" and alpha <= 0.0):
        t = time.perf_counter()
        res = store.keyword_search(query, k, filters)
        timings["keyword"] = (time.perf_counter() - t) * 1000
        return SearchResult(res, timings)
    if query_vector is None:
        t = time.perf_counter()
        query_vector = np.asarray(embed_queries(embedder, [query])[0], dtype=np.float32)
        timings["embed"] = (time.perf_counter() - t) * 1000
    if mode == "vector" or alpha >= 1.0:
        t = time.perf_counter()
        res = store.vector_search(query_vector, k, filters)
        timings["vector"] = (time.perf_counter() - t) * 1000
        return SearchResult(res, timings, query_vector)
    res = store.hybrid_search(
        query, query_vector, k, filters, alpha=alpha, fusion=fusion, overfetch=overfetch, timings=timings
    )
    return SearchResult(res, timings, query_vector)
