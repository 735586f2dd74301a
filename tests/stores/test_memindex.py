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


def test_bm25_matches_formula_through_adds_deletes_merges_and_compaction():
    rng = random.Random(1)
    docs = {rid: [rng.randrange(12) for _ in range(rng.randrange(1, 30))] for rid in range(1, 3001)}
    mi = MemIndex()
    items = list(docs.items())
    mi.append([row(r, t) for r, t in items[:1500]])
    mi.merge()  # half in the main segment...
    mi.append([row(r, t) for r, t in items[1500:]])  # ...half in the delta
    dead = [r for r in docs if r % 7 == 0]
    mi.kill(dead)
    live = {r: t for r, t in docs.items() if r % 7}
    cold = MemIndex()  # what a restart without a snapshot builds: bulk load, then the same deletes
    cold.bulk_load([[row(r, t) for r, t in items[:1000]], [row(r, t) for r, t in items[1000:]]])
    cold.kill(dead)
    for query in ([0], [3, 5]):
        assert np.allclose(sorted(cold.bm25(query)[cold.alive[: cold.n]]), sorted(mi.bm25(query)[mi.alive[: mi.n]]), rtol=1e-5)
    queries = ([0], [3, 5], [1, 1, 9], [11, 2, 4, 6])
    expected = {tuple(q): brute_bm25(live, q, mi.k1, mi.b) for q in queries}
    for step in ("delta", "merged", "compacted"):
        if step == "merged":
            mi.merge()  # the merged index scores the same, rows where they were
            assert mi.main_n == mi.n == 3000
        if step == "compacted":
            mi.compact()  # dead rows dropped, positions renumbered
            assert mi.n == len(live)
        for query in queries:
            got = mi.bm25(query)
            for rid, score in expected[tuple(query)].items():
                assert got[mi.position(rid)] == pytest.approx(score, rel=1e-4), (step, rid)
    assert all(mi.position(r) is None for r in dead)


def test_a_third_dead_compacts_on_its_own():
    mi = MemIndex()
    mi.append([row(r, [r % 5, 7]) for r in range(1, 4001)])
    mi.kill(list(range(1, 1401)))  # over a third, over 1000
    assert mi.n == 2600 and mi.dead == 0 and mi.alive_count == 2600
    assert int(mi.df[7]) == 2600 and mi.position(1401) == 0


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


def test_a_merge_built_off_the_lock_keeps_rows_added_meanwhile_and_a_stale_one_is_refused():
    rng = random.Random(2)
    docs = {rid: [rng.randrange(12) for _ in range(rng.randrange(1, 20))] for rid in range(1, 601)}
    items = list(docs.items())
    mi = MemIndex()
    mi.append([row(r, t) for r, t in items[:200]])
    mi.merge()
    mi.append([row(r, t) for r, t in items[200:400]])
    plan = mi.merge_plan()  # what the maintenance thread reads under the read lock...
    built = MemIndex.build_merge(plan)  # ...and builds with no lock held, while
    mi.append([row(r, t) for r, t in items[400:]])  # a sync appends more and
    mi.kill([5, 250, 450])  # deletes some (in main, in the merged part, in the newer delta)
    assert mi.install_merge(plan, built)
    assert mi.main_n == 400 and mi.n == 600 and len(mi.delta_rows) == 200
    live = {r: t for r, t in docs.items() if r not in (5, 250, 450)}
    for query in ([0], [3, 5], [11, 2, 4, 6]):
        got = mi.bm25(query)
        for rid, score in brute_bm25(live, query, mi.k1, mi.b).items():
            assert got[mi.position(rid)] == pytest.approx(score, rel=1e-4)
    stale = mi.merge_plan()
    built = MemIndex.build_merge(stale)
    mi.compact()  # positions renumbered: the plan's positions mean nothing now
    assert not mi.install_merge(stale, built)


