"""Fusion of ranked lists: relative-score fusion (Weaviate's default) and reciprocal rank fusion."""

from __future__ import annotations

from ..models import ScoredChunk

RRF_K = 60


def _minmax(results: list[ScoredChunk]) -> dict[str, float]:
    if not results:
        return {}
    scores = [r.score for r in results]
    lo, hi = min(scores), max(scores)
    if hi - lo < 1e-12:
        # One result, or all tied: each is as good as the best of its list.
        return {r.chunk.chunk_id: 1.0 for r in results}
    return {r.chunk.chunk_id: (r.score - lo) / (hi - lo) for r in results}


def relative_score_fusion(keyword: list[ScoredChunk], vector: list[ScoredChunk], alpha: float) -> list[ScoredChunk]:
    """score = (1-alpha)·minmax(keyword) + alpha·minmax(vector); absent from a list counts 0."""
    kw, vec = _minmax(keyword), _minmax(vector)
    return _combine(keyword, vector, lambda cid: (1 - alpha) * kw.get(cid, 0.0) + alpha * vec.get(cid, 0.0))


def reciprocal_rank_fusion(
    keyword: list[ScoredChunk], vector: list[ScoredChunk], alpha: float, k: int = RRF_K
) -> list[ScoredChunk]:
    """score = (1-alpha)/(k + rank_kw) + alpha/(k + rank_vec), ranks from 1; the alpha
    weighting makes alpha=0/1 reproduce the single lists exactly, as Weaviate does."""
    kw = {r.chunk.chunk_id: i + 1 for i, r in enumerate(keyword)}
    vec = {r.chunk.chunk_id: i + 1 for i, r in enumerate(vector)}

    def score(cid: str) -> float:
        s = 0.0
        if cid in kw:
            s += (1 - alpha) / (k + kw[cid])
        if cid in vec:
            s += alpha / (k + vec[cid])
        return s

    return _combine(keyword, vector, score)


def _combine(keyword: list[ScoredChunk], vector: list[ScoredChunk], score) -> list[ScoredChunk]:
    merged: dict[str, ScoredChunk] = {}
    for r in (*keyword, *vector):
        cur = merged.get(r.chunk.chunk_id)
        if cur is None:
            merged[r.chunk.chunk_id] = ScoredChunk(r.chunk, 0.0, dict(r.scores))
        else:
            cur.scores.update(r.scores)
    out = []
    for cid, r in merged.items():
        r.score = score(cid)
        r.scores["fused"] = r.score
        out.append(r)
    # Ties broken by chunk id so results are deterministic.
    out.sort(key=lambda r: (-r.score, r.chunk.chunk_id))
    return out


def fuse(keyword: list[ScoredChunk], vector: list[ScoredChunk], alpha: float, method: str) -> list[ScoredChunk]:
    if method == "rrf":
        return reciprocal_rank_fusion(keyword, vector, alpha)
    if method == "relative_score":
        return relative_score_fusion(keyword, vector, alpha)
    raise ValueError(f"unknown fusion method '{method}' (relative_score or rrf)")
