"""The persisted index: a reopened store maps its snapshot and catches up with what other
processes did since, and answers exactly as a store loaded from SQLite would. Real SQLite
files, real faiss graphs; small thresholds so a few thousand chunks make several segments."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from rag_core.db import Database
from rag_core.models import Chunk, SearchFilters
from rag_core.stores import vector_index as vx
from rag_core.stores.embedded import EmbeddedStore

WORDS = "river delta basin estuary tide marsh lagoon reef atoll fjord glacier moraine".split()
DIM = 16


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    monkeypatch.setattr(vx, "SEAL_ROWS", 200)
    monkeypatch.setattr(vx, "MERGE_FACTOR", 4)
    monkeypatch.setattr(vx, "EXACT_FILTERED", 20)
    monkeypatch.setattr(EmbeddedStore, "snapshot_min", 200)


def vec(i: int) -> np.ndarray:
    v = np.random.default_rng(i).normal(size=DIM)
    return (v / np.linalg.norm(v)).astype(np.float32)


def doc(kb: str, d: int, n: int = 50) -> list[Chunk]:
    return [Chunk(chunk_id=f"{kb}/d{d}#{i}", doc_id=f"d{d}", kb_id=kb, ordinal=i,
                  text=f"{WORDS[(d + i) % 12]} {WORDS[(d * 7 + i) % 12]} note {d}-{i}") for i in range(n)]


def add(store, kb, d, vectors=True):
    chunks = doc(kb, d)
    store.add_chunks(chunks, np.stack([vec(d * 1000 + c.ordinal) for c in chunks]) if vectors else None)
    return chunks


def answers(store) -> list:
    """Each result list as its scores (4 places) and the ids scoring above its last score:
    rows tied at the cut may differ in the last bit of a float sum and are left out."""
    out = []
    for q in range(8):
        v = vec(q * 1000 + 3)
        for f in (SearchFilters(), SearchFilters(kb_ids=["b"])):
            for res in (store.hybrid_search(WORDS[q], v, 10, f),
                        store.keyword_search(f"{WORDS[q]} {WORDS[q + 1]}", 10, f),
                        store.vector_search(v, 10, f)):
                scores = [round(r.score, 4) for r in res]
                out.append((scores, {r.chunk.chunk_id for r in res if round(r.score, 4) > min(scores)}))
    return out


def same_index(a, b) -> None:
    """Two stores hold the same rows, keyword statistics and vectors (their graphs may be cut
    differently, so approximate results are not compared here)."""
    for q in range(11):
        for f in (SearchFilters(), SearchFilters(kb_ids=["b"])):
            ra, rb = (s.keyword_search(f"{WORDS[q]} {WORDS[q + 1]}", 4000, f) for s in (a, b))
            assert [(r.chunk.chunk_id, round(r.score, 4)) for r in ra] == [(r.chunk.chunk_id, round(r.score, 4)) for r in rb]
    ids = sorted(r.chunk.chunk_id for r in a.keyword_search("note", 10**6, SearchFilters()))
    assert ids == sorted(r.chunk.chunk_id for r in b.keyword_search("note", 10**6, SearchFilters()))
    assert np.allclose(a.vectors_for(ids), b.vectors_for(ids), atol=2e-3)


def fresh(path):
    """A store loaded from SQLite alone (the snapshot set aside), the reference."""
    s = EmbeddedStore.__new__(EmbeddedStore)
    folder = path.with_name(path.name + "-index")
    hidden = folder.with_name(folder.name + "-hidden")
    if folder.exists():
        folder.rename(hidden)
    s.snapshot_min = 10**9  # writes none
    try:
        s.__init__(Database(path))
        s.wait_maintenance()
        s.maintain()  # same graphs as the snapshot's: built over the same rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if hidden.exists():
            hidden.rename(folder)
    return s


def build(path, docs=40):
    s = EmbeddedStore(Database(path))
    for d in range(docs):
        add(s, "a" if d % 4 else "b", d)
    s.close()


def test_reopen_maps_the_snapshot_and_answers_as_a_full_load(tmp_path):
    path = tmp_path / "g.db"
    build(path)
    assert (tmp_path / "g.db-index" / "CURRENT").exists()
    s = EmbeddedStore(Database(path))
    assert s.snapshot_loaded and s.health()["ok"]
    assert len(s._mi.vecs.segments) >= 2 and all(seg.files for seg in s._mi.vecs.segments)
    ref = fresh(path)
    assert not ref.snapshot_loaded
    assert answers(s) == answers(ref)


def test_what_happened_after_the_snapshot_is_caught_up(tmp_path):
    path = tmp_path / "g.db"
    build(path)
    other = EmbeddedStore(Database(path))  # another process, after the snapshot was written
    other.snapshot_min = 10**9  # ...that writes none itself
    for d in (3, 8, 17):
        other.delete_document("a" if d % 4 else "b", f"d{d}")
    add(other, "b", 100)
    late = add(other, "b", 101, vectors=False)  # searchable by keyword first...
    other.set_vectors([c.chunk_id for c in late], np.stack([vec(101_000 + c.ordinal) for c in late]))
    other.set_document_date("b", "d100", 20000)
    s = EmbeddedStore(Database(path))
    assert s.snapshot_loaded and s.health()["ok"]
    got = {r.chunk.doc_id for r in s.keyword_search("note", 4000, SearchFilters())}
    assert not got & {"d3", "d8", "d17"} and {"d100", "d101"} <= got
    hit = s.vector_search(vec(101_000 + 5), 1, SearchFilters())[0]
    assert hit.chunk.chunk_id == "b/d101#5" and hit.score == pytest.approx(1.0, abs=1e-3)
    dated = s.keyword_search("note", 100, SearchFilters(after="1954-10-01"))
    assert {r.chunk.doc_id for r in dated} == {"d100"}
    same_index(s, fresh(path))


def test_deletes_pruned_from_the_log_are_found_by_the_live_ids(tmp_path):
    path = tmp_path / "g.db"
    build(path)
    other = EmbeddedStore(Database(path))
    other.snapshot_min = 10**9
    other.prune_after = 1  # the tombstones are gone before the snapshot's reader comes back
    for d in range(1, 40, 2):
        other.delete_document("a" if d % 4 else "b", f"d{d}")
    other.close()
    s = EmbeddedStore(Database(path))
    assert s.snapshot_loaded and s.health()["ok"]
    assert s._meta("pruned_tomb") > json.loads(
        (tmp_path / "g.db-index" / (tmp_path / "g.db-index" / "CURRENT").read_text()).read_text())["last_tomb"]
    assert {int(r.chunk.doc_id[1:]) % 2 for r in s.keyword_search("note", 4000, SearchFilters())} == {0}
    same_index(s, fresh(path))


def test_a_broken_or_foreign_snapshot_is_ignored(tmp_path):
    path = tmp_path / "g.db"
    build(path)
    folder = tmp_path / "g.db-index"
    manifest = folder / (folder / "CURRENT").read_text()
    victim = folder / json.loads(manifest.read_text())["files"]["post_pos"]
    victim.write_bytes(b"not an array")
    s = EmbeddedStore(Database(path))
    assert not s.snapshot_loaded and s.health()["ok"]
    assert len(s.keyword_search("note", 4000, SearchFilters())) == 2000
    s.close()  # writes a good one again
    assert EmbeddedStore(Database(path)).snapshot_loaded
    # a database recreated in the same place: the old snapshot is not its index
    for f in tmp_path.glob("g.db*"):
        if f.is_file():
            f.unlink()
    s = EmbeddedStore(Database(path))
    assert not s.snapshot_loaded and s.count() == 0
    assert s.keyword_search("note", 10, SearchFilters()) == []


def test_snapshots_during_a_long_ingest_are_spaced_by_their_cost(tmp_path):
    """A snapshot is rewritten after 10% growth, but no sooner than ten times the last
    write's duration after it; closing writes whatever changed regardless."""
    path = tmp_path / "g.db"
    s = EmbeddedStore(Database(path))
    for d in range(8):
        add(s, "a", d)
    s.wait_maintenance()
    with s._sync_lock.write():
        s._mi.merge()  # the snapshot holds the main keyword segment
    s.maintain()
    assert s._saved is not None and s._saved[1] == s._mi.main_n  # written once past snapshot_min
    for d in range(8, 12):  # +50%
        add(s, "a", d)
    s.wait_maintenance()
    with s._sync_lock.write():
        s._mi.merge()
    s._save_cost = 3600.0  # as if the last write had taken an hour: not due for ten
    assert not s._snapshot_due(s._mi)
    assert s._snapshot_due(s._mi, final=True)
    s._save_cost = 0.0
    assert s._snapshot_due(s._mi)
    s._save_cost = 3600.0
    s.close()  # final: written although the spacing says not yet
    snap = EmbeddedStore(Database(path))
    try:
        assert snap.snapshot_loaded and snap._mi.main_n == 12 * 50
    finally:
        snap.close()


