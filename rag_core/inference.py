"""ONNX sessions shared by concurrent callers without a global lock.

onnxruntime's `run` is thread-safe. What a lock used to prevent is oversubscription: two
calls each running on all cores' worth of threads. So a model keeps two sessions: a *wide*
one (all cores, or the configured thread count) for a call that runs alone — a lone user's
latency is what it was — and a *narrow* one (one thread, the calling thread) for calls that
overlap, so N concurrent calls use N cores' worth of threads instead of queueing behind one
another. The narrow session is loaded when calls first overlap.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator


class SessionPair:
    def __init__(self, make: Callable[[int], object], threads: int = 0):
        """`make(threads)` builds an InferenceSession (0: onnxruntime's default, all cores)."""
        self._make = make
        self.wide = make(threads)
        self._narrow = None
        self._inflight = 0
        self._lock = threading.Lock()

    @contextmanager
    def session(self) -> Iterator[object]:
        with self._lock:
            self._inflight += 1
            crowded = self._inflight > 1
            if crowded and self._narrow is None:
                self._narrow = self._make(1)
            chosen = self._narrow if crowded else self.wide
        try:
            yield chosen
        finally:
            with self._lock:
                self._inflight -= 1
