"""Untrusted files are parsed in a separate worker process with a memory cap and a time
limit, so a decompression bomb, a parser bug that loops, or a file that needs gigabytes
fails alone, with a reason, and never takes the app or the rest of the batch with it.

One worker is reused across files (starting Python and importing the parsers costs ~1 s);
it is killed and restarted only after a file broke it. `close()` stops it for good (the
owner's shutdown: Ingestor.close, called when the Workspace closes).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import resource
import sys
import threading
import types
from contextlib import contextmanager
from pathlib import Path

from ..errors import LoadError, OcrUnavailable
from ..models import LoadedDocument

log = logging.getLogger(__name__)


def _serve(conn, memory_mb: int) -> None:  # pragma: no cover - runs in the child process
    # The cap counts address space, and glibc gives each thread that contends for the heap an
    # arena of its own (64 MB reserved each, up to 8 per core): OCR's ONNX threads on a busy
    # machine then reserved past 2 GB (VmPeak 1.7 GB idle) and a one-page scan failed "needs
    # more than the memory limit" while its heap held 0.8 GB. Two arenas bound that.
    from ..process import bound_malloc_arenas

    bound_malloc_arenas(2)
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import logging

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    from .loaders import load_file

    served = 0
    while True:
        try:
            req = conn.recv()
        except EOFError:
            return
        path, name, max_pages, ocr, password = req
        served += 1
        # A worker that has read other files may lack room that a fresh one has (its heap
        # grown by an earlier file, under the address-space cap): the parent retries there.
        fresh_may_help = "retry" if served > 1 else "error"
        try:
            docs = load_file(Path(path), display_name=name, max_pages=max_pages, ocr=ocr, password=password,
                             on_progress=lambda: conn.send(("progress", None)))
            conn.send(("ok", docs))
        except OcrUnavailable as exc:
            conn.send((fresh_may_help, str(exc)))
        except LoadError as exc:
            conn.send(("error", str(exc)))
        except MemoryError:
            conn.send((fresh_may_help, f"reading it needs more than the {memory_mb} MB memory limit"))
        except RecursionError:
            conn.send(("error", "the file is nested too deeply to read"))
        except Exception as exc:  # noqa: BLE001 - a parser bug on this file, not ours to crash on
            conn.send(("error", f"could not be read ({type(exc).__name__})"))


_MAIN_LOCK = threading.Lock()


@contextmanager
def _neutral_main():
    """Start the worker without re-running the parent's main script. A spawned child imports
    the parent's `__main__` from its file; under Streamlit that is the app script (Streamlit puts
    it in sys.modules["__main__"] while it runs), so every worker ran the whole app — without a
    script context, inside the worker's memory cap — and OCR failed there as "no text". The
    worker needs nothing from any main module: it imports rag_core by name."""
    with _MAIN_LOCK:
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")  # no __file__, no __spec__: nothing to re-run
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main


class IsolatedLoader:
    def __init__(self, timeout_s: float = 120.0, memory_mb: int = 3072):
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self._proc = None
        self._conn = None
        self._closed = False
        # One request at a time on the pipe: two sessions uploading at once must not read
        # each other's answers (the worker serves requests in order, one connection).
        self._lock = threading.Lock()

    def _ensure(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            return
        # spawn, not fork: the parent holds onnxruntime threads, and forking a threaded
        # process can deadlock the child.
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.memory_mb), daemon=True)
        with _neutral_main():
            self._proc.start()
        child.close()
        self._conn = parent

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(timeout=5)
        self._proc = self._conn = None

    @property
    def pid(self) -> int | None:
        """The worker's process id while one is running (None before the first file)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.is_alive() else None

    def load(self, path: Path, name: str, max_pages: int, ocr: bool = False,
             password: str | None = None) -> list[LoadedDocument]:
        """The time limit is for silence, not for the whole file: OCR reports every page, so
        a 300-page scan may take minutes while a reader stuck on one page is still stopped.
        A password travels through the pipe only; it is never written anywhere."""
        with self._lock:
            if self._closed:
                raise LoadError("the reader was shut down (the workspace is closing)")
            return self._load(path, name, max_pages, ocr, password)

    def _load(self, path: Path, name: str, max_pages: int, ocr: bool, password: str | None,
              retried: bool = False) -> list[LoadedDocument]:
        self._ensure()
        conn = self._conn  # close() may run meanwhile: it stops the worker, and this read sees EOF
        conn.send((str(path), name, max_pages, ocr, password))
        while True:
            if not conn.poll(self.timeout_s):
                self._kill()
                raise LoadError(f"reading it took longer than {self.timeout_s:.0f} s; skipped (RAG_INGEST_TIMEOUT_S)")
            try:
                status, payload = conn.recv()
            except (EOFError, OSError):
                self._kill()
                if self._closed:
                    raise LoadError("the reader was shut down (the workspace is closing)") from None
                raise LoadError(
                    f"the reader crashed on this file (it may need more than the {self.memory_mb} MB memory limit)"
                ) from None
            if status == "progress":
                continue
            if status == "retry" and not retried:
                log.warning("%s: %s; retrying in a fresh reader process", name, payload)
                self._kill()
                return self._load(path, name, max_pages, ocr, password, retried=True)
            if status in ("error", "retry"):
                raise LoadError(payload)
            return payload

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the worker for good: SIGTERM, wait up to `timeout_s`, then SIGKILL (and reap
        it). Safe to call twice, and while another thread is reading a file: that read ends
        with a LoadError instead of waiting for its time limit. Later `load` calls are
        refused rather than starting a new worker nobody would stop."""
        self._closed = True
        _stop(self._proc, timeout_s)
        # The pipe is closed by whoever holds the lock: a reader mid-file owns it until its
        # read sees the worker gone (at once, after the stop above).
        if self._lock.acquire(timeout=timeout_s):
            try:
                _stop(self._proc, timeout_s)  # one a load started just before `_closed` was set
                if self._conn is not None:
                    self._conn.close()
                self._proc = self._conn = None
            finally:
                self._lock.release()


def _stop(proc, timeout_s: float) -> None:
    if proc is None:
        return
    if proc.is_alive():
        proc.terminate()
        proc.join(timeout_s)
    if proc.is_alive():
        proc.kill()
    proc.join(timeout_s)  # reaps it: no zombie left behind
