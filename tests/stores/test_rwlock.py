"""The embedded store's readers–writer lock: searches overlap, an index update waits for them
and holds new ones off (writer preference), nothing deadlocks."""

from __future__ import annotations

import threading
import time

from rag_core.stores.rwlock import RWLock


def test_readers_overlap_and_a_writer_is_exclusive():
    lock = RWLock()
    inside, peak, log = [0], [0], []
    guard = threading.Lock()

    def reader():
        with lock.read():
            with guard:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.2)
            with guard:
                inside[0] -= 1

    def writer():
        with lock.write():
            with guard:
                log.append(("writer", inside[0]))

    rs = [threading.Thread(target=reader) for _ in range(4)]
    t0 = time.perf_counter()
    for r in rs:
        r.start()
    time.sleep(0.05)
    w = threading.Thread(target=writer)
    w.start()
    for t in rs + [w]:
        t.join(5)
    assert peak[0] == 4 and time.perf_counter() - t0 < 0.6  # the four slept together, not in turn
    assert log == [("writer", 0)]  # the writer ran with no reader inside


def test_a_waiting_writer_holds_new_readers_off():
    lock = RWLock()
    order = []
    first_in = threading.Event()

    def long_reader():
        with lock.read():
            first_in.set()
            time.sleep(0.3)
            order.append("reader 1 out")

    def writer():
        with lock.write():
            order.append("writer")

    def late_reader():
        with lock.read():
            order.append("reader 2")

    a = threading.Thread(target=long_reader)
    a.start()
    first_in.wait(2)
    w = threading.Thread(target=writer)
    w.start()
    time.sleep(0.05)
    b = threading.Thread(target=late_reader)
    b.start()
    for t in (a, w, b):
        t.join(5)
    assert order == ["reader 1 out", "writer", "reader 2"]
