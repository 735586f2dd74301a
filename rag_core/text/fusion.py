"""Fusion of a keyword and a vector ranking: relative-score fusion (Weaviate's default) and
reciprocal rank fusion. Works on (key, score) pairs, so a store fuses array positions or
object ids with the same code."""

from __future__ import annotations

from typing import Hashable, Sequence


RRF_K = 60
Ranked = Sequence[tuple[Hashable, float]]  # best first


def _minmax(ranked: Ranked) -> dict:
    if not ranked:
        return {}
    scores = [s for _, s in ranked]
    lo, hi = min(scores), max(scores)
    if hi - lo < 1e-12:
        # One result, or all tied: each is as good as the best of its list.
        return {key: 1.0 for key, _ in ranked}
    return {key: (s - lo) / (hi - lo) for key, s in ranked}


def relative_score(keyword: Ranked, vector: Ranked, alpha: float) -> dict:
    """score = (1-alpha)·minmax(keyword) + alpha·minmax(vector); absent from a list counts 0."""
    kw, vec = _minmax(keyword), _minmax(vector)
    return {key: (1 - alpha) * kw.get(key, 0.0) + alpha * vec.get(key, 0.0) for key in {**kw, **vec}}


def reciprocal_rank(keyword: Ranked, vector: Ranked, alpha: float, k: int = RRF_K) -> dict:
    """score = (1-alpha)/(k + rank_kw) + alpha/(k + rank_vec), ranks from 1. Weighting by
    alpha (as Weaviate does) makes alpha = 0 / 1 reproduce the single rankings."""
    out: dict = {}
    for i, (key, _) in enumerate(keyword):
        out[key] = out.get(key, 0.0) + (1 - alpha) / (k + i + 1)
    for i, (key, _) in enumerate(vector):
        out[key] = out.get(key, 0.0) + alpha / (k + i + 1)
    return out


def fuse_ranked(keyword: Ranked, vector: Ranked, alpha: float, method: str) -> list[tuple[Hashable, float]]:
    if method == "rrf":
        fused = reciprocal_rank(keyword, vector, alpha)
    elif method == "relative_score":
        fused = relative_score(keyword, vector, alpha)
    else:
        raise ValueError(f"unknown fusion method '{method}' (relative_score or rrf)")
    # Ties broken by key so results are deterministic.
    return sorted(fused.items(), key=lambda kv: (-kv[1], str(kv[0])))
