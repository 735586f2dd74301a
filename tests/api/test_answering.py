"""Answers in turn (rag_core/api/answering.py, issue 52): one caller's questions beyond its
share wait, another caller's question starts at once, the share is cut while another caller is
present and restored when it leaves, and model runs are queued under the caller's name."""

from __future__ import annotations

import anyio

from rag_core.access import Caller
from rag_core.api import answering
from rag_core.inference import run_for


def test_a_callers_extra_questions_wait_and_another_caller_starts_at_once(monkeypatch):
    monkeypatch.setattr(answering, "PER_CALLER", 1)
    log = []

    async def ask(who: str, tag: str, hold: anyio.Event | None, started: anyio.Event | None = None):
        async with answering.turn(Caller.of(who)):
            log.append(("start", tag, run_for.get()))
            if started is not None:
                started.set()
            if hold is not None:
                await hold.wait()
        log.append(("end", tag))

    async def main():
        release = anyio.Event()
        a1_started = anyio.Event()
        b_started = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "alice", "a1", release, a1_started)
            await a1_started.wait()
            tg.start_soon(ask, "alice", "a2", None)  # waits behind a1
            tg.start_soon(ask, "bob", "b1", None, b_started)
            await b_started.wait()
            assert ("start", "a2", "alice") not in log  # alice's second question still waits
            release.set()
        assert answering._present == {} and answering._running == {}  # nobody left: the names are forgotten

    anyio.run(main)
    assert ("start", "b1", "bob") in log
    assert log.index(("start", "b1", "bob")) < log.index(("start", "a2", "alice"))
    assert log[0] == ("start", "a1", "alice")


def test_a_callers_share_is_cut_while_another_caller_is_present_and_restored_after(monkeypatch):
    """Two cores: alice alone runs two answers at once; while bob is present each may run one,
    so alice's third question waits for both her running answers, not just one; once bob has
    left, alice runs two again."""
    monkeypatch.setattr(answering, "PER_CALLER", 2)
    log = []
    hold = {t: anyio.Event() for t in ("a1", "a2", "a3", "a4", "b1")}
    started = {t: anyio.Event() for t in ("a1", "a2", "a3", "a4", "b1")}

    async def ask(who: str, tag: str):
        async with answering.turn(Caller.of(who)):
            log.append(tag)
            started[tag].set()
            if tag in hold:
                await hold[tag].wait()

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "alice", "a1")
            tg.start_soon(ask, "alice", "a2")
            await started["a1"].wait()
            await started["a2"].wait()  # alone, alice has both slots
            tg.start_soon(ask, "bob", "b1")
            await started["b1"].wait()  # bob starts at once, beside alice's two
            tg.start_soon(ask, "alice", "a3")
            await anyio.sleep(0.05)
            hold["a1"].set()
            await anyio.sleep(0.05)
            assert "a3" not in log  # alice runs one (a2): her share is one while bob is here
            hold["a2"].set()
            await started["a3"].wait()
            tg.start_soon(ask, "alice", "a4")
            await anyio.sleep(0.05)
            assert "a4" not in log  # still one while bob is present
            hold["b1"].set()
            await started["a4"].wait()  # bob gone: alice runs two (a3 and a4) again
            assert "a3" in log and answering._running.get("alice") == 2
            hold["a3"].set()
            hold["a4"].set()
        assert answering._present == {} and answering._running == {}

    anyio.run(main)
    assert log == ["a1", "a2", "b1", "a3", "a4"]


def test_a_callers_waiting_questions_start_in_the_order_they_came(monkeypatch):
    """Woken newest first, a busy caller's oldest questions kept waiting (a 16-client load's p95
    went to 10 s): the questions start first come, first served."""
    monkeypatch.setattr(answering, "PER_CALLER", 1)
    log = []

    async def ask(tag: str, hold: anyio.Event | None, started: anyio.Event | None = None):
        async with answering.turn(Caller.of("alice")):
            log.append(tag)
            if started is not None:
                started.set()
            if hold is not None:
                await hold.wait()

    async def main():
        release, first = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "q0", release, first)
            await first.wait()
            for i in range(1, 6):
                tg.start_soon(ask, f"q{i}", None)
                await anyio.sleep(0.01)  # they arrive in this order
            release.set()

    anyio.run(main)
    assert log == ["q0", "q1", "q2", "q3", "q4", "q5"]
