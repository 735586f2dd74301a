"""Who works on a row: leases with heartbeats instead of PIDs (rag_core/leases.py), on a real
SQLite file with two independent connections standing for two processes."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

from rag_core.appdb import AppDB
from rag_core.db import Database
from rag_core.ingest.jobs import JobQueue
from rag_core.models import Document


def two_processes(tmp_path, seconds: float):
    a, b = Database(tmp_path / "g.db"), Database(tmp_path / "g.db")
    return AppDB(a, lease_seconds=seconds), AppDB(b, lease_seconds=seconds)


def searchable(db: AppDB, doc_id: str = "d1") -> None:
    db.db.executescript("INSERT OR IGNORE INTO kbs (kb_id, name, created_at) VALUES ('k', 'K', 0)")
    db.begin_document(Document(doc_id=doc_id, kb_id="k", source="s.txt", title="", mime="text/plain", sha256="x"))
    db.mark_searchable("k", doc_id, 3)


def set_holder(db: AppDB, owner: str, until: float, doc_id: str = "d1") -> None:
    with db.db.transaction() as c:
        c.execute("UPDATE documents SET lease_owner=?, lease_until=? WHERE doc_id=?", (owner, until, doc_id))


def test_a_live_holder_keeps_its_row_and_a_silent_one_loses_it(tmp_path):
    a, b = two_processes(tmp_path, seconds=0.6)
    searchable(a)
    assert a.claim_for_vectors("k", "d1")
    assert not b.claim_for_vectors("k", "d1")
    time.sleep(1.5)  # past the lease: the heartbeat renewed it meanwhile
    assert not b.claim_for_vectors("k", "d1")
    a.leases._stop.set()  # a hangs (or its host goes away): its heartbeat stops, nothing is released
    a.leases._thread.join()
    assert not b.claim_for_vectors("k", "d1")  # not before the lease runs out
    time.sleep(1.0)
    assert b.claim_for_vectors("k", "d1")
    assert not a.claim_for_vectors("k", "d1")  # and a cannot take it back while b renews


def test_a_stopped_keeper_gives_its_rows_up_at_once(tmp_path):
    """Workspace.close stops the keeper: the rows it held are free for the next holder without
    waiting out the lease (a job resumed in the same process found 90 documents still held)."""
    a, b = two_processes(tmp_path, seconds=30)
    searchable(a)
    assert a.claim_for_vectors("k", "d1") and not b.claim_for_vectors("k", "d1")
    a.leases.stop()
    assert b.claim_for_vectors("k", "d1")


def test_a_reused_pid_does_not_keep_a_dead_writer_s_row_forever(tmp_path):
    """With PIDs, a new process that got the dead writer's number kept its row alive for good."""
    a, b = two_processes(tmp_path, seconds=30)
    searchable(a)
    import os

    alive_pid = os.getpid()  # a running process with "the dead writer's" number
    set_holder(a, f"{socket.gethostname()}:{alive_pid}:old-writer", time.time() + 0.3)
    assert not b.claim_for_vectors("k", "d1")  # the lease still runs
    time.sleep(0.5)
    assert b.claim_for_vectors("k", "d1")  # once it ran out, the row is free despite the live PID


def test_another_host_s_holder_counts_until_its_lease_runs_out(tmp_path):
    a, b = two_processes(tmp_path, seconds=30)
    searchable(a)
    set_holder(a, "other-host:1:abc", time.time() + 60)
    assert not b.claim_for_vectors("k", "d1")  # PID 1 means nothing here; the lease does
    set_holder(a, "other-host:1:abc", time.time() - 1)
    assert b.claim_for_vectors("k", "d1")


def test_a_dead_local_holder_is_taken_over_at_once(tmp_path):
    a, b = two_processes(tmp_path, seconds=30)
    searchable(a)
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()  # a process of this host that has exited
    set_holder(a, f"{socket.gethostname()}:{p.pid}:gone", time.time() + 60)
    assert b.claim_for_vectors("k", "d1")


def test_concurrent_claims_have_exactly_one_winner(tmp_path):
    a, b = two_processes(tmp_path, seconds=30)
    for i in range(40):
        searchable(a, f"d{i}")
    wins: dict[str, list[str]] = {}
    barrier = threading.Barrier(2)

    def claim(db: AppDB, who: str) -> None:
        barrier.wait()
        for i in range(40):
            if db.claim_for_vectors("k", f"d{i}"):
                wins.setdefault(f"d{i}", []).append(who)

    ts = [threading.Thread(target=claim, args=(a, "a")), threading.Thread(target=claim, args=(b, "b"))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(wins) == sorted(f"d{i}" for i in range(40))
    assert all(len(w) == 1 for w in wins.values()), wins


def test_stale_documents_and_orphan_jobs_follow_the_lease(tmp_path):
    a, b = two_processes(tmp_path, seconds=30)
    a.db.executescript("INSERT OR IGNORE INTO kbs (kb_id, name, created_at) VALUES ('k', 'K', 0)")
    a.begin_document(Document(doc_id="half", kb_id="k", source="s.txt", title="", mime="text/plain", sha256="x"))
    assert b.stale_documents() == []  # a is alive and renewing
    set_holder(a, "other-host:7:t", time.time() - 1, doc_id="half")
    assert [d.doc_id for d in b.stale_documents()] == ["half"]

    qa, qb = JobQueue(a.db, tmp_path / "up"), JobQueue(b.db, tmp_path / "up")
    job = qa.submit("k", [("f.txt", b"text")], "alice")
    assert qa.claim_next().job_id == job
    assert qb.requeue_orphans() == 0  # its worker holds it
    with a.db.transaction() as c:
        c.execute("UPDATE ingest_jobs SET lease_owner='other-host:7:t', lease_until=? WHERE job_id=?",
                  (time.time() - 1, job))
    assert qb.requeue_orphans() == 1
    assert qb.get(job).status == "queued"
