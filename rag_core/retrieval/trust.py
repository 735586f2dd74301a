"""Documents an owner marked trusted rank a little higher.

Each candidate from a trusted document has its score multiplied by (1 + BOOST), on whichever
scale it is (reranker probability or fused score), and the candidates are re-sorted: between
passages of similar relevance the trusted one comes first, while a clearly better passage
from an ordinary document still wins (a trusted one must be within 1/(1 + BOOST) of it).

BOOST is a judgement checked, not fitted: benchmarks/trusted_boost.py marks a random tenth of
the documents trusted (no relation to relevance: the worst case for a boost) and measures how
much retrieval loses on SciFact's test queries and the manuals' questions at several values.
"""

from __future__ import annotations

from ..models import ScoredChunk

BOOST = 0.1


def apply_trust(cands: list[ScoredChunk], trusted: frozenset, boost: float | None = None) -> list[ScoredChunk]:
    """The candidates re-sorted with trusted documents' scores raised (each keeps
    scores["trusted"] = its factor); unchanged when nothing searched is trusted. `boost`:
    BOOST, read when called (the benchmark varies it)."""
    boost = BOOST if boost is None else boost
    if not trusted or not cands or boost <= 0:
        return cands
    hit = False
    for c in cands:
        if (c.chunk.kb_id, c.chunk.doc_id) in trusted:
            c.scores["trusted"] = 1.0 + boost
            c.score *= 1.0 + boost
            hit = True
    return sorted(cands, key=lambda c: -c.score) if hit else cands
