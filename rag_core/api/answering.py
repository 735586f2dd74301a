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

# Answers one caller may have running at once; the rest of its questions wait their turn here,
# before a worker thread is taken. With the model runs handed out in turn (inference.FairShare),
# this keeps one user's batch from filling the machine with its own Python work as well: 500
# questions over 8 connections run two at a time, and another user's question starts at once.
PER_CALLER = max(1, os.cpu_count() or 1)
_slots: dict[str, tuple[anyio.Semaphore, list[int]]] = {}


@asynccontextmanager
async def turn(caller: Caller):
    """One of the caller's answer slots, and its model runs queued under its name."""
    who = caller.user or "local"
    sem, users = _slots.setdefault(who, (anyio.Semaphore(PER_CALLER), [0]))
    users[0] += 1
    try:
        async with sem:
            token = run_for.set(who)
            try:
                yield
            finally:
                try:
                    run_for.reset(token)
                except ValueError:  # a stream closed from another context (its task ended): nothing to undo there
                    pass
    finally:
        users[0] -= 1
        if not users[0]:
            _slots.pop(who, None)  # nobody waits or runs under this name: forget it


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
