"""The whole app on Weaviate: ingest, retrieve (the same LangChain retriever), answer,
delete, and migration from the embedded store without re-embedding."""

import json
import os
import subprocess
import sys
from pathlib import Path

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OP = Caller.operator()

REPO = Path(__file__).resolve().parents[2]


def test_workspace_on_weaviate_and_migration(tmp_path, weaviate_server):
    data = tmp_path / "data"
    emb = Workspace(get_settings(data))
    emb.create_kb("facts", caller=OP)
    (tmp_path / "paris.md").write_text("# France\n\nParis is the capital of France. The Seine flows through Paris.\n")
    (tmp_path / "moon.txt").write_text("The Moon orbits the Earth every 27.3 days.\n")
    emb.ingest("facts", [tmp_path / "paris.md", tmp_path / "moon.txt"], caller=OP)
    emb.close()

    env = {**os.environ, "PYTHONPATH": str(REPO), "WEAVIATE_URL": weaviate_server.url,
           "WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port)}
    p = subprocess.run([sys.executable, "-m", "rag_core", "migrate", "--to", "weaviate", "--data-dir", str(data), "--json"],
                       env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["documents"] == 2

    ws = Workspace(get_settings(data, store="weaviate", weaviate_url=weaviate_server.url,
                                weaviate_grpc_port=weaviate_server.grpc_port))
    try:
        assert ws.store.name == "weaviate" and ws.store.count(ws.get_kb("facts", caller=OP).kb_id) >= 2
        docs = ws.retriever(["facts"], caller=OP).invoke("capital of France")
        assert docs[0].metadata["source"] == "paris.md"
        a = ws.ask(["facts"], "What is the capital of France?", caller=OP)
        assert not a.abstained and a.citations[0].source == "paris.md"
        # ingest and delete straight into Weaviate
        (tmp_path / "owl.txt").write_text("Owls hunt at night using silent flight.")
        rep = ws.ingest("facts", [tmp_path / "owl.txt"], caller=OP).reports[0]
        assert rep.status == "ingested"
        assert ws.search(["facts"], "silent flight owls", k=1, caller=OP).results[0].chunk.source == "owl.txt"
        ws.delete_document("facts", rep.doc_ids[0], caller=OP)
        assert all(r.chunk.source != "owl.txt"
                   for r in ws.search(["facts"], "silent flight owls", k=5, caller=OP).results)
    finally:
        ws.store.client.collections.delete(ws.store.collection_name)
        ws.close()


def test_access_edit_applies_at_once_on_weaviate(tmp_path, weaviate_server):
    """The same rule on the Weaviate store: an edit of a knowledge base's access reaches the
    chunks already in Weaviate on the next question (their ingest-time stamps are not used)."""
    import pytest

    from rag_core.access import Caller
    from rag_core.errors import NotFound

    ws = Workspace(get_settings(tmp_path / "data", store="weaviate", weaviate_url=weaviate_server.url,
                                weaviate_grpc_port=weaviate_server.grpc_port))
    try:
        ws.create_kb("hr", tenant="acme", acl_groups=["hr"], caller=OP)
        (tmp_path / "salaries.txt").write_text("The salary review happens every March.")
        ws.ingest("hr", [tmp_path / "salaries.txt"], caller=OP)
        ann = Caller(user="ann", groups=frozenset({"hr"}), tenant="acme")
        bob = Caller(user="bob", groups=frozenset({"sales"}), tenant="acme")
        q = "When is the salary review?"
        assert "March" in ws.ask(["hr"], q, caller=ann).text
        with pytest.raises(NotFound):
            ws.ask(["hr"], q, caller=bob)
        ws.update_kb("hr", caller=OP, acl_groups=["sales"])  # bob in, ann out
        assert "March" in ws.ask(["hr"], q, caller=bob).text
        with pytest.raises(NotFound):
            ws.ask(["hr"], q, caller=ann)
        assert ws.search(["hr"], "salary review", k=5, caller=bob).results
    finally:
        ws.store.client.collections.delete(ws.store.collection_name)
        ws.close()
