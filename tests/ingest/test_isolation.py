"""Closing the ingestor stops its isolated loader's worker process (Workspace.close calls it)."""

from __future__ import annotations

import os
import threading

import pytest

from rag_core.config import get_settings
from rag_core.errors import LoadError
from rag_core.ingest.isolation import IsolatedLoader
from rag_core.ingest.pipeline import Ingestor


def gone(pid: int) -> bool:
    """True when no process `pid` exists any more (killed and reaped, not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_close_stops_the_loader_process(tmp_path):
    settings = get_settings(tmp_path / "data")
    assert settings.ingest_timeout_s > 0  # the isolated loader is in use
    ingestor = Ingestor(settings, appdb=None, store=None, embedder=None)  # load() needs neither
    f = tmp_path / "note.txt"
    f.write_text("A short note about herons.")
    assert ingestor.load(f, "note.txt")[0].pages == ["A short note about herons."]
    proc = ingestor._isolated._proc
    assert proc.is_alive()
    ingestor.close()
    assert not proc.is_alive() and gone(proc.pid)
    with pytest.raises(LoadError, match="shut down"):  # no new worker is started behind the owner's back
        ingestor.load(f, "note.txt")
    assert ingestor._isolated._proc is None
    ingestor.close()  # twice is fine


def test_close_without_a_worker_and_without_isolation(tmp_path):
    Ingestor(get_settings(tmp_path / "a"), None, None, None).close()  # never loaded: nothing to stop
    Ingestor(get_settings(tmp_path / "b", ingest_timeout_s=0), None, None, None).close()  # in-process loading


def test_close_while_a_file_is_being_read_ends_that_read(tmp_path):
    """A worker stuck on a file (CPython's csv.Sniffer backtracks for seconds on this line;
    see tests/reliability/test_bad_files.py) is stopped by close(), and the waiting read ends
    with a reason instead of waiting for its time limit."""
    loader = IsolatedLoader(timeout_s=120, memory_mb=1024)
    ok = tmp_path / "a.txt"
    ok.write_text("hello there")
    loader.load(ok, "a.txt", 10)
    proc = loader._proc
    slow = tmp_path / "slow.csv"
    slow.write_text('"' + 'a,"' * 21845)
    result: list[BaseException | object] = []

    def read() -> None:
        try:
            result.append(loader.load(slow, "slow.csv", 10))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            result.append(exc)

    t = threading.Thread(target=read)
    t.start()
    t.join(0.5)  # the request is on its way (the worker is busy with it, or about to be)
    loader.close()
    t.join(30)  # a wait, not a speed check: the read ends once its worker is gone
    assert not t.is_alive()
    assert not proc.is_alive() and gone(proc.pid)
    [outcome] = result
    # Either the worker was stopped mid-file (the usual case) or it finished first.
    assert isinstance(outcome, (LoadError, list)), outcome
    if isinstance(outcome, LoadError):
        assert "shut down" in str(outcome)


def test_the_worker_does_not_rerun_the_parents_main_script(tmp_path, monkeypatch):
    """Under Streamlit, sys.modules["__main__"] is the app script: a spawned worker used to
    import (run) it — the whole app, inside the worker's memory cap — and OCR then failed as
    "no text" through the Upload page only. Here the main script leaves a mark if it runs."""
    import sys
    import types

    from rag_core.ingest.isolation import IsolatedLoader

    mark = tmp_path / "main-ran"
    script = tmp_path / "fake_app.py"
    script.write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    fake_main = types.ModuleType("__main__")
    fake_main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", fake_main)
    doc = tmp_path / "note.md"
    doc.write_text("# Note\n\nThe worker read this.\n")
    loader = IsolatedLoader(timeout_s=60)
    try:
        docs = loader.load(doc, "note.md", max_pages=10)
    finally:
        loader.close()
    assert "The worker read this." in docs[0].pages[0]
    assert not mark.exists()
    assert sys.modules["__main__"] is fake_main  # put back
