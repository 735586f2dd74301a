"""A long-running process keeps to two glibc malloc arenas and hands freed heap back
(rag_core/process.py): measured in child processes, by counting the arena heaps (anonymous
read-write mappings on 64 MB boundaries) in /proc/self/maps, and by their resident memory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHILD = r'''
import sys, threading
if sys.argv[1] == "bound":
    from rag_core.process import bound_malloc_arenas
    bound_malloc_arenas()
def arenas():
    n = 0
    for line in open("/proc/self/maps"):
        parts = line.split()
        start = int(parts[0].split("-")[0], 16)
        n += start % (64 << 20) == 0 and parts[1].startswith("rw") and len(parts) == 5
    return n
go = threading.Barrier(12)
def work():
    go.wait()
    keep = []
    for i in range(20000):
        keep.append(bytearray(200 + i % 3000))
        if len(keep) > 500:
            keep.clear()
ts = [threading.Thread(target=work) for _ in range(12)]
[t.start() for t in ts]
[t.join() for t in ts]
print(arenas())
'''


def _arenas(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc arenas and /proc are Linux's")
def test_threads_share_two_arenas_instead_of_one_each():
    unbounded, bounded = _arenas("free"), _arenas("bound")
    assert unbounded >= 4  # the measurement sees per-thread arenas when nothing bounds them
    assert bounded <= 1  # the main heap plus one arena


TRIM = r'''
import sys
from rag_core.process import trim_heap
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
blocks = [bytearray(1000) for _ in range(300_000)]
pin = bytearray(1000)  # at the top of the heap: glibc's own trim on free cannot reach below it
del blocks
freed = rss()
if sys.argv[1] == "trim":
    trim_heap(0)
    trim_heap()  # within the interval: skipped, harmless
print(freed, rss())
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim and /proc are Linux's")
def test_freed_heap_is_handed_back():
    def run(mode):
        out = subprocess.run([sys.executable, "-c", TRIM, mode], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, out.stderr
        return [int(x) for x in out.stdout.split()]

    freed, kept = run("keep")
    assert kept > 200  # ~300 MB of small objects freed, and still resident
    freed, trimmed = run("trim")
    assert trimmed < freed - 200
