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
