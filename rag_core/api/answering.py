"""One question through the same LCEL chain the chat page runs (Workspace.answers.chain), for
both `POST /v1/query` and the OpenAI-compatible `/v1/chat/completions`: prepare the request for
this caller (a saved thread's history), run or stream it, then log the answer (query history,
feedback, analytics) and save it to the thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio

from ..access import Caller
from ..errors import InputError
from ..models import Answer

_END = object()


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
            no_cache: bool = False) -> Question:
    """The chain's request. With a thread, its saved messages are the history (a thread that is
    not the caller's is "not found"); otherwise `history` (an OpenAI client's earlier turns)."""
    check_length(ws, question, "question")
    if not question.strip():
        raise InputError("the question is empty")
    if thread_id is not None:
        msgs = ws.conversations(caller=caller).messages(thread_id)
        history = [(m["role"], m["content"] if m["role"] == "user" else m["answer"].text) for m in msgs]
    req = ws.answer_request(kb_names, question, history=history, doc_ids=doc_ids, caller=caller, after=after,
                            before=before, route=route, no_cache=no_cache)
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


async def events(ws, q: Question, disconnected=None) -> AsyncIterator:
    """The chain's events (AnswerEvent) as they come, pulled one at a time on a worker thread.
    When the client has gone (`disconnected()`, polled between events: uvicorn drops what is
    sent to a closed socket without an error, so the sending alone would never notice) or the
    consumer stops early, the chain's generator is closed: the steps still to run never run,
    and an LLM's HTTP stream is closed with it."""
    it = ws.answers.chain.stream(q.req)
    try:
        while True:
            ev = await anyio.to_thread.run_sync(next, it, _END)
            if ev is _END or (disconnected is not None and await disconnected()):
                return
            yield ev
    finally:
        await anyio.to_thread.run_sync(it.close)
