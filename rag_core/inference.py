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

import os
import threading
from collections import OrderedDict, deque
from contextlib import contextmanager
from contextvars import ContextVar
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


# Who a model run is for: the API sets it per request from its caller (rag_core/api/answering.py);
# a Streamlit session or the CLI leaves it empty. It is only a queue's name, never a permission.
run_for: ContextVar[str] = ContextVar("run_for", default="")


class FairShare:
    """At most `capacity` model runs at once across every model, handed out in turn among the
    callers waiting (round robin by `run_for`, first come first served within one caller).

    Why (issue 52, fair queuing): one user's batch of 500 questions sent over 8 connections put
    8 answers' model runs in front of another user's single question, which then waited behind
    all of them. A run is 5–20 ms, so a caller waits at most about one run per other caller
    before its own goes. Why `capacity` = cores: more runs at once only share the same cores
    and lengthen every one of them; overlap is counted across models, not per model, because a
    reader run beside an embedding is no less crowded than two reader runs."""

    def __init__(self, capacity: int):
        self.capacity = max(1, capacity)
        self._cond = threading.Condition()
        self._running = 0
        self._queues: OrderedDict[str, deque] = OrderedDict()  # caller -> its waiting runs, in turn order

    def acquire(self, who: str) -> bool:
        """Wait for a slot; True when other runs hold slots too (run on one thread)."""
        with self._cond:
            if self._running < self.capacity and not self._queues:
                self._running += 1
            else:
                me = [False]
                self._queues.setdefault(who, deque()).append(me)
                while not me[0]:
                    self._cond.wait()
            return self._running > 1

    def release(self) -> None:
        with self._cond:
            if not self._queues:
                self._running -= 1
                return
            who, q = next(iter(self._queues.items()))  # the caller whose turn it is
            q.popleft()[0] = True  # the slot passes on: _running stays
            if q:
                self._queues.move_to_end(who)  # its next run goes after the others' turns
            else:
                del self._queues[who]
            self._cond.notify_all()


share = FairShare(os.cpu_count() or 1)
_narrow_lock = threading.Lock()  # a narrow session is made once, by the first crowded call


class SessionPair:
    def __init__(self, make: Callable[[int], object], threads: int = 0):
        """`make(threads)` builds an InferenceSession (0: onnxruntime's default, all cores)."""
        self._make = make
        self.wide = make(threads)
        self._narrow = None

    @contextmanager
    def session(self) -> Iterator[object]:
        crowded = share.acquire(run_for.get())
        try:
            if crowded and self._narrow is None:
                with _narrow_lock:
                    if self._narrow is None:
                        self._narrow = self._make(1)
            yield self._narrow if crowded else self.wide
        finally:
            share.release()