def test_deletes_compact_off_the_lock_while_searches_go_on(tmp_path, monkeypatch):
    """Deleting a third of the rows compacts the index on the maintenance thread: a search
    runs while the compaction is being built (under the old inline compaction it waited for
    the whole build), and the result, written as a snapshot and reopened, equals a fresh load."""
    import threading

    from rag_core.stores.memindex import MemIndex

    path = tmp_path / "g.db"
    build(path, docs=60)  # 3,000 chunks
    s = EmbeddedStore(Database(path))
    building, release = threading.Event(), threading.Event()
    real = MemIndex.build_compaction

    def slow_build(plan, cancelled=None):
        building.set()
        assert release.wait(30)
        return real(plan, cancelled)

    monkeypatch.setattr(MemIndex, "build_compaction", staticmethod(slow_build))
    for d in range(0, 60, 3):
        s.delete_document("a" if d % 4 else "b", f"d{d}")
    for d in range(1, 60, 3)[:4]:  # 24 documents, 1,200 chunks: past a third
        s.delete_document("a" if d % 4 else "b", f"d{d}")
    assert building.wait(30)  # the build is under way, holding no lock...
    found = []
    t = threading.Thread(target=lambda: found.append(s.keyword_search("note", 4000, SearchFilters())))
    t.start()
    t.join(10)
    assert found and not t.is_alive()  # ...so a search answers meanwhile
    gone = {f"d{d}" for d in range(0, 60, 3)} | {f"d{d}" for d in range(1, 60, 3)[:4]}
    assert len(found[0]) == 1800 and not {r.chunk.doc_id for r in found[0]} & gone
    add(s, "b", 200)  # a write lands during the build too
    release.set()
    s.wait_maintenance()
    # planned once a third was dead (21 documents); the three deleted during the build stay dead
    assert s._mi.compactions == 1 and s._mi.dead == 150 and s._mi.n == 2000
    after = {r.chunk.doc_id for r in s.keyword_search("note", 4000, SearchFilters())}
    assert len(after) == 37 and "d200" in after and not after & gone
    s.close()
    reopened = EmbeddedStore(Database(path))
    assert reopened.snapshot_loaded and reopened._mi.n == 2000  # the compacted layout was written
    same_index(reopened, fresh(path))


def test_closing_gives_up_a_compaction_being_built_and_the_next_open_compacts(tmp_path, monkeypatch):
    import threading
    import time

    path = tmp_path / "g.db"
    build(path, docs=60)
    s = EmbeddedStore(Database(path))
    started, real = threading.Event(), vx.build_graph

    def slow_graph(v):
        started.set()
        time.sleep(1.0)  # a big segment's graph
        return real(v)

    monkeypatch.setattr(vx, "build_graph", slow_graph)
    for d in range(0, 60, 3):
        s.delete_document("a" if d % 4 else "b", f"d{d}")
    s.delete_document("a", "d1")  # 1,050 of 3,000 dead: the compaction starts
    assert started.wait(30)
    t = time.perf_counter()
    s.close()
    assert time.perf_counter() - t < 5  # not the ~9 graphs (≥ 9 s) the compaction still had to build
    assert s._mi.compactions == 0
    monkeypatch.setattr(vx, "build_graph", real)
    again = EmbeddedStore(Database(path))
    assert again.snapshot_loaded and again._mi.dead == 1050
    again.wait_maintenance()
    assert again._mi.compactions == 1 and again._mi.n == 1950
    same_index(again, fresh(path))
