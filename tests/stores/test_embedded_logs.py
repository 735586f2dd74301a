"""The embedded store's change logs (`tombstones`, `vector_updates`) are how other processes
learn of deletes and late vectors. They are pruned once every live reader has applied them,
so they stay bounded, and no reader ever misses a change: one that fell behind the pruning
reloads its index from the chunk rows."""

from __future__ import annotations

import numpy as np

from rag_core.db import Database
from rag_core.models import Chunk, SearchFilters
from rag_core.stores.embedded import EmbeddedStore

DIM = 8


def log_rows(store: EmbeddedStore) -> int:
    return int(store.db.query_one("SELECT (SELECT COUNT(*) FROM tombstones) + (SELECT COUNT(*) FROM vector_updates)")[0])


def unit_vectors(n: int) -> np.ndarray:
    v = np.random.default_rng(3).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def sees_exactly(store: EmbeddedStore, vecs: np.ndarray, live: set[int], gone: set[int]) -> None:
    """Every live document found by its own vector (so its vector arrived), no deleted one
    found by its words or its vector."""
    assert store.count() == len(live)
    assert store.health()["ok"] and store.health()["vectors"] == len(live)
    for i in sorted(live)[::7]:
        top = store.vector_search(vecs[i], 1, SearchFilters())
        assert top and top[0].chunk.doc_id == f"d{i}" and top[0].score > 0.999
    found = {r.chunk.doc_id for r in store.keyword_search("common", 10_000, SearchFilters())}
    assert found == {f"d{i}" for i in live}
    for i in sorted(gone)[::7]:
        hit = store.vector_search(vecs[i], 1, SearchFilters(doc_ids=[f"d{i}"]))
        assert hit == []


def test_logs_stay_bounded_and_other_readers_see_every_change(tmp_path):
    path = tmp_path / "groundwork.db"
    writer = EmbeddedStore(Database(path))
    writer.prune_after = 100
    n = 600
    vecs = unit_vectors(n)
    for i in range(n):  # keyword-searchable first, vectors later (the ingest's two phases)
        writer.add_chunks([Chunk(chunk_id=f"kb/d{i}#0", doc_id=f"d{i}", kb_id="kb", text=f"common word{i}")], None)
    reader = EmbeddedStore(Database(path))  # another process's view: its own connection and index
    sleeper = EmbeddedStore(Database(path))  # loads the 600 rows, then idles through everything below
    # A reader holds pruning back until it has been silent for reader_ttl_s; make the sleeper
    # one by ageing its row (10 minutes by default).
    writer.db.conn.execute("UPDATE store_readers SET seen = 0 WHERE reader = ?", (sleeper._reader,))
    assert reader.keyword_search("word5", 5, SearchFilters())
    most = 0
    for i in range(n):
        assert writer.set_vectors([f"kb/d{i}#0"], vecs[i : i + 1]) == 1
        if i % 2:
            assert writer.delete_document("kb", f"d{i}") == 1
        if i % 20 == 0:
            reader.vector_search(vecs[i], 1, SearchFilters())  # the reader keeps up now and then
        most = max(most, log_rows(writer))
    # 600 vector updates + 300 deletes were logged; only about prune_after are ever kept
    assert most <= writer.prune_after + 60, most
    assert int(writer.db.query_one("SELECT value FROM store_meta WHERE key='pruned_tomb'")[0]) > 0
    live, gone = {i for i in range(n) if i % 2 == 0}, {i for i in range(n) if i % 2}
    sees_exactly(reader, vecs, live, gone)
    assert reader.reloads == 0  # it kept up: every change replayed from the logs, none pruned before it
    # the sleeper's unapplied changes were pruned: it notices and reloads from the chunk rows
    sees_exactly(sleeper, vecs, live, gone)
    assert sleeper.reloads == 1

    # a closed store no longer holds pruning back; a new one starts from the rows
    reader.close()
    assert writer.db.query_one("SELECT COUNT(*) FROM store_readers WHERE reader = ?", (reader._reader,))[0] == 0
    fresh = EmbeddedStore(Database(path))
    sees_exactly(fresh, vecs, live, gone)
    assert fresh.reloads == 0


def test_a_reader_that_keeps_up_holds_pruning_back(tmp_path):
    """Pruning never removes a change a live reader has not applied yet."""
    path = tmp_path / "groundwork.db"
    writer = EmbeddedStore(Database(path))
    writer.prune_after = 10
    reader = EmbeddedStore(Database(path))
    vecs = unit_vectors(60)
    for i in range(60):
        writer.add_chunks([Chunk(chunk_id=f"kb/d{i}#0", doc_id=f"d{i}", kb_id="kb", text=f"common word{i}")],
                          vecs[i : i + 1])
    reader.keyword_search("common", 1, SearchFilters())
    for i in range(0, 60, 2):
        writer.delete_document("kb", f"d{i}")
    assert log_rows(writer) == 30  # the reader has applied none of them: all kept
    sees_exactly(reader, vecs, set(range(1, 60, 2)), set(range(0, 60, 2)))
    assert reader.reloads == 0
