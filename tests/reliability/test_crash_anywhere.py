"""Crash anywhere, lose nothing (issue 51): every write path killed with SIGKILL at a random
moment, then the invariants (benchmarks/crash_anywhere.py; the longer run is its benchmark).
Plus the one interruption the harness found, made deterministic: a delete that dies between the
store and the registry."""

from __future__ import annotations

import pytest

from benchmarks.crash_anywhere import FAULTS, PATHS, run_path
from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OP = Caller.operator()


@pytest.mark.parametrize("path", [p for p in PATHS if p not in FAULTS])  # those: every fault point, below
def test_a_kill_at_a_random_point_loses_nothing(path, tmp_path):
    r = run_path(path, runs=1, root=tmp_path, seed=51)
    assert r["runs"] == 1 and r["rerun_ok"] == 1
    assert r["violations"] == [], r["violations"]


@pytest.mark.parametrize("path", sorted(FAULTS))
def test_a_kill_at_every_named_fault_point_loses_nothing(path, tmp_path):
    """Opening an old folder (its migrations) and a compaction's snapshot rewrite, killed at each
    step the code names (rag_core/faults.py), then once at a random moment."""
    points = FAULTS[path]
    r = run_path(path, runs=len(points), root=tmp_path, seed=51)
    assert sorted(r["fault_points_hit"]) == sorted(p for p in points if p)  # each kill landed where named
    assert r["rerun_ok"] == len(points)
    assert r["violations"] == [], r["violations"]


def test_a_delete_that_dies_half_way_is_finished_on_reopening(tmp_path, monkeypatch):
    """Chunks-then-row left, after a kill between the two, a row listed as indexed with no
    chunks (a replaced version that never went away). Now the row is marked 'deleting' first,
    is out of every listing at once, and the next open finishes the delete."""
    from rag_core.appdb import AppDB

    (tmp_path / "a.md").write_text("# A\n\nThe harbour opens at six in the morning.\n")
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("k", caller=OP)
    ws.ingest("k", [tmp_path / "a.md"], caller=OP)
    doc = ws.list_documents("k", caller=OP)[0]

    def die(self, kb_id, doc_id):  # the process is killed here
        raise SystemExit("killed")

    monkeypatch.setattr(AppDB, "remove_document", die)
    with pytest.raises(SystemExit):
        ws.delete_document("k", doc.doc_id, caller=OP)
    assert ws.list_documents("k", caller=OP) == []  # already out of the listing
    monkeypatch.undo()
    ws.close()
    ws = Workspace(get_settings(tmp_path / "data"))
    try:
        kb = ws.get_kb("k", caller=OP)
        assert ws.appdb.list_documents(kb.kb_id, status=None) == []  # the row is gone too
        assert ws.store.document_chunks(kb.kb_id, doc.doc_id) == []
        assert ws.search(["k"], "harbour opens", k=3, mode="keyword", caller=OP).results == []
    finally:
        ws.close()


@pytest.mark.parametrize("path", ["ingest", "delete", "reingest", "reembed"])
def test_a_kill_loses_nothing_on_a_real_weaviate_server(path, tmp_path, weaviate_server, monkeypatch):
    """The document write paths again, with the chunks in a real Weaviate server."""
    monkeypatch.setenv("CRASH_STORE", "weaviate")
    monkeypatch.setenv("WEAVIATE_URL", weaviate_server.url)
    monkeypatch.setenv("WEAVIATE_GRPC_PORT", str(weaviate_server.grpc_port))
    r = run_path(path, runs=1, root=tmp_path, seed=51)
    assert r["runs"] == 1 and r["rerun_ok"] == 1
    assert r["violations"] == [], r["violations"]
