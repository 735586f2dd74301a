"""query → parse → hybrid candidates → rerank → threshold → MMR → token budget.

One object per workspace (the store, embedder and reranker are shared, loaded once); each
call takes the knowledge bases' settings and the caller's filters.

The knowledge base's "Minimum relevance" (`score_threshold`, 0–1) is compared with one value
per candidate, `relevance()`, whatever the fusion and rerank settings:
- a candidate the reranker scored: the reranker's probability that it is relevant;
- a candidate it did not score (reranking off for the knowledge base, RAG_RERANKER=none, or
  ranked below the reranker's depth): its fused (or keyword / vector) score divided by the
  best such score of this question, so the best passage reads 1.0 and the threshold means
  "at least this share of the best passage's score". Below the reranker's depth it is also
  capped at the lowest reranked probability (it ranked below all of them).
Raw fused scores are never compared with it: RRF scores are at most 1/61 ≈ 0.016, so a
threshold of 0.05 used to drop every passage, silently. How many passages the threshold
dropped is reported (`Retrieved.below_threshold`, and the answer's `below_threshold`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..models import RetrievalSettings, ScoredChunk, SearchFilters
from .mmr import mmr_select
from .query import ParsedQuery, parse
from .recency import apply_recency
from .trust import apply_trust
from .search import candidate_search
from ..text.tokens import count_tokens

RERANK_DEPTH = 30  # candidates the reranker sees: p95 stays far under 300 ms at this depth


@dataclass
class Retrieved:
    query: ParsedQuery
    results: list[ScoredChunk]
    timings_ms: dict[str, float] = field(default_factory=dict)
    lookup_source: str | None = None  # set when the whole document was returned
    candidates: int = 0
    below_threshold: int = 0  # candidates dropped by the score threshold ("Minimum relevance")
    # a lookup: the document's passages in all; more than len(results) when the context
    # budget cut it short (then what is returned is an excerpt, not the whole document)
    lookup_chunks: int = 0


class RetrievalPipeline:
    def __init__(
        self,
        store,
        embedder,
        reranker=None,
        find_document: Callable[[str, SearchFilters], tuple[str, str] | None] | None = None,
        signals=None,
        max_query_chars: int | None = None,
    ):
        self.max_query_chars = max_query_chars  # the app's one question-length limit
        self.store = store
        self.embedder = embedder
        self.reranker = reranker
        # (name, filters) -> (kb_id, doc_id) of a document the caller may see, or None.
        # The registry holds each document's tenant and ACL, so the check happens there.
        self.find_document = find_document
        self.signals = signals  # feedback that promotes/demotes passages (feedback_signals.py)

    def run(
        self,
        query: str,
        filters: SearchFilters,
        settings: RetrievalSettings,
        *,
        mode: str = "hybrid",
        rerank: bool | None = None,
        k: int | None = None,
        query_vector: np.ndarray | None = None,
        lookup: bool = True,
    ) -> Retrieved:
        """`lookup=False`: a request to see a document is searched like any question (the
        person chose "search instead")."""
        t0 = time.perf_counter()
        pq = parse(query, self.max_query_chars) if self.max_query_chars else parse(query)
        timings: dict[str, float] = {"parse": (time.perf_counter() - t0) * 1000}
        top_k = k or settings.top_k

        if lookup and pq.lookup and self.find_document and filters.kb_ids:
            found = self.find_document(pq.lookup, filters)
            if found:
                res, total = self.whole_document(found, settings)
                if res:
                    timings["lookup"] = (time.perf_counter() - t0) * 1000
                    return Retrieved(pq, res, timings, lookup_source=res[0].chunk.source, candidates=len(res),
                                     lookup_chunks=total)

        do_rerank = (settings.rerank if rerank is None else rerank) and self.reranker is not None
        # An explicit k asks for a ranking (CLI search, evaluation): no MMR, no token budget.
        # Without it we are choosing an answer's context: MMR for diversity, then the budget.
        ranking = k is not None
        use_mmr = not ranking and settings.mmr_lambda < 1.0 and mode != "keyword"
        pool = max(top_k, RERANK_DEPTH if do_rerank else 0)
        if use_mmr:
            pool = max(pool, top_k * 3)  # MMR needs room to trade relevance for novelty
        sr = candidate_search(
            self.store, self.embedder, pq.text, pool, filters, mode=mode, alpha=settings.alpha, fusion=settings.fusion,
            query_vector=query_vector,
        )
        timings.update(sr.timings_ms)
        cands = sr.results
        n_cands = len(cands)
        reranked = 0
        if do_rerank and cands:
            t = time.perf_counter()
            reranked = min(len(cands), RERANK_DEPTH)
            cands = self.reranker.rerank(pq.text, cands[:RERANK_DEPTH]) + cands[RERANK_DEPTH:]
            timings["rerank"] = (time.perf_counter() - t) * 1000
        dropped = 0
        head = reranked  # candidates on the reranker's scale; those after it are on the fused one
        if settings.score_threshold > 0 and cands:
            rel = relevance(cands, reranked)
            keep = [r >= settings.score_threshold for r in rel]
            head = sum(keep[:reranked])
            dropped = len(cands) - sum(keep)
            cands = [c for c, k in zip(cands, keep) if k]
        # After the threshold (it judges relevance alone), before MMR and the cut to top_k.
        # Each re-sorts within one score scale: reranked probabilities and fused scores are
        # not comparable, so the reranked head stays ahead of the tail.
        if self.signals is not None and cands:
            t = time.perf_counter()
            cands = _per_scale(lambda cs: self.signals.adjust(pq.text, cs, sr.query_vector), cands, head)
            timings["feedback"] = (time.perf_counter() - t) * 1000
        cands = _per_scale(lambda cs: apply_recency(cs, settings.recency_half_life_days), cands, head)
        cands = _per_scale(lambda cs: apply_trust(cs, filters.trusted_docs), cands, head)
        if use_mmr and len(cands) > top_k:
            t = time.perf_counter()
            cands = self._mmr(cands, top_k, settings.mmr_lambda)
            timings["mmr"] = (time.perf_counter() - t) * 1000
        else:
            cands = cands[:top_k]
        if not ranking:
            cands = fit_budget(cands, settings.context_tokens)
        timings["total"] = (time.perf_counter() - t0) * 1000
        return Retrieved(pq, cands, timings, candidates=n_cands, below_threshold=dropped)

    def _mmr(self, cands: list[ScoredChunk], k: int, lam: float) -> list[ScoredChunk]:
        vecs = self.store.vectors_for([c.chunk.chunk_id for c in cands])
        rel = np.asarray([c.score for c in cands], dtype=np.float64)
        # Relevance on the ranking's own scale (reranker or fused score), rescaled to [0, 1]
        # so λ weighs it evenly against cosine redundancy.
        span = rel.max() - rel.min()
        rel = (rel - rel.min()) / span if span > 1e-12 else np.ones_like(rel)
        order = mmr_select(rel, vecs, k, lam)
        return [cands[i] for i in order]

    def whole_document(self, found: tuple[str, str], settings: RetrievalSettings) -> tuple[list[ScoredChunk], int]:
        """The document's passages in order, as many as the context budget holds, and how
        many it has in all."""
        kb_id, doc_id = found
        res = [ScoredChunk(c, 1.0, {"lookup": 1.0}) for c in self.store.document_chunks(kb_id, doc_id)]
        return fit_budget(res, settings.context_tokens, keep_order=True), len(res)


def _per_scale(reorder, cands: list[ScoredChunk], head: int) -> list[ScoredChunk]:
    """`reorder` applied to the reranked head and to the rest apart (0 < head < len: both)."""
    if 0 < head < len(cands):
        return reorder(cands[:head]) + reorder(cands[head:])
    return reorder(cands)


def relevance(cands: list[ScoredChunk], reranked: int = 0) -> list[float]:
    """What "Minimum relevance" is compared with, in [0, 1], one value per candidate (module
    docstring): the reranker's probability for the first `reranked` candidates (those it
    scored); for the others their score relative to the best unreranked score of this
    question, capped at the lowest reranked probability. Each value is also kept in
    `scores["relevance"]`."""
    head = [min(max(c.scores.get("rerank", c.score), 0.0), 1.0) for c in cands[:reranked]]
    tail = cands[reranked:]
    best = max((c.score for c in tail), default=0.0)
    rel_tail = [max(c.score, 0.0) / best if best > 0 else 0.0 for c in tail]
    if head:
        floor = min(head)
        rel_tail = [min(r, floor) for r in rel_tail]
    out = head + rel_tail
    for c, r in zip(cands, out):
        c.scores["relevance"] = round(r, 6)
    return out


def fit_budget(results: list[ScoredChunk], budget_tokens: int, keep_order: bool = False) -> list[ScoredChunk]:
    """Keep results, best first, while their text fits the context budget (always at least
    one: a long best passage is better than no passage)."""
    if budget_tokens <= 0:
        return results
    out, used = [], 0
    for r in results:
        n = count_tokens(r.chunk.index_text())
        if out and used + n > budget_tokens:
            if keep_order:
                break  # a document read in order must not skip a passage
            continue  # a shorter, lower-ranked passage may still fit
        out.append(r)
        used += n
    return out
