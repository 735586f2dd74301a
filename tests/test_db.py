"""The database's read pool: reads never queue behind a write, and a thread sees its own
uncommitted writes inside its transaction (real SQLite file, WAL)."""

from __future__ import annotations

import threading
import time

from rag_core.db import READ_POOL, Database


def test_reads_do_not_wait_for_a_long_write_and_see_the_last_commit(tmp_path):
    db = Database(tmp_path / "g.db")
    db.executescript("CREATE TABLE t (x INTEGER)")
    with db.transaction() as c:
        c.execute("INSERT INTO t VALUES (1)")
    in_tx, release = threading.Event(), threading.Event()

    def writer():
        with db.transaction() as c:
            c.execute("INSERT INTO t VALUES (2)")
            assert db.query_one("SELECT COUNT(*) FROM t")[0] == 2  # its own write, uncommitted
            in_tx.set()
            release.wait(5)

    w = threading.Thread(target=writer)
    w.start()
    in_tx.wait(5)
    t = time.perf_counter()
    assert db.query_one("SELECT COUNT(*) FROM t")[0] == 1  # another thread: the last commit
    assert time.perf_counter() - t < 0.5  # and at once, not after the write
    release.set()
    w.join(5)
    assert db.query_one("SELECT COUNT(*) FROM t")[0] == 2
    db.close()


def test_the_pool_is_bounded_and_reads_in_parallel(tmp_path):
    db = Database(tmp_path / "g.db")
    db.executescript("CREATE TABLE t (x INTEGER)")
    errors = []

    def reader():
        try:
            for _ in range(50):
                db.query("SELECT COUNT(*) FROM t")
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    ts = [threading.Thread(target=reader) for _ in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert not errors and db._pooled <= READ_POOL
    db.close()
