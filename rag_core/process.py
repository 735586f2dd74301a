"""Process-wide settings a long-running Groundwork process needs, applied once."""

from __future__ import annotations

import ctypes
import threading

_M_ARENA_MAX = -8  # glibc's mallopt parameter number
_done = threading.Event()


def bound_malloc_arenas(arenas: int = 2) -> None:
    """At most `arenas` glibc malloc arenas from now on. glibc gives each thread that contends for
    the heap an arena of its own (up to 8 per core), and the API server's request threads, the
    index maintenance thread and the job worker each grew one: an hour of mixed use over the
    API (benchmarks/soak.py) held ~12 arenas of ~60 MB each, and the server's RSS rose from
    1.1 GB to 1.6 GB and on with a knowledge base that stayed the same size. Freed memory in
    an idle arena is not reused by a thread bound to another. Two arenas for two cores keep
    contention low. Not glibc: nothing to do."""
    if _done.is_set():
        return
    _done.set()
    try:
        ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, arenas)
    except (OSError, AttributeError):
        pass
