"""OpenAI-compatible chat over a knowledge base: `GET /v1/models` lists the knowledge bases the
caller may use as models named `groundwork/<knowledge base name>`, and `POST /v1/chat/completions`
answers through the same chain as everything else — grounded, verified, cited. Any OpenAI client
or chat front end (the `openai` package, Open WebUI, LibreChat) can then chat with a knowledge base.

The message holds the answer with its `[n]` markers and a "Sources:" list a person can read; the
whole verified answer (citations, scores, claims, abstention and closest passages) is in the extra
`groundwork` field (on the final chunk when streaming).

Decisions:
- The client's own system messages are not passed to the model: our rules and the knowledge
  base's instructions govern answering (a client cannot switch off grounding or citations).
- Earlier user/assistant turns are the conversation history (our "Sources:" block is stripped
  from earlier answers).
- Streaming shows the draft as it is written. When verification then changes it (a sentence
  dropped in grounded-only mode, citations renumbered, or the draft withdrawn as not answering),
  the stream cannot take text back, so the checked answer follows under a clear line; the
  `groundwork` field always holds the checked one.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..models import Answer
from ..render import closest_heading
from ..text.messages import LANGUAGES
from ..text.sentences import open_fence
from ..render import escape_md, passage_markdown
from ..schemas import AnswerOut
from . import answering
from .auth import Principal
from .errors import error_payload
from .routes import READ, ApiError, ws_of

PREFIX = "groundwork/"
SOURCES_HEADING = "\n\nSources:\n"
# one per language the app speaks: an earlier turn's passages are cut off whatever its language
CLOSEST_HEADINGS = {lang: f"\n\n{closest_heading(lang)}:\n" for lang in LANGUAGES}
CLOSEST_HEADING = CLOSEST_HEADINGS["en"]
router = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionRequest(BaseModel):
    # OpenAI clients send many optional fields (temperature, stream_options, user, …): accepted
    # and ignored, as other OpenAI-compatible servers do; the two we need are required.
    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    # passed to the model that writes the answer (max_completion_tokens is OpenAI's newer name)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1, le=8192)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=8192)


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "image_url", ...}]
        return "\n".join(part.get("text", "") for part in content if part.get("type") == "text")
    return ""


def _kb_name(model: str) -> str:
    return model[len(PREFIX):] if model.startswith(PREFIX) else model


def sources_block(a: Answer) -> str:
    if a.abstained:
        if not a.closest:
            return ""
        # each passage as the chat shows it: its blocks kept, its best sentence in bold, and
        # escaped like any document text that reaches a Markdown renderer
        return CLOSEST_HEADINGS.get(a.language, CLOSEST_HEADING) + "\n\n".join(
            f"**{escape_md(c.source)}, page {c.page}**\n\n{passage_markdown(c.passage or c.snippet, c.snippet)}"
            for c in a.closest)
    if not a.citations:
        return ""
    from ..models import conflict_note

    notes = "".join(f"\n\n{conflict_note(cf)}" for cf in a.conflicts)  # who says what, dated
    # after the heading: a client sending the conversation back has it stripped with the sources
    return SOURCES_HEADING + "\n".join(
        f"[{c.n}] {c.source}, page {c.page}" + (f" ({c.date})" if c.date else "") for c in a.citations) + notes


def _before_passages(text: str) -> str:
    for heading in CLOSEST_HEADINGS.values():
        text = text.split(heading)[0]
    return text


def _history(messages: list[ChatMessage]) -> tuple[str, list[tuple[str, str]]]:
    turns = [(m.role, _text(m.content)) for m in messages if m.role in ("user", "assistant")]
    if not turns or turns[-1][0] != "user":
        raise ApiError(400, "bad_request", "the last message must be the user's question")
    history = [(role, _before_passages(text.split(SOURCES_HEADING)[0])) for role, text in turns[:-1]]
    return turns[-1][1], history


@router.get("/models")
def list_models(request: Request, p: Principal = READ):
    ws = ws_of(request)
    return {"object": "list", "data": [
        {"id": f"{PREFIX}{kb.name}", "object": "model", "created": int(kb.created_at), "owned_by": "groundwork"}
        for kb in ws.list_kbs(caller=p.caller)]}


@router.post("/chat/completions")
async def chat_completions(body: ChatCompletionRequest, request: Request, p: Principal = READ):
    import anyio

    ws = ws_of(request)
    metrics = request.app.state.metrics
    question, history = _history(body.messages)
    from ..generation.steps import AnswerOptions

    options = AnswerOptions(temperature=body.temperature, max_tokens=body.max_completion_tokens or body.max_tokens)
    q = await anyio.to_thread.run_sync(lambda: answering.prepare(
        ws, p.caller, question, [_kb_name(body.model)], history=history, options=options))
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

    def extra(a: Answer, qid: str) -> dict:
        return AnswerOut.of(a, qid, query_id=qid).model_dump()

    if not body.stream:
        answer, qid = await answering.answer_in_turn(ws, q, metrics)
        content = answer.text + sources_block(answer)  # balanced by generation/record.py
        return {"id": cid, "object": "chat.completion", "created": created, "model": body.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}],
                "usage": _usage(question, history, content, answer), "groundwork": extra(answer, qid)}

    def chunk(delta: dict, finish: str | None = None, **more) -> bytes:
        payload = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": body.model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **more}
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

    async def stream():
        yield chunk({"role": "assistant", "content": ""})
        shown = ""  # what the client has been sent since the last restart
        sent = ""  # all of it: the Sources list must not land inside a fence left open
        try:
            async for ev in answering.events(ws, q, request.is_disconnected):
                if ev.kind == "token":
                    shown += ev.text
                    sent += ev.text
                    yield chunk({"content": ev.text})
                elif ev.kind == "restart":
                    # The chain replaces its text (a rewrite): a stream cannot take text back.
                    yield chunk({"content": "\n\n— revised —\n\n" + ev.text})
                    shown = ev.text
                    sent += "\n\n— revised —\n\n" + ev.text
                elif ev.kind == "answer":
                    a = ev.answer
                    qid = await anyio.to_thread.run_sync(answering.record, ws, q, a, metrics)
                    # the stream stopped inside a code block: close it, or what follows is code
                    fence = open_fence(sent)
                    tail = f"\n{fence}" if fence else ""
                    if _norm(shown) != _norm(a.text):  # a.text is balanced (generation/record.py)
                        tail += ("\n\n— checked answer —\n\n" if shown.strip() else "") + a.text
                    tail += sources_block(a)
                    yield chunk({"content": tail} if tail else {}, "stop", groundwork=extra(a, qid),
                                usage=_usage(question, history, sent + tail, a))
        except Exception as exc:  # noqa: BLE001 - the status line is sent: say so in the stream
            yield f"data: {json.dumps(error_payload(exc))}\n\n".encode()
        yield b"data: [DONE]\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _usage(question: str, history, content: str, answer: Answer | None = None) -> dict:
    """The tokens the models read and wrote for this answer, as they counted them; offline (or
    from the cache: no model ran) the words of the question, history and reply stand in."""
    if answer is not None and answer.usage:
        prompt = sum(int(u.get("input_tokens", 0)) for u in answer.usage.values())
        done = sum(int(u.get("output_tokens", 0)) for u in answer.usage.values())
        return {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}
    prompt = len(question.split()) + sum(len(t.split()) for _, t in history)
    done = len(content.split())
    return {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}
