"""ONNX sessions shared by concurrent callers without a global lock.

onnxruntime's `run` is thread-safe. What a lock used to prevent is oversubscription: two
calls each running on all cores' worth of threads. So a model keeps two sessions: a *wide*
one (all cores, or the configured thread count) for a call that runs alone — a lone user's
latency is what it was — and a *narrow* one (one thread, the calling thread) for calls that
overlap, so N concurrent calls use N cores' worth of threads instead of queueing behind one
another. The narrow session is loaded when calls first overlap.

Why not one thread always (a decision, measured with benchmarks/concurrency.py on a 100k
knowledge base, 2 cores): pinned to one thread, one session does 1.61 operations/s and four
do 3.06 (1.90×); with this pair one session does 2.30/s (a lone answer p50 601 ms, not
922 ms, using 1.62 cores) and four do 3.00 using 1.98 of the 2 cores — the machine's
ceiling either way. Pinning would only slow a lone user down to make the ratio look better.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from .errors import MissingDependency


def cpu_session(model_path, threads: int = 0):
    """An onnxruntime CPU session with the options both bundled models need."""
    try:
        import onnxruntime as ort
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependency("the bundled models need onnxruntime: pip install -r requirements.txt") from exc

    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # Idle pool threads sleep instead of spinning: a spinning pool kept both cores busy for
    # one user (1.98 cores for 1 session), leaving nothing for a second session.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # The arena allocator keeps a buffer per input shape it has seen; with batches of every
    # length that grew a long ingest past 2 GB. Plain malloc costs ~nothing here.
    opts.enable_cpu_mem_arena = False
    return ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])


# Overlap is counted across every model, not per model: a reader call that starts while
# another session's embedding runs is not alone, and two wide sessions would oversubscribe
# the cores just as two wide calls of one model would.
_busy_lock = threading.Lock()
_busy = 0


class SessionPair:
    def __init__(self, make: Callable[[int], object], threads: int = 0):
        """`make(threads)` builds an InferenceSession (0: onnxruntime's default, all cores)."""
        self._make = make
        self.wide = make(threads)
        self._narrow = None

    @contextmanager
    def session(self) -> Iterator[object]:
        global _busy
        with _busy_lock:
            _busy += 1
            crowded = _busy > 1
            if crowded and self._narrow is None:
                self._narrow = self._make(1)
            chosen = self._narrow if crowded else self.wide
        try:
            yield chosen
        finally:
            with _busy_lock:
                _busy -= 1
