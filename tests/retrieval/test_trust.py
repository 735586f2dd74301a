"""Trusted documents rank a little higher (rag_core/retrieval/trust.py, issue 53 part 4)."""

from __future__ import annotations

from rag_core.models import Chunk, ScoredChunk
from rag_core.retrieval.trust import BOOST, apply_trust


def cand(doc: str, score: float, kb: str = "k") -> ScoredChunk:
    return ScoredChunk(Chunk(chunk_id=f"{kb}/{doc}#0", doc_id=doc, kb_id=kb, text=doc), score, {})


def test_a_trusted_passage_passes_one_of_similar_relevance_but_not_a_clearly_better_one():
    out = apply_trust([cand("a", 0.80), cand("b", 0.76), cand("c", 0.50)], frozenset({("k", "b"), ("k", "c")}))
    assert [c.chunk.doc_id for c in out] == ["b", "a", "c"]
    assert out[0].scores["trusted"] == 1 + BOOST and "trusted" not in out[1].scores
    assert out[2].score == 0.50 * (1 + BOOST)  # 0.55: still below the ordinary 0.80


def test_the_mark_is_per_knowledge_base_and_nothing_moves_without_one():
    cands = [cand("a", 0.9), cand("b", 0.8, kb="other")]
    assert apply_trust(cands, frozenset({("k", "b")})) == cands  # doc b of another knowledge base is not marked
    assert [c.score for c in cands] == [0.9, 0.8]
    assert apply_trust(cands, frozenset()) is cands
