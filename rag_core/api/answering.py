"""One question through the same LCEL chain the chat page runs (Workspace.answers.chain), for
both `POST /v1/query` and the OpenAI-compatible `/v1/chat/completions`: prepare the request for
this caller (a saved thread's history), run or stream it, then log the answer (query history,
feedback, analytics) and save it to the thread."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from ..access import Caller
from ..errors import InputError
from ..inference import run_for
from ..models import Answer

_END = object()

# Answers running at once: as many as cores (more only share the same cores), shared out among
# the callers present (running or waiting). A caller alone may use them all: a lone user's
# batch runs two at a time on 2 cores. When another caller arrives, each one's share is
# cores // callers (at least one): the first one's next question waits until it is back within
# its share, and the newcomer's starts at once. With the model runs handed out in turn
# (inference.FairShare), this keeps one user's batch from filling the machine with its own work.
#
# Why a share, not a fixed cap per caller (issue 52, fairness): with two answers per caller,
# another user's single question ran beside two of the batch's answers, three answers on two
# cores, and its p95 was 2.30x its idle value (target 2x).
PER_CALLER = max(1, os.cpu_count() or 1)
_present: dict[str, int] = {}  # caller -> its answers running or waiting
_running: dict[str, int] = {}  # caller -> its answers running
_waiters: list[anyio.Event] = []  # woken, oldest first, whenever an answer ends; each checks again


def share() -> int:
    """Answers each caller present may run at once now."""
    return max(1, PER_CALLER // max(1, len(_present)))


def _changed() -> None:
    # Oldest first: the event loop runs the woken in the order they are set, so the longest
    # waiting checks first and takes a freed slot (woken newest first, a 16-client load kept
    # its oldest questions waiting: p95 10.3 s).
    for wake in _waiters:
        wake.set()
    _waiters.clear()


@asynccontextmanager
async def turn(caller: Caller):
    """One of the caller's answer slots, and its model runs queued under its name. Everything
    here runs on the event loop's thread: no await falls between a check and its count."""
    who = caller.user or "local"
    # One more caller present can only shrink the others' shares, so nobody is woken here: a
    # wake-up that admits nobody only reorders the queue (waking at each arrival made a busy
    # caller's questions start newest first).
    _present[who] = _present.get(who, 0) + 1
    try:
        while _running.get(who, 0) >= share():
            wake = anyio.Event()
            _waiters.append(wake)
            await wake.wait()
        _running[who] = _running.get(who, 0) + 1
        try:
            token = run_for.set(who)
            try:
                yield
            finally:
                try:
                    run_for.reset(token)
                except ValueError:  # a stream closed from another context (its task ended): nothing to undo there
                    pass
        finally:
            _running[who] -= 1
            if not _running[who]:
                del _running[who]
    finally:
        _present[who] -= 1
        if not _present[who]:
            del _present[who]  # nobody waits or runs under this name: forget it
        _changed()


@dataclass
class Question:
    req: object  # generation.chain.AnswerRequest
    caller: Caller
    thread_id: str | None


def check_length(ws, text: str, what: str) -> None:
    limit = ws.settings.api_max_question_chars
    if len(text) > limit:
        raise InputError(f"the {what} is too long ({len(text)} characters; the limit is {limit})")


def prepare(ws, caller: Caller, question: str, kb_names: list[str], doc_ids: list[str] | None = None,
            thread_id: str | None = None, history: list[tuple[str, str]] | None = None, *,
            after: str | None = None, before: str | None = None, route: str | None = None,
            no_cache: bool = False, options=None) -> Question:
    """The chain's request. With a thread, its saved messages are the history (a thread that is
    not the caller's is "not found"); otherwise `history` (an OpenAI client's earlier turns)."""
    check_length(ws, question, "question")
    if not question.strip():
        raise InputError("the question is empty")
    if thread_id is not None:
        msgs = ws.conversations(caller=caller).messages(thread_id)
        history = [(m["role"], m["content"] if m["role"] == "user" else m["answer"].text) for m in msgs]
    req = ws.answer_request(kb_names, question, history=history, doc_ids=doc_ids, caller=caller, after=after,
                            before=before, route=route, no_cache=no_cache, options=options)
    return Question(req, caller, thread_id)


def record(ws, q: Question, answer: Answer, metrics=None) -> str:
    """Log the answer (its query id is what feedback refers to) and save it to the thread."""
    qid = ws.feedback_for(caller=q.caller).log_answer(answer, [kb.kb_id for kb in q.req.kbs], thread_id=q.thread_id)
    if q.thread_id is not None:
        convs = ws.conversations(caller=q.caller)
        convs.add(q.thread_id, "user", q.req.question)
        convs.add(q.thread_id, "assistant", answer.text, answer, qid)
    if metrics is not None:
        metrics.answered(answer)
    return qid


def answer(ws, q: Question, metrics=None) -> tuple[Answer, str]:
    """The verified answer, logged: (answer, query id)."""
    a = ws.answers.answer(q.req)
    return a, record(ws, q, a, metrics)


async def answer_in_turn(ws, q: Question, metrics=None) -> tuple[Answer, str]:
    """`answer` on a worker thread, in the caller's turn."""
    async with turn(q.caller):
        return await anyio.to_thread.run_sync(answer, ws, q, metrics)


async def events(ws, q: Question, disconnected=None) -> AsyncIterator:
    """The chain's events (AnswerEvent) as they come, pulled one at a time on a worker thread.
    When the client has gone (`disconnected()`, polled between events: uvicorn drops what is
    sent to a closed socket without an error, so the sending alone would never notice) or the
    consumer stops early, the chain's generator is closed: the steps still to run never run,
    and an LLM's HTTP stream is closed with it."""
    async with turn(q.caller):
        it = ws.answers.chain.stream(q.req)
        try:
            while True:
                ev = await anyio.to_thread.run_sync(next, it, _END)
                if ev is _END or (disconnected is not None and await disconnected()):
                    return
                yield ev
        finally:
            await anyio.to_thread.run_sync(it.close)
