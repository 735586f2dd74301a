"""Process-wide settings a long-running Groundwork process needs, applied once."""

from __future__ import annotations

import ctypes
import threading
import time

_M_ARENA_MAX = -8  # glibc's mallopt parameter number
_done = threading.Event()


def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return None


def bound_malloc_arenas(arenas: int = 2) -> None:
    """At most `arenas` glibc malloc arenas from now on. glibc gives each thread that contends for
    the heap an arena of its own (up to 8 per core), and the API server's request threads, the
    index maintenance thread and the job worker each grew one: an hour of mixed use over the
    API (benchmarks/soak.py) held ~12 arenas of ~60 MB each, and the server's RSS rose from
    1.1 GB to 1.6 GB and on (part of that was the corpus growing: uploads then outnumbered
    deletes; benchmarks/soak.py now keeps it steady). Freed memory in
    an idle arena is not reused by a thread bound to another. Two arenas for two cores keep
    contention low. Not glibc: nothing to do."""
    if _done.is_set():
        return
    _done.set()
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(_M_ARENA_MAX, arenas)


_last_trim = [0.0]


def trim_heap(min_interval_s: float = 30.0) -> None:
    """Hand the heap's free pages back to the system (glibc's malloc_trim). An ingest job and an
    index compaction allocate and free hundreds of MB in pieces too small for glibc to unmap
    (text, token lists, numpy arrays below its mmap threshold), and the freed heap stays
    resident: in the hour-long API soak, one malloc_trim(0) on the running server dropped its
    RSS from 976 to 785 MB. Called after each of those, not per request: it holds the malloc
    lock while it walks the heap (milliseconds), so at most once per `min_interval_s`."""
    now = time.monotonic()
    if now - _last_trim[0] < min_interval_s:
        return
    _last_trim[0] = now
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
