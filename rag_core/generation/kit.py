"""What the answer path's parts share: the stores and models, built once per engine, and the
few things every part does with the language model (build its prompt, stream it, note that
it failed). A part receives the kit; it never builds a model or an index itself.
"""

from __future__ import annotations

import re
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.utils import trim_messages
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.config import merge_configs

from ..config import Settings
from ..models import ScoredChunk
from ..text.links import defuse_prefix, defuse_urls
from ..text.messages import text as ui_text
from ..text.tokens import count_tokens
from .prompts import (EVIDENCE_CLOSE, EVIDENCE_OPEN, EVIDENCE_TASK, instructions_left_out, split_evidence,
                      system_prompt, user_message)
from .prompt_budget import shown
from .steps import AnswerEvent, AnswerRequest, Turn
from .stream_guard import CHARS_PER_TOKEN, AnswerTimeLimit, StreamGuard

_MARKER = re.compile(r"\s*(?<!\[)\[\d{1,3}\](?!\])")
_WORD = re.compile(r"\w", re.U)

# Documents go in the human turn inside <retrieved_context>; the system turn holds only our
# rules and the knowledge bases' instructions (prompts.py).
PROMPT = ChatPromptTemplate.from_messages(
    [("system", "{system}"), MessagesPlaceholder("history", optional=True), ("human", "{user}")])


class Written(str):
    """A model's text; why the stream guard cut it ("" when it ran to its end); the source
    sentences it quoted as its evidence, per source number ({} when it quoted none); how many
    sentences of its sources were instructions to the assistant, taken out of its prompt."""

    cut: str
    evidence: dict[int, list[str]]
    removed: int

    def __new__(cls, text: str, cut: str = "", evidence: dict[int, list[str]] | None = None, removed: int = 0):
        obj = super().__new__(cls, text)
        obj.cut, obj.evidence, obj.removed = cut, evidence or {}, removed
        return obj


class EmptyCompletion(RuntimeError):
    """The model's completion held no words (an empty stream, "...", markers alone). It is
    treated as a failed call, not as an answer or a refusal: the reader stands in, held to its
    own line, and the answer says the model gave nothing (`models["llm_error"]`)."""


def no_words(text: str) -> bool:
    return not _WORD.search(_MARKER.sub("", text or ""))


