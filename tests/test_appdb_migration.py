"""A data folder from before owners and leases opens with its knowledge bases and documents
intact (real SQLite file made with the old schema)."""

from __future__ import annotations

import sqlite3

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OLD = """
CREATE TABLE kbs (kb_id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE, description TEXT NOT NULL DEFAULT '',
  instructions TEXT NOT NULL DEFAULT '', grounded_only INTEGER NOT NULL DEFAULT 0, retrieval TEXT NOT NULL DEFAULT '{}',
  tenant TEXT, acl_users TEXT NOT NULL DEFAULT '[]', acl_groups TEXT NOT NULL DEFAULT '[]', created_at REAL NOT NULL);
CREATE TABLE documents (doc_id TEXT NOT NULL, kb_id TEXT NOT NULL REFERENCES kbs(kb_id) ON DELETE CASCADE,
  source TEXT NOT NULL, title TEXT NOT NULL DEFAULT '', mime TEXT NOT NULL DEFAULT '', sha256 TEXT NOT NULL,
  pages INTEGER NOT NULL DEFAULT 0, chunks INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
  created_at REAL NOT NULL, tenant TEXT, acl_users TEXT NOT NULL DEFAULT '[]', acl_groups TEXT NOT NULL DEFAULT '[]',
  stored_path TEXT, owner_pid INTEGER, PRIMARY KEY (kb_id, doc_id));
INSERT INTO kbs (kb_id, name, acl_users, created_at) VALUES ('k1', 'Board', '["ann"]', 1), ('k2', 'Open', '[]', 2);
INSERT INTO documents (doc_id, kb_id, source, sha256, chunks, status, created_at) VALUES ('d1', 'k1', 'a.txt', 'x', 0, 'indexed', 1);
"""


def test_old_folder_gets_owners_and_keeps_documents(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    settings = get_settings(data)
    c = sqlite3.connect(settings.db_path)
    c.executescript(OLD)
    c.close()
    ws = Workspace(settings)
    ann = Caller(user="ann")
    # the users named on a knowledge base were who could change it: they own it now
    assert ws.get_kb("Board", caller=ann).owners == ["ann"] and ws.can_write("Board", caller=ann)
    assert ws.get_kb("Open", caller=Caller.operator()).owners == []
    assert [d.doc_id for d in ws.appdb.list_documents("k1")] == ["d1"]  # the swap kept the references
    # the old table-wide UNIQUE name is gone: someone who cannot see "Board" may use the name
    assert ws.create_kb("board", caller=Caller(user="zed")).owners == ["zed"]
    ws.delete_kb("Board", caller=ann)  # the cascade still works after the swap
    assert ws.appdb.list_documents("k1", status=None) == []
    ws.close()


def test_the_embedding_cache_stays_bounded(tmp_path):
    """embed_cache grew forever; now it keeps at most max(floor, 2 x chunks indexed), oldest out."""
    import numpy as np

    from rag_core.appdb import AppDB
    from rag_core.db import Database

    db = AppDB(Database(tmp_path / "g.db"))
    for start in range(0, 300, 50):
        db.cache_vectors({f"k{i}": np.full(4, i, dtype=np.float32) for i in range(start, start + 50)})
        db.prune_embed_cache(floor=120)
    assert db.db.query_one("SELECT COUNT(*) FROM embed_cache")[0] == 120
    kept = db.cached_vectors([f"k{i}" for i in range(300)])
    assert sorted(kept) == sorted(f"k{i}" for i in range(180, 300))  # the newest survive
    assert kept["k299"][0] == 299.0


def test_cli_kb_update_sets_instructions_and_grounded_only(tmp_path, capsys):
    import json

    from rag_core.cli import main

    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "--user", "alice", "kb", "create", "HR", "--json"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", data, "--user", "alice", "kb", "update", "HR", "--instructions", "Answer briefly.",
                 "--grounded-only", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["instructions"] == "Answer briefly." and row["grounded_only"] is True
    assert main(["--data-dir", data, "--user", "alice", "kb", "update", "HR", "--no-grounded-only", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["grounded_only"] is False
