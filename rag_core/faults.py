"""Named fault points, for the crash harness (benchmarks/crash_anywhere.py) and its tests.

`RAG_FAULT=name` (or `name:n`) makes this process kill itself with SIGKILL the first (n-th)
time the code reaches `reach("name")`: a crash at an exact step of a write, where a random
delay would land there only by luck. Read once at import; unset (everywhere but the harness),
`reach` is a string comparison."""

from __future__ import annotations

import os
import signal

_name, _, _nth = os.environ.get("RAG_FAULT", "").partition(":")
_left = int(_nth or 1)


def reach(name: str) -> None:
    global _left
    if name != _name:
        return
    _left -= 1
    if _left <= 0:
        os.kill(os.getpid(), signal.SIGKILL)
