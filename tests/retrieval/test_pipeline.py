"""Retrieval end to end on a real workspace (real model, real store), plus MMR, budget,
query parsing and the LangChain retriever."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.retrievers import BaseRetriever

from rag_core.config import get_settings
from rag_core.errors import InputError
from rag_core.models import ScoredChunk, Chunk
from rag_core.retrieval.mmr import mmr_select
from rag_core.retrieval.pipeline import fit_budget
from rag_core.retrieval.query import detect_lookup, key_terms, normalise, parse
from rag_core.text.tokens import count_tokens
from rag_core.workspace import Workspace
from rag_core.access import Caller
from rag_core.errors import NotFound

DOCS = {
    "rajiv-pant-biography.md": "# Rajiv Pant\n\nRajiv is a technology executive. He led engineering teams at "
    "several newspapers and wrote about product development.\n\n## Education\n\nHe studied in Kathmandu.\n",
    "volcanoes.txt": "Volcanoes erupt when magma rises through the crust. Basaltic lava flows are fluid.",
    "volcano-tourism.txt": "Tourists visit active volcanoes in Iceland to watch lava flows from a safe distance.",
    "baking.txt": "Sourdough bread needs a starter, flour, water and salt, and a long fermentation.",
    "secret.txt": "The merger with Globex closes in March. Board eyes only.",
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("retr")
    w = Workspace(get_settings(root / "data"))
    files = []
    for name, text in DOCS.items():
        p = root / name
        p.write_text(text)
        files.append(p)
    w.create_kb("main", caller=Caller.operator())
    w.ingest("main", files[:-1], caller=Caller.operator())
    w.create_kb("board", acl_users=["ceo"], acl_groups=["board"], caller=Caller.operator())
    w.ingest("board", files[-1:], caller=Caller.operator())
    w.create_kb("other", caller=Caller.operator())
    (root / "other.txt").write_text("Volcanoes on Mars are the largest in the solar system.")
    w.ingest("other", [root / "other.txt"], caller=Caller.operator())
    yield w
    w.close()


def test_query_validation_and_normalisation():
    with pytest.raises(InputError, match="too short"):
        parse("  a ")
    with pytest.raises(InputError, match="too long"):
        parse("x" * 4001)
    assert parse("x" * 4000).text == "x" * 4000  # the documented limit, RAG_API_MAX_QUESTION_CHARS
    assert normalise("What’s  the   plan?") == "What is the plan?"
    assert normalise("I can't and they're") == "I cannot and they are"
    assert key_terms("What is the boiling point of water?") == ["boiling", "point", "water"]


def test_lookup_detection():
    assert detect_lookup("show me the biography file") == "biography"
    assert detect_lookup("Open handbook.pdf please") == "handbook.pdf"
    assert detect_lookup("get report.pdf") == "report.pdf"
    assert detect_lookup("show me how to reset a password") is None
    assert detect_lookup("what does the biography say about education") is None


def test_document_lookup_returns_whole_document_in_order(ws):
    r = ws.search(["main"], "show me the biography file", caller=Caller.operator())
    assert r.lookup_source == "rajiv-pant-biography.md"
    assert {x.chunk.source for x in r.results} == {"rajiv-pant-biography.md"}
    assert [x.chunk.ordinal for x in r.results] == sorted(x.chunk.ordinal for x in r.results)


def test_hybrid_rerank_finds_the_answer(ws):
    r = ws.search(["main"], "Why do volcanoes erupt?", caller=Caller.operator())
    assert r.results[0].chunk.source == "volcanoes.txt"
    assert "rerank" in r.results[0].scores and 0.0 <= r.results[0].score <= 1.0
    assert {"embed", "keyword", "vector", "fusion", "rerank", "total"} <= set(r.timings_ms)


def test_filters_never_leak_other_kbs_or_acl(ws):
    for mode in ("keyword", "vector", "hybrid"):
        r = ws.search(["main"], "volcanoes Mars merger Globex", k=20, mode=mode, caller=Caller.operator())
        assert {x.chunk.kb_id for x in r.results} == {ws.get_kb("main", caller=Caller.operator()).kb_id}
        with pytest.raises(NotFound, match="no knowledge base named 'board'"):  # hidden reads as missing
            ws.search(["board"], "merger Globex", k=20, mode=mode, caller=Caller.of("intern", ["staff"]))
        insider = ws.search(["board"], "merger Globex", k=20, mode=mode, caller=Caller.of("intern", ["board"]))
        assert [x.chunk.source for x in insider.results] == ["secret.txt"]
    # the filters the policy builds keep a lookup by name inside what the caller may see
    both = ws.search(["main"], "show me the secret file", caller=Caller.of("intern", ["staff"]))
    assert all(x.chunk.source != "secret.txt" for x in both.results)


def test_alpha_extremes(ws):
    q = "lava flows"
    # fusion is under test, not the reranker: both sides unreranked
    kw = [x.chunk.chunk_id for x in ws.search(["main"], q, k=3, mode="keyword", rerank=False, caller=Caller.operator()).results]
    vec = [x.chunk.chunk_id for x in ws.search(["main"], q, k=3, mode="vector", rerank=False, caller=Caller.operator()).results]
    assert [x.chunk.chunk_id for x in ws.search(["main"], q, k=3, alpha=0.0, rerank=False, caller=Caller.operator()).results] == kw
    assert [x.chunk.chunk_id for x in ws.search(["main"], q, k=3, alpha=1.0, rerank=False, caller=Caller.operator()).results] == vec


def test_langchain_retriever(ws):
    ret = ws.retriever(["main"], caller=Caller.operator())
    assert isinstance(ret, BaseRetriever)
    docs = ret.invoke("sourdough starter")
    assert docs[0].metadata["source"] == "baking.txt"
    assert docs[0].metadata["page_start"] == 1 and "score" in docs[0].metadata


def test_mmr_on_known_vectors():
    # 0 and 1 are near-duplicates; 2 is different but slightly less relevant
    v = np.array([[1, 0, 0], [0.99, 0.141, 0], [0, 1, 0]], dtype=np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    rel = np.array([1.0, 0.95, 0.8])
    assert mmr_select(rel, v, 2, lam=1.0) == [0, 1]  # pure relevance
    assert mmr_select(rel, v, 2, lam=0.5) == [0, 2]  # diversity wins
    assert mmr_select(rel, v, 5, lam=0.5) == [0, 2, 1]


def test_budget_counts_real_tokens():
    assert count_tokens("hello world") == 2
    assert count_tokens("antidisestablishmentarianism") > 1  # word pieces, not words
    chunks = [ScoredChunk(Chunk(chunk_id=str(i), doc_id="d", kb_id="k", text="word " * n), 1.0)
              for i, n in enumerate([50, 400, 30])]
    kept = fit_budget(chunks, 100)
    assert [c.chunk.chunk_id for c in kept] == ["0", "2"]  # the long one is skipped, a later short one fits
    assert [c.chunk.chunk_id for c in fit_budget(chunks, 100, keep_order=True)] == ["0"]
    assert len(fit_budget(chunks[1:2], 10)) == 1  # never empty
