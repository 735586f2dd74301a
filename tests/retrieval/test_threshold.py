""""Minimum relevance" (RetrievalSettings.score_threshold) means one thing on one 0–1 scale
whatever the fusion and rerank settings (rag_core/retrieval/pipeline.py), and what it drops is
counted and reported. Real workspace, real models, real store."""

from __future__ import annotations

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.models import Chunk, RetrievalSettings, ScoredChunk
from rag_core.retrieval.pipeline import relevance
from rag_core.workspace import Workspace

OP = Caller.operator()

DOCS = {
    "volcanoes.txt": "Volcanoes erupt when magma rises through the crust. Basaltic lava flows are fluid.",
    "volcano-tourism.txt": "Tourists visit active volcanoes in Iceland to watch lava flows from a safe distance.",
    "baking.txt": "Sourdough bread needs a starter, flour, water and salt, and a long fermentation.",
    "iceland.txt": "Iceland has about 130 volcanoes. Many of them are active.",
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("threshold")
    w = Workspace(get_settings(root / "data"))
    files = []
    for name, text in DOCS.items():
        (root / name).write_text(text)
        files.append(root / name)
    # RRF fusion, no reranking: fused scores are at most 1/61 ≈ 0.016
    w.create_kb("rrf", caller=OP, retrieval=RetrievalSettings(fusion="rrf", rerank=False, score_threshold=0.05))
    w.ingest("rrf", files, caller=OP)
    yield w
    w.close()


def kb_settings(ws, **changes):
    kb = ws.get_kb("rrf", caller=OP)
    ws.update_kb("rrf", caller=OP, retrieval=RetrievalSettings(**{**kb.retrieval.__dict__, **changes}))


def test_rrf_with_a_small_threshold_still_returns_passages(ws):
    kb_settings(ws, score_threshold=0.05)
    r = ws.search(["rrf"], "Why do volcanoes erupt?", caller=OP)
    assert r.results, "a 0.05 threshold must not empty every RRF result"
    assert r.results[0].chunk.source == "volcanoes.txt"
    assert max(x.score for x in r.results) < 0.05  # the raw RRF scale, which the threshold is not compared with
    assert all(x.scores["relevance"] >= 0.05 for x in r.results)
    a = ws.ask(["rrf"], "Why do volcanoes erupt?", caller=OP)
    assert not a.abstained and "magma" in a.text


def test_the_same_threshold_means_the_same_with_either_fusion(ws):
    kept = {}
    for fusion in ("rrf", "relative_score"):
        kb_settings(ws, fusion=fusion, score_threshold=0.05)
        kept[fusion] = {x.chunk.source for x in ws.search(["rrf"], "Why do volcanoes erupt?", caller=OP).results}
    assert "volcanoes.txt" in kept["rrf"] and "volcanoes.txt" in kept["relative_score"]


def test_the_dropped_passages_are_counted_and_reported(ws):
    kb_settings(ws, fusion="rrf", score_threshold=0.99)  # only the best passage is that close to itself
    r = ws.search(["rrf"], "Why do volcanoes erupt?", caller=OP)
    assert r.candidates >= 2 and r.below_threshold == r.candidates - len(r.results) > 0
    assert [x.scores["relevance"] for x in r.results] == [1.0]
    a = ws.ask(["rrf"], "Why do volcanoes erupt?", caller=OP)
    assert a.below_threshold == r.below_threshold

    # reranked: the reranker's probability is what is compared; a bar of 1.0 drops everything,
    # and the abstention says why and how many
    kb_settings(ws, rerank=True, score_threshold=1.0)
    r = ws.search(["rrf"], "Why do volcanoes erupt?", caller=OP)
    assert r.results == [] and r.below_threshold == r.candidates > 0
    b = ws.ask(["rrf"], "Why do volcanoes erupt?", caller=OP)
    assert b.abstained and b.below_threshold == r.candidates
    assert b.decided_by == "retrieval" and "minimum relevance" in b.reason  # plain words; the figures apart
    assert f"dropped all {r.candidates} candidate passage(s)" in b.signals["detail"]
    assert "minimum relevance (1.00)" in b.signals["detail"]
    kb_settings(ws, rerank=False, score_threshold=0.05)


def sc(i: int, score: float, rerank: float | None = None) -> ScoredChunk:
    c = ScoredChunk(Chunk(chunk_id=f"c{i}", doc_id="d", kb_id="k", text="t"), score)
    if rerank is not None:
        c.scores["rerank"] = rerank
    return c


def test_relevance_scale():
    # unreranked: relative to the best of the question, whatever the raw scale
    assert relevance([sc(0, 1 / 61), sc(1, 1 / 122)]) == pytest.approx([1.0, 0.5])
    assert relevance([sc(0, 0.8), sc(1, 0.4)]) == pytest.approx([1.0, 0.5])
    # reranked head: the reranker's probability; the unreranked tail never above the head's lowest
    rel = relevance([sc(0, 0.7, 0.7), sc(1, 0.2, 0.2), sc(2, 0.9), sc(3, 0.09)], reranked=2)
    assert rel == pytest.approx([0.7, 0.2, 0.2, 0.1])
