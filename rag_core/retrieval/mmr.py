"""Maximal marginal relevance: pick results that are relevant and not near-duplicates."""

from __future__ import annotations

import numpy as np


def mmr_select(relevance: np.ndarray, vectors: np.ndarray, k: int, lam: float) -> list[int]:
    """Greedy MMR: argmax λ·rel(i) − (1−λ)·max_{j∈S} cos(i, j). λ = 1 is plain ranking.

    `relevance` is on any scale the caller chose (the pipeline rescales to [0, 1]);
    `vectors` are unit length, so the dot product is the cosine."""
    n = len(relevance)
    k = min(k, n)
    if k <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    sim = np.asarray(vectors, dtype=np.float64) @ np.asarray(vectors, dtype=np.float64).T
    selected = [int(np.argmax(rel))]
    max_sim = sim[selected[0]].copy()
    chosen = np.zeros(n, dtype=bool)
    chosen[selected[0]] = True
    while len(selected) < k:
        score = lam * rel - (1 - lam) * max_sim
        score[chosen] = -np.inf
        i = int(np.argmax(score))
        selected.append(i)
        chosen[i] = True
        max_sim = np.maximum(max_sim, sim[i])
    return selected