def test_a_compaction_built_off_the_lock_keeps_what_happened_meanwhile(monkeypatch):
    """The maintenance thread plans under the read lock and builds with no lock held, while
    writes go on; the install must carry over rows appended, deletes, date edits and late
    vectors, and score like a fresh index. Small segments so real ones are resealed."""
    from rag_core.stores import vector_index as vx

    monkeypatch.setattr(vx, "SEAL_ROWS", 100)
    rng = random.Random(3)
    docs = {rid: [rng.randrange(12) for _ in range(rng.randrange(1, 20))] for rid in range(1, 3301)}
    vecs = {rid: np.random.default_rng(rid).normal(size=4).astype(np.float32) for rid in docs}
    items = list(docs.items())

    def vrow(rid, terms, with_vec=True):
        r = row(rid, terms)
        return (r[0], r[1], r[2], r[3], vecs[rid].tobytes() if with_vec else b"", r[5], 0)

    mi = MemIndex()
    mi.background = True  # as a store sets it: kill() leaves the compaction to maintenance
    mi.append([vrow(r, t, with_vec=r != 40) for r, t in items[:3000]])  # row 40 waits for its vector
    mi.merge()
    mi.append([vrow(r, t) for r, t in items[3000:3100]])  # a delta at plan time
    first_dead = [r for r in docs if r <= 3100 and r % 5 < 2 and r not in (40,)]
    mi.kill(first_dead)
    assert mi.compact_wanted and mi.compactions == 0  # not compacted inline under the lock
    plan = mi.compaction_plan()
    built = MemIndex.build_compaction(plan)
    # meanwhile (each under the write lock in a store), with merges due at once: none runs
    # inline while the compaction is built (it would make the plan stale)
    threshold = MemIndex.merge_threshold
    monkeypatch.setattr(MemIndex, "merge_threshold", lambda self: 1)
    mi.append([vrow(r, t, with_vec=r != 3150) for r, t in items[3100:]])  # rows appended after the plan
    mi.kill([7, 3160])  # a delete among the planned rows and among the new ones
    mi.set_vectors([40], vecs[40][None, :])  # a late vector for a row now sealed in a new segment
    mi.set_days([9], [20000])  # a date edit
    assert mi.install_compaction(plan, built)
    monkeypatch.setattr(MemIndex, "merge_threshold", threshold)
    dead = set(first_dead) | {7, 3160}
    live = {r: t for r, t in docs.items() if r not in dead}
    assert mi.n == len(live) + 2 and mi.dead == 2  # the two later deletes wait for the next compaction
    assert all(mi.position(r) is None for r in dead) and mi.position(9) is not None
    assert mi.day[mi.position(9)] == 20000
    for query in ([0], [3, 5], [1, 1, 9], [11, 2, 4, 6]):
        got = mi.bm25(query)
        for rid, score in brute_bm25(live, query, mi.k1, mi.b).items():
            assert got[mi.position(rid)] == pytest.approx(score, rel=1e-4), rid
    has = [r for r in live if r != 3150]
    got = mi.vecs.get([mi.position(r) for r in has])
    assert np.allclose(got, np.stack([vecs[r] for r in has]), atol=2e-3)  # fp16 in sealed segments
    assert not mi.has_vec[mi.position(3150)] and mi.has_vec[mi.position(40)]
    mi.set_vectors([3150], vecs[3150][None, :])  # the layout still takes late vectors
    assert np.allclose(mi.vecs.get([mi.position(3150)]), vecs[3150], atol=2e-3)
    # a merge landing while a compaction is built makes its plan stale
    mi.kill([r for r in live if r % 5 == 2][:1100])
    stale = mi.compaction_plan()
    built = MemIndex.build_compaction(stale)
    vecs[5000] = vecs[1]
    mi.append([vrow(5000, [1, 2])])
    mi.merge()
    assert not mi.install_compaction(stale, built) and mi.compactions == 1
    mi.compact()
    assert mi.compactions == 2 and mi.dead == 0
