"""The recency blend (retrieval/recency.py) and where the pipeline applies it."""

from __future__ import annotations

from rag_core.models import Chunk, ScoredChunk, iso_to_day
from rag_core.retrieval.pipeline import _per_scale
from rag_core.retrieval.recency import WEIGHT, apply_recency


def sc(name: str, score: float, date: str | None) -> ScoredChunk:
    c = Chunk(chunk_id=name, doc_id=name, kb_id="kb", text=name, doc_day=iso_to_day(date) if date else 0)
    return ScoredChunk(c, score, {})


def test_off_changes_nothing_and_equal_dates_keep_the_order():
    cands = [sc("a", 0.9, "2024-01-01"), sc("b", 0.8, "2020-01-01")]
    assert [c.chunk.chunk_id for c in apply_recency(cands, 0)] == ["a", "b"] and "recency" not in cands[0].scores
    same = [sc("a", 0.5, "2024-01-01"), sc("b", 0.7, "2024-01-01"), sc("c", 0.6, "2024-01-01")]
    assert [c.chunk.chunk_id for c in apply_recency(same, 30)] == ["b", "c", "a"]
    assert all(c.scores["recency"] == 1.0 for c in same)


def test_newer_of_two_similar_passages_first_but_never_more_than_halved():
    old, new = sc("old", 0.9, "2023-01-01"), sc("new", 0.7, "2025-01-01")
    out = apply_recency([old, new], 365)
    assert [c.chunk.chunk_id for c in out] == ["new", "old"]
    assert new.scores["recency"] == 1.0  # the newest candidate keeps its score
    far = sc("ancient", 0.9, "1950-01-01")
    apply_recency([far, sc("now", 0.1, "2025-01-01")], 30)
    assert far.scores["recency"] >= 1 - WEIGHT
    undated = sc("undated", 0.9, None)
    apply_recency([undated, sc("x", 0.1, "2025-01-01")], 30)
    assert undated.scores["recency"] == 1 - WEIGHT


def test_reordering_never_mixes_reranked_probabilities_with_fused_scores():
    """The reranked head (probabilities ≤ 1) stays ahead of the unreranked tail (fused scores
    on another scale), even when a tail score is numerically larger: a regression that cost
    SciFact nDCG@10 0.74 → 0.45 with recency on."""
    head = [sc("h1", 0.9, "2024-01-01"), sc("h2", 0.4, "2024-01-01")]
    tail = [sc("t1", 5.0, "2024-01-01"), sc("t2", 3.0, "2024-01-01")]
    out = _per_scale(lambda cs: apply_recency(cs, 365), head + tail, 2)
    assert [c.chunk.chunk_id for c in out] == ["h1", "h2", "t1", "t2"]
