"""A readers–writer lock: searches share the in-memory index, a sync that changes it waits
for them and holds them off while it runs. Writer-preferring, so a steady stream of searches
cannot starve an index update. Not reentrant: a thread holding it must not take it again."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator


class RWLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._waiting = 0
        self.longest_write_ms = 0.0  # the longest a writer has held searches off (benchmarks read it)

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writer = True
        start = time.perf_counter()
        try:
            yield
        finally:
            with self._cond:
                self.longest_write_ms = max(self.longest_write_ms, (time.perf_counter() - start) * 1000)
                self._writer = False
                self._cond.notify_all()
