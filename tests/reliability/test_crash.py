"""Kill -9 in the middle of a large ingest: the store reopens consistent (no half document,
no orphan vectors; every document either fully keyword-searchable with its vectors pending,
or fully indexed), and running the ingest again completes it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from rag_core.config import get_settings
from rag_core.workspace import Workspace
from rag_core.access import Caller

REPO = Path(__file__).resolve().parents[2]
N = 300


def indexed_count(db: Path) -> int:
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        n = c.execute("SELECT COUNT(*) FROM documents WHERE status='indexed'").fetchone()[0]
        c.close()
        return n
    except sqlite3.Error:
        return 0


def consistency(ws: Workspace) -> tuple[int, int]:
    """(half documents, orphan chunks) as the registry and the store see them."""
    kb = ws.get_kb("big", caller=Caller.operator())
    half = 0
    for d in ws.appdb.list_documents(kb.kb_id):
        if len(ws.store.document_chunks(kb.kb_id, d.doc_id)) != d.chunks:
            half += 1
    known = {d.doc_id for d in ws.appdb.list_documents(kb.kb_id, status=None)}
    rows = ws.db.query("SELECT DISTINCT doc_id FROM chunks WHERE kb_id=?", (kb.kb_id,))
    orphans = sum(1 for r in rows if r[0] not in known)
    return half, orphans


def test_sigkill_mid_ingest_then_resume(tmp_path):
    data = tmp_path / "data"
    ws = Workspace(get_settings(data))
    ws.create_kb("big", caller=Caller.operator())
    ws.close()
    corpus = tmp_path / "big.jsonl"
    corpus.write_text("\n".join(json.dumps({"_id": f"r{i}", "title": f"Record {i}",
                                            "text": f"Record {i} talks about topic {i % 17} and item {i}."})
                                for i in range(N)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "ingest", "--kb", "big", str(corpus),
                             "--data-dir", str(data)], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while indexed_count(data / "groundwork.db") < 20 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the ingest finished before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    ws = Workspace(get_settings(data))
    kb_id = ws.get_kb("big", caller=Caller.operator()).kb_id
    indexed = len(ws.appdb.list_documents(kb_id, status="indexed"))
    waiting = len(ws.appdb.list_documents(kb_id, status="searchable"))
    assert 20 <= indexed < N
    # the keyword phase had finished (the file was parsed): the rest are searchable, vectors pending
    assert indexed + waiting == N
    assert ws.search(["big"], "item 299", k=1, mode="keyword", caller=Caller.operator()).results[0].chunk.doc_id == "r299"
    half, orphans = consistency(ws)
    assert half == 0 and orphans == 0
    assert ws.store.health()["ok"]
    # what the killed process had started is cleaned up; nothing indexed is lost
    ws.ingestor.recover_interrupted()
    assert ws.appdb.list_documents(ws.get_kb("big", caller=Caller.operator()).kb_id, status="indexing") == []
    ws.close()

    p = subprocess.run([sys.executable, "-m", "rag_core", "ingest", "--kb", "big", str(corpus), "--data-dir",
                        str(data), "--json"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    ws = Workspace(get_settings(data))
    kb = ws.get_kb("big", caller=Caller.operator())
    assert len(ws.appdb.list_documents(kb.kb_id, status="indexed")) == N  # the vectors were resumed
    assert consistency(ws) == (0, 0)
    ids = [c.chunk_id for d in ws.appdb.list_documents(kb.kb_id) for c in ws.store.document_chunks(kb.kb_id, d.doc_id)]
    assert (abs(ws.store.vectors_for(ids)).sum(axis=1) > 0).all()
    assert ws.store.count(kb.kb_id) == N and ws.store.health()["ok"]
    hit = ws.search(["big"], "item 299", k=1, mode="keyword", caller=Caller.operator()).results[0]
    assert hit.chunk.doc_id == "r299"
