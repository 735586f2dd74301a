"""Several knowledge bases in one question: their retrieval settings merged by documented rules."""

from __future__ import annotations

from rag_core.models import KnowledgeBase, RetrievalSettings
from rag_core.retrieval.settings import merged_settings


def kb(name: str, **rs) -> KnowledgeBase:
    return KnowledgeBase(name, name, retrieval=RetrievalSettings(**rs))


def test_one_knowledge_base_keeps_its_settings_as_a_copy():
    a = kb("a", top_k=7, alpha=0.2, fusion="rrf")
    m = merged_settings([a])
    assert m == a.retrieval and m is not a.retrieval


def test_merge_rules():
    m = merged_settings([
        kb("a", top_k=3, alpha=0.2, fusion="rrf", rerank=False, mmr_lambda=0.9, score_threshold=0.3, context_tokens=1000),
        kb("b", top_k=8, alpha=0.6, fusion="rrf", rerank=True, mmr_lambda=0.5, score_threshold=0.1, context_tokens=4000),
        kb("c", top_k=5, alpha=1.0, fusion="relative_score", rerank=False, mmr_lambda=0.7, score_threshold=0.0,
           context_tokens=2000),
    ])
    assert (m.top_k, m.context_tokens, m.rerank) == (8, 4000, True)
    assert (m.score_threshold, m.mmr_lambda) == (0.0, 0.5)
    assert m.alpha == 0.6 and m.fusion == "rrf"


def test_a_fusion_tie_falls_back_to_the_default():
    m = merged_settings([kb("a", fusion="rrf"), kb("b", fusion="relative_score")])
    assert m.fusion == RetrievalSettings().fusion
    assert merged_settings([]) == RetrievalSettings()