@dataclass
class Kit:
    settings: Settings
    store: Any
    retrieval: Any  # retrieval.pipeline.RetrievalPipeline
    retriever: Any  # retrieval.retriever.GroundworkRetriever
    embedder: Any
    reader: Any
    extractive: Any  # extractive.ExtractiveAnswerer
    verifier: Any  # grounding.verify.Verifier
    llm: Any = None  # chat model | StrOutputParser, or None offline
    chat: Any = None  # the chat model itself (a request's own temperature and output budget bind to it)
    fast: Any = None  # the fast model for the small steps (the answer model when none is set)
    locate_page: Callable | None = None
    # seconds to the model's first visible words, last answers first: the estimate reading_note shows
    first_words: deque = field(default_factory=lambda: deque(maxlen=20))

    @property
    def generator(self):
        return (PROMPT | self.llm).with_config(run_name="generate") if self.llm is not None else None

    def generator_for(self, turn: Turn):
        """The generator with the request's own temperature and output budget, where it sets them."""
        kwargs = turn.req.options.model_kwargs()
        if not kwargs or self.chat is None:
            return self.generator
        return (PROMPT | self.chat.bind(**kwargs) | StrOutputParser()).with_config(run_name="generate")

    def llm_ok(self, turn: Turn) -> bool:
        return self.llm is not None and "llm_error" not in turn.models

    def failed(self, turn: Turn, exc: Exception) -> Turn:
        """The LLM endpoint failed (timeout, connection, HTTP error, an empty completion): note
        it; later LLM steps are skipped and the answer is composed offline."""
        s = self.settings
        where = s.llm_label if s.llm_gguf else (s.openai_base_url or "the OpenAI API")
        what = ("gave an empty answer" if isinstance(exc, EmptyCompletion)
                else f"gave no complete answer within {s.llm_answer_seconds:.0f} s" if isinstance(exc, AnswerTimeLimit)
                else f"did not answer ({type(exc).__name__})")
        msg = f"The language model ({where}) {what}; this answer was composed offline from the sources instead."
        return replace(turn, models={**turn.models, "llm_error": msg})

    def history(self, req: AnswerRequest) -> list:
        """Recent turns for the prompt, newest kept, within `llm_history_tokens`. Old answers'
        [n] markers are dropped: they point at sources this prompt does not hold."""
        msgs = [HumanMessage(text) if role == "user" else AIMessage(_MARKER.sub("", text))
                for role, text in req.history if text]
        if not msgs or self.settings.llm_history_tokens <= 0:
            return []
        return trim_messages(msgs, max_tokens=self.settings.llm_history_tokens, strategy="last",
                             token_counter=lambda ms: sum(count_tokens(str(m.content)) + 4 for m in ms),
                             start_on="human", include_system=False)

    def prompt_value(self, turn: Turn, sources: list[ScoredChunk], task: str | None = None,
                     reminder: str | None = None, windows: dict[int, str] | None = None) -> dict:
        """The prompt's parts; `windows`: passages the prompt shows in part (prompt_budget.py)."""
        user = user_message(turn.standalone, shown(sources, windows), turn.language, reminder,
                            compact=self.settings.llm_compact_sources)
        return {"system": system_prompt(turn.req.kbs), "history": self.history(turn.req),
                "user": f"{user}\n\n{task}" if task else user}

    def write(self, turn: Turn, sources: list[ScoredChunk], config, reminder: str | None = None,
              windows: dict[int, str] | None = None) -> Iterator[AnswerEvent]:
        """Generator: the model writes over these sources, streaming tokens; returns the text.
        Raises EmptyCompletion when it wrote no words (the caller handles it as a failure)."""
        # an answer to a question quotes its evidence; a summary or comparison covers documents
        # (no one sentence to quote); a local model on a CPU is spared the extra tokens, and
        # Qwen2.5 0.5B copied a format's example rather than filling it (generation/judge.py)
        task = EVIDENCE_TASK if reminder is None and self.settings.llm_evidence and not self.settings.llm_gguf else None
        value = self.prompt_value(turn, sources, task=task, reminder=reminder, windows=windows)
        yield AnswerEvent("status", self.reading_note(len(sources), turn.language))
        written = yield from self.stream_text(self.generator_for(turn), value, config, cancel=turn.req.cancel,
                                              max_tokens=turn.req.options.max_tokens)
        removed = instructions_left_out(sources)  # recorded with the answer
        return Written(written, written.cut, written.evidence, removed) if removed else written

    def reading_note(self, passages: int, language: str = "en") -> str:
        """What the page says while the model reads, before its first words, in the question's
        language: how long that usually takes here, measured on this process's last answers (a
        local model on a CPU can take half a minute; a blank space that long reads as broken)."""
        s = self.settings
        who = s.llm_label if s.llm_gguf else s.llm_model
        note = ui_text("reading", language, n=str(passages), model=who)
        if self.first_words:
            typical = sorted(self.first_words)[len(self.first_words) // 2]
            note += " " + ui_text("first_words", language, s=str(max(1, round(typical))))
        return note

    def stream_text(self, runnable, value, config, cancel=None, max_tokens: int | None = None) -> Iterator[AnswerEvent]:
        """Stream the model's text, stopped by the StreamGuard when it loops, echoes the prompt's
        markup, runs past the length limit (what was written before stands, with a notice, and
        the returned `Written.cut` says why) or past the time limit (AnswerTimeLimit: the
        caller's fallback answers offline). An evidence block after the answer (prompts.
        EVIDENCE_TASK) is never shown: its quotes come back in `Written.evidence`. A set `cancel`
        (AnswerRequest.cancel) ends the stream at its next piece: AnswerCancelled."""
        s = self.settings
        guard = StreamGuard((max_tokens or s.llm_max_tokens) * CHARS_PER_TOKEN, s.llm_answer_seconds)
        sent, started = "", time.perf_counter()
        hangup = _Hangup(cancel)
        config = merge_configs(config, {"callbacks": [hangup]})
        stream = runnable.stream(value, config)
        try:
            for piece in stream:
                if cancel is not None and cancel.is_set():
                    raise AnswerCancelled("stopped by the person who asked")
                if not piece:
                    continue
                guard.feed(piece)
                # what the page may show: before the evidence block, every URL inert (text/links);
                # a URL may still be growing at the end, unless the guard has ended the stream
                visible = _visible(guard.text)
                body = defuse_urls(visible) if guard.reason else defuse_prefix(visible)
                if not body.startswith(sent):
                    yield AnswerEvent("restart", body)
                elif len(body) > len(sent):
                    if not sent:
                        self.first_words.append(time.perf_counter() - started)
                    yield AnswerEvent("token", body[len(sent):])
                sent = body
                if guard.reason:
                    hangup.now = True
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                try:
                    close()  # the endpoint stops generating when the connection goes
                except _HungUp:
                    pass
        text, evidence = split_evidence(guard.text)
        text = defuse_urls(text)  # a model's URL is never a live image or link (text/links.py)
        if text.startswith(sent):
            if len(text) > len(sent):
                yield AnswerEvent("token", text[len(sent):])  # the tail held back while a URL could grow
        elif not text.startswith(sent.rstrip()):
            yield AnswerEvent("restart", text)
        if no_words(text):
            raise EmptyCompletion(repr(text[:40]))
        if guard.reason:
            note = f"The model's answer was cut: {guard.reason}."
            yield AnswerEvent("notice", note)
            return Written(text, note, evidence)
        return Written(text, "", evidence)


class _HungUp(BaseException):
    """Raised in the model client to end its stream (_Hangup)."""


class _Hangup(BaseCallbackHandler):
    """Ends the model's stream at its next token: once `now` is set (the stream guard stopped a
    looping model) or `cancel` is (the person stopped the answer: AnswerCancelled).

    Closing LangChain's stream from outside does not stop the model: on GeneratorExit each
    layer drains its input for tracing, reading the reply to its end (measured: a cancelled
    4-piece stream was read for 3 more seconds, and the server never saw the client go; a looping
    local model would have been read to its token cap). An exception raised in the token
    callback, inside the client's `with response:`, closes the connection at once."""

    raise_error = True  # LangChain swallows a handler's errors otherwise

    def __init__(self, cancel=None):
        self.cancel, self.now = cancel, False

    def on_llm_new_token(self, token, **kwargs) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise AnswerCancelled("stopped by the person who asked")
        if self.now:
            raise _HungUp()


class AnswerCancelled(BaseException):
    """The person stopped the answer (AnswerRequest.cancel): nothing more is computed. A
    BaseException, like KeyboardInterrupt, so that no fallback ("the model failed: the reader
    stands in") catches it and answers anyway."""


def _visible(text: str) -> str:
    """The part of a streamed reply a person sees: up to its evidence block (or a stray closing
    tag: SmolLM2 wrote "</evidence>" alone), holding back a tail that may be a tag arriving in
    pieces."""
    ends = [i for i in (text.find(EVIDENCE_OPEN), text.find(EVIDENCE_CLOSE)) if i >= 0]
    if ends:
        return text[:min(ends)]
    for k in range(min(len(EVIDENCE_CLOSE) - 1, len(text)), 0, -1):
        if EVIDENCE_OPEN.startswith(text[-k:]) or EVIDENCE_CLOSE.startswith(text[-k:]):
            return text[:-k]
    return text
