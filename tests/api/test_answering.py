"""Answers in turn (rag_core/api/answering.py, issue 52): one caller's questions beyond its
slots wait, another caller's question starts at once, and model runs are queued under the
caller's name."""

from __future__ import annotations

import anyio

from rag_core.access import Caller
from rag_core.api import answering
from rag_core.inference import run_for


def test_a_callers_extra_questions_wait_and_another_caller_starts_at_once(monkeypatch):
    monkeypatch.setattr(answering, "PER_CALLER", 1)
    monkeypatch.setattr(answering, "_slots", {})
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
        assert set(answering._slots) == set()  # nobody left: the names are forgotten

    anyio.run(main)
    assert ("start", "b1", "bob") in log
    assert log.index(("start", "b1", "bob")) < log.index(("start", "a2", "alice"))
    assert log[0] == ("start", "a1", "alice")
