"""The in-memory BM25 index against a brute-force BM25 written from the formula."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from rag_core.db import Database
from rag_core.models import Chunk, SearchFilters
from rag_core.text.analysis import analyze
from rag_core.stores.embedded import EmbeddedStore
from rag_core.stores.memindex import MemIndex, encode_terms

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def brute_bm25(docs: dict[int, list[int]], query: list[int], k1: float, b: float) -> dict[int, float]:
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n
    out = {}
    for rid, terms in docs.items():
        s = 0.0
        for t in query:
            df = sum(1 for d in docs.values() if t in d)
            if df == 0 or t not in terms:
                continue
            tf = terms.count(t)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(terms) / avgdl))
        out[rid] = s
    return out


def row(rid: int, terms: list[int]) -> tuple:
    ids = sorted(set(terms))
    return (rid, "kb", None, 1, np.zeros(4, dtype=np.float32).tobytes(), encode_terms(ids, [terms.count(t) for t in ids]))


def test_bm25_matches_formula_through_adds_deletes_and_merges():
    rng = random.Random(1)
    docs = {rid: [rng.randrange(12) for _ in range(rng.randrange(1, 30))] for rid in range(1, 301)}
    mi = MemIndex()
    items = list(docs.items())
    mi.append([row(r, t) for r, t in items[:150]])
    mi.rebuild()  # half in the main segment...
    mi.append([row(r, t) for r, t in items[150:]])  # ...half in the delta
    dead = [r for r in docs if r % 7 == 0]
    mi.kill(dead)
    live = {r: t for r, t in docs.items() if r % 7}
    cold = MemIndex()  # what a restart builds: bulk load, then the same deletes
    cold.bulk_load([row(r, t) for r, t in items])
    cold.kill(dead)
    for query in ([0], [3, 5]):
        assert np.allclose(sorted(cold.bm25(query)[cold.alive[: cold.n]]), sorted(mi.bm25(query)[mi.alive[: mi.n]]), rtol=1e-5)
    for query in ([0], [3, 5], [1, 1, 9], [11, 2, 4, 6]):
        expected = brute_bm25(live, query, mi.k1, mi.b)
        got = mi.bm25(query)
        for rid, score in expected.items():
            assert got[mi.pos[rid]] == pytest.approx(score, rel=1e-4)
        mi.rebuild()  # the merged index scores the same
        got = mi.bm25(query)
        for rid, score in expected.items():
            assert got[mi.pos[rid]] == pytest.approx(score, rel=1e-4)


def test_analyzer_stems_folds_and_drops_stopwords():
    assert analyze("The Running studies of Café") == ["run", "studi", "cafe"]
    assert analyze("x" * 41) == []


def test_a_second_opening_sees_adds_and_deletes(tmp_path):
    a = EmbeddedStore(Database(tmp_path / "g.db"))
    b = EmbeddedStore(Database(tmp_path / "g.db"))  # as another process would
    v = np.eye(4, dtype=np.float32)
    a.add_chunks([Chunk(chunk_id="k/d#0", doc_id="d", kb_id="k", text="walrus tusks")], v[:1])
    assert [r.chunk.chunk_id for r in b.keyword_search("walrus", 5, SearchFilters())] == ["k/d#0"]
    assert b.vector_search(v[0], 1, SearchFilters())[0].chunk.chunk_id == "k/d#0"
    b.add_chunks([Chunk(chunk_id="k/e#0", doc_id="e", kb_id="k", text="walrus colony")], v[1:2])
    assert {r.chunk.doc_id for r in a.keyword_search("walrus", 5, SearchFilters())} == {"d", "e"}
    a.delete_document("k", "d")
    assert [r.chunk.doc_id for r in b.keyword_search("walrus", 5, SearchFilters())] == ["e"]
    assert b.health()["ok"] and a.health()["ok"]


def test_failed_add_leaves_no_vocabulary_ghosts(tmp_path):
    s = EmbeddedStore(Database(tmp_path / "g.db"))
    bad = [Chunk(chunk_id="k/x#0", doc_id="x", kb_id="k", text="narwhal"),
           Chunk(chunk_id="k/x#0", doc_id="x", kb_id="k", text="narwhal horn")]
    with pytest.raises(Exception):
        s.add_chunks(bad, np.eye(4, dtype=np.float32)[:2])
    s.add_chunks([Chunk(chunk_id="k/y#0", doc_id="y", kb_id="k", text="narwhal horn")], np.eye(4, dtype=np.float32)[:1])
    assert [r.chunk.doc_id for r in s.keyword_search("narwhal horn", 5, SearchFilters())] == ["y"]
