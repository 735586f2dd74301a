"""The typed values the answer path's parts take and return (chain.py wires them):

    AnswerRequest ─condense─▶ Turn ─plan─▶ Turn ─retrieve─▶ Context ─gate─▶ Context
        ─respond─▶ AnswerEvent…, Draft ─verify─▶ Checked ─decide─▶ Decision ─record─▶ Answer

A responder *drafts*: it streams what it writes and hands on a `Draft` saying who wrote it
and from what. It never decides whether the draft is shown: the policy does, from the signals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..models import Answer, Claim, KnowledgeBase, RetrievalSettings, ScoredChunk, SearchFilters
from .planner import CatalogueEntry, Route


@dataclass(frozen=True)
class AnswerOptions:
    """One request's own settings (the API's per-request options): passages per answer, the
    model's temperature and output budget, weights on the knowledge bases' passages
    (kb_id → factor on their scores) and grounded-only. None / empty: the settings in force."""

    top_k: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    kb_weights: dict[str, float] = field(default_factory=dict)
    grounded_only: bool = False
    include_drafts: bool = False  # search documents their owners marked draft too

    def model_kwargs(self) -> dict:
        return {k: v for k, v in (("temperature", self.temperature), ("max_tokens", self.max_tokens)) if v is not None}


@dataclass
class AnswerRequest:
    question: str
    kbs: list[KnowledgeBase]
    filters: SearchFilters
    history: list[tuple[str, str]] = field(default_factory=list)  # (role "user"/"assistant", text)
    # The documents the caller may see in scope (Workspace.catalogue): what the planner may name.
    catalogue: list[CatalogueEntry] | None = None
    route: str | None = None  # the caller's choice of route ("search instead"); None: the planner decides
    # The answer cache's key (answer_cache.py), when this answer may be served from it and stored
    cache_key: str | None = None
    # Set by the page when the person stops the answer: the model's stream is closed at its next
    # piece. Closing the chain's generator is not enough: LangChain's stream drains its input for
    # tracing on GeneratorExit, which reads the model to its end.
    cancel: Any = field(default=None, compare=False, repr=False)  # threading.Event | None
    options: AnswerOptions = field(default_factory=AnswerOptions)


@dataclass(frozen=True)
class Turn:
    """condense → retrieve: the request, its standalone form, and what the run knows so far."""

    req: AnswerRequest
    standalone: str
    settings: RetrievalSettings  # the selected knowledge bases' merged settings
    t0: float
    timings: dict[str, float] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # ids of the models used; "llm_error" when it failed
    language: str = "en"  # the question's (text/language.py); refusals and help come in it where the app speaks it
    route: Route = field(default_factory=lambda: Route("search", (), "rules", ""))
    recency: str = ""  # why newer documents come first for this question ("" = not switched on here)
    moderation: Any = None  # generation/moderation.Verdict on the question, when it was refused
    moderation_level: str = "off"  # the level in force for its knowledge bases


@dataclass(frozen=True)
class Context:
    """retrieve → gate → respond: the passages, the reader's verdict on them, the policy."""

    turn: Turn
    sources: list[ScoredChunk]
    lookup_source: str | None = None
    lookup_chunks: int = 0  # a lookup: the document's passages in all (more than `sources` when cut short)
    best: float = 0.0  # best passage's reranker (or fused) score
    below_threshold: int = 0  # passages the knowledge bases' minimum relevance dropped
    reading: Any = None  # extractive.Evidence: the reader's reading of the passages' sentences
    policy: Any = None  # policy.AnswerPolicy in force for this question
    decision: Any = None  # its decision before generation (policy.Decision)
    relevance: bool | None = None  # the model's relevance check, when it ran
    # LLM mode: a passage shown to the model in part, its text there (prompt_budget.py)
    windows: dict[int, str] = field(default_factory=dict)

    @property
    def abstain(self) -> bool:
        return self.decision is not None and self.decision.abstain


@dataclass
class Draft:
    """What a responder hands on. `mode` says who wrote `text`: "llm" (the model) or
    "extractive" (the offline reader: no model, or standing in for one that failed; then
    `fallback` says why). Empty text: nothing could be written."""

    ctx: Context
    text: str
    sources: list[ScoredChunk]
    mode: Literal["llm", "extractive"]
    fallback: str = ""
    snippets: dict | None = None  # marker -> the text it stands for (offline: the sentence shown)
    highlight: str = ""  # offline: the sentence the passage is shown for
    info: dict = field(default_factory=dict)  # whole documents: what was read, and how much
    documents: list[CatalogueEntry] | None = None  # a comparison's documents
    conflicts: list = field(default_factory=list)  # grounding.conflicts.Conflict found for the answer
    offer: list[tuple[str, ScoredChunk]] = field(default_factory=list)  # (sentence, its passage) offered with a refusal
    gated: bool = False  # the gate withheld the answer before anything was written
    leads: dict[int, list[str]] = field(default_factory=dict)  # marker -> item labels written before its copies

    @property
    def turn(self) -> Turn:
        return self.ctx.turn


@dataclass
class Checked:
    """A draft after verification: its text with citations placed, its claims and scores."""

    text: str
    sources: list[ScoredChunk]
    claims: list[Claim]
    grounding: float
    auto_cited: int = 0  # sentences whose citation the checker placed
    kept: int | None = None  # grounded-only: sentences left (None: not grounded-only)
    revised: int = 0  # times corrective retrieval rewrote the answer
    verified_by: str = "reader"  # "model" when the LLM judge relabelled a sentence
    leads: dict[int, list[str]] = field(default_factory=dict)  # as Draft.leads
    evidence: dict[int, list[str]] = field(default_factory=dict)  # the model's quotes per source number


@dataclass
class AnswerEvent:
    """What the chain streams. kind: "token" (answer text), "status" (a step in progress),
    "restart" (the text so far is replaced: the answer is rewritten), "notice" (the LLM
    failed; answering offline), "draft" (a responder's Draft: internal, consumed by the
    verifying step), "answer" (the verified Answer, last).

    Events add up (`a + b`), as LCEL requires of streamed chunks: the sum holds the text
    since the last restart and the final answer, so `chain.invoke()` returns one event."""

    kind: Literal["token", "status", "restart", "notice", "draft", "answer"]
    text: str = ""
    answer: Answer | None = None
    draft: Draft | None = None

    def __add__(self, other: AnswerEvent) -> AnswerEvent:
        text = other.text if other.kind == "restart" else (
            self.text + other.text if other.kind == "token" else self.text)
        return AnswerEvent(other.kind if other.kind in ("answer", "restart") else self.kind, text,
                           other.answer or self.answer)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "text": self.text, "answer": self.answer}


def ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 2)


def timed(obj, **timings: float):
    return replace(obj, timings={**obj.timings, **timings})


# The languages the reader model reads: it is MiniLM fine-tuned on English (rag_core/reader).
READER_LANGUAGES = frozenset({"en"})


def reader_reads(ctx: Context) -> bool:
    """Whether the reader can judge this question over these passages: both in a language
    it reads (a chunk from before languages, "", is English). The best passage stands for
    the passages: it is the one an answer would come from."""
    if ctx.turn.language not in READER_LANGUAGES:
        return False
    return not ctx.sources or (ctx.sources[0].chunk.language or "en") in READER_LANGUAGES
