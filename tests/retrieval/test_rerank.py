"""Rerankers. The LLM reranker is wired to LangChain's fake chat model: no LLM can run
here (a paid API or a capable local model), so the fake stands in for it, as the
developers' guide allows; what is tested is our parsing, blending and ordering."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from rag_core.models import Chunk, ScoredChunk
from rag_core.retrieval.rerank import FEATURES, FeatureReranker, LLMReranker, load_weights
from rag_core.access import Caller


def cand(cid: str, text: str, kw: float, vec: float, title: str = "") -> ScoredChunk:
    return ScoredChunk(Chunk(chunk_id=cid, doc_id=cid, kb_id="k", text=text, title=title),
                       0.5, {"keyword": kw, "vector": vec, "fused": 0.5})


def test_feature_reranker_prefers_full_phrase_coverage():
    q = "effects of vitamin D on bone density"
    cands = [
        cand("partial", "Vitamin C improves immune response in athletes.", kw=6.0, vec=0.35),
        cand("full", "Vitamin D supplementation increased bone density in older women.", kw=7.0, vec=0.62),
        cand("none", "The stock market rallied on Tuesday.", kw=0.0, vec=0.02),
    ]
    out = FeatureReranker().rerank(q, cands)
    assert [c.chunk.chunk_id for c in out] == ["full", "partial", "none"]
    assert all(0.0 <= c.score <= 1.0 and c.scores["rerank"] == c.score for c in out)
    # a probability, calibrated on SciFact's base rate (~7% of top-30 candidates relevant):
    # the full match is many times likelier than unrelated text, which is near zero
    assert out[0].score > 10 * out[-1].score and out[-1].score < 0.05


def test_features_shape_and_idf_weighting():
    r = FeatureReranker(idf=lambda terms: {t: (5.0 if t == "zebra" else 0.1) for t in terms})
    x = r.features("the zebra and the horse", [cand("a", "a zebra", 1, 0.1), cand("b", "a horse", 1, 0.1)])
    assert x.shape == (2, len(FEATURES))
    cov = FEATURES.index("coverage")
    assert x[0, cov] > 0.9 > 0.1 > x[1, cov]  # the rare term carries the coverage


def test_weights_file_has_every_feature():
    w = load_weights()
    assert set(w) == set(FEATURES)


def test_llm_reranker_parses_scores_and_blends():
    fake = FakeListChatModel(responses=["9", "Relevance: 2/10", "no idea"])
    r = LLMReranker(fake, blend=1.0)
    cands = [cand("x", "alpha text", 1, 0.1), cand("y", "beta text", 1, 0.1), cand("z", "gamma text", 1, 0.1)]
    out = r.rerank("question?", cands)
    # the base reranker orders first; the fake answers in that order
    scores = {c.chunk.chunk_id: c.scores["llm"] for c in out}
    assert sorted(scores.values(), reverse=True) == [0.9, 0.2, 0.0]
    assert out[0].scores["llm"] == 0.9 and out[0].score == pytest.approx(0.9)


def test_the_reranker_options_are_the_ones_that_run_here():
    """A reranker that needs a package no requirements file installs is not offered: the
    sentence-transformers cross-encoder (it pulls in torch) was removed; asking for it names
    the options that exist, and the LLM reranker without a model says what it needs."""
    from pydantic import ValidationError

    from rag_core.config import Settings
    from rag_core.errors import GroundworkError
    from rag_core.retrieval.factory import make_reranker

    with pytest.raises(ValidationError, match="'features', 'reader', 'llm' or 'none'"):
        Settings(reranker="cross-encoder")
    with pytest.raises(GroundworkError, match="needs an LLM"):
        make_reranker(Settings(reranker="llm"), store=None)
    assert make_reranker(Settings(reranker="none"), store=None) is None


def test_reader_reranker_puts_the_passage_that_addresses_the_query_first():
    """Our reader model (real, shipped) reads query and passage together: the passage that
    is about the query's claim wins over ones that share its words in another sense."""
    from rag_core.reader import get_reader
    from rag_core.retrieval.rerank import ReaderReranker

    q = "Linear regression models are fitted by least squares."
    cands = [
        cand("nonlin", "Non-linear regression models such as exponential growth curves are fitted iteratively.", 6, 0.6),
        cand("lin", "A linear regression model is fitted by ordinary least squares, minimising squared residuals.", 6, 0.6),
        cand("other", "The weather station recorded heavy rain on Tuesday.", 0, 0.05),
    ]
    out = ReaderReranker(get_reader(), FeatureReranker()).rerank(q, cands)
    assert out[0].chunk.chunk_id == "lin" and out[-1].chunk.chunk_id == "other"
    assert all("reader" in c.scores and 0 < c.score < 1 for c in out)


def test_rag_reranker_llm_works_through_the_workspace(tmp_path):
    """RAG_RERANKER=llm: the workspace hands its chat model to the reranker (it used to fail
    every retrieval). The chat model is LangChain's fake (no paid API here): it rates the
    candidates in the order the offline reranker gives them; a failing model falls back."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(tmp_path / "data", reranker="llm"))
    ws.create_kb("Zoo", caller=Caller.operator())
    (tmp_path / "a.md").write_text("# Otters\n\nOtters hold hands while they sleep.\n")
    (tmp_path / "b.md").write_text("# Owls\n\nOwls sleep during the day.\n")
    ws.ingest("Zoo", [tmp_path / "a.md", tmp_path / "b.md"], caller=Caller.operator())
    ws.__dict__["chat_model"] = FakeListChatModel(responses=["1", "10"])  # second candidate rated best
    res = ws.search(["Zoo"], "how do animals sleep", k=2, caller=Caller.operator()).results
    assert len(res) == 2 and res[0].scores["llm"] == 1.0 and res[1].scores["llm"] == 0.1

    class Down(FakeListChatModel):
        def batch(self, *a, **k):
            raise ConnectionError("endpoint unreachable")

    ws.__dict__.pop("reranker")
    ws.__dict__.pop("retrieval")
    ws.__dict__["chat_model"] = Down(responses=["x"])
    res = ws.search(["Zoo"], "how do animals sleep", k=2, caller=Caller.operator()).results
    assert len(res) == 2 and all(r.scores.get("llm_error") == 1.0 for r in res)  # offline ranking, flagged
    ws.close()
