"""The answer pipeline: one LCEL chain, used unchanged by the chat page, `ask` and the
benchmarks.

    AnswerRequest ─ condense ─▶ Turn ─ retrieve ─▶ Context ─ gate ─▶ Context ─ respond ─▶ AnswerEvent…

- **condense**: a follow-up becomes a standalone question (the LLM rewrites it; offline,
  generation/condense.py replaces the pronoun with the earlier question's topic).
- **retrieve**: the `GroundworkRetriever` (a LangChain `BaseRetriever`) with the selected
  knowledge bases' merged settings and the caller's filters; LLM paraphrases and HyDE, when
  switched on, are fused in.
- **gate**: the reader model reads the passages; the answer policy (policy.py) decides whether
  to go on: offline the reader judges, with a model the policy in force says whether the
  reader's evidence or the model's relevance check may stop it.
- **respond** (a generator): in LLM mode `prompt | chat model | parser` streams tokens; offline
  the extractive answerer's sentences stream. Then "checking the sources…", the `verify`
  runnable (claims, grounding, answers-the-question), corrective retrieval when confidence
  is low (announced, and the rewritten answer streamed in place of the first: never a silent
  swap), grounded-only filtering, citations, the answer policy's decision (show, flag or
  withhold, with `decided_by`), and finally the verified `Answer`.

Every step is a runnable taking and returning typed values, so the chain invokes, streams
and traces like any LCEL chain (callbacks see "condense", "GroundworkRetriever", "gate",
"generate", "verify", …). `chain.invoke(req)` returns the events summed into one, whose
`.answer` is the final Answer; `chain.stream(req)` yields them one by one.

An LLM failure (timeout, connection, HTTP error) at any step is survived: the step falls
back (keeps the question, skips the optional search, answers offline, keeps the answer it
has) and the answer says so (`models["llm_error"]`, a "notice" event while streaming).
"""

from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Literal

import numpy as np
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.utils import trim_messages
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableConfig, RunnableGenerator, RunnableLambda

from ..config import Settings
from ..embeddings import MINILM_ID, bundled_embedder
from ..grounding.citations import MARKER, attach_markers, citation_for, resolve
from ..grounding.verify import Verifier, answer_sentences, answers_question, confidence, grounding_score, plain
from ..models import Answer, Citation, Claim, KnowledgeBase, RetrievalSettings, ScoredChunk, SearchFilters
from ..reader import get_reader
from ..retrieval.query import key_terms
from ..retrieval.retriever import GroundworkRetriever, from_lc_document
from ..retrieval.settings import merged_settings
from ..stores.adjacent import neighbours, widened
from ..text import messages
from ..text.stopwords import STOPWORDS as STOPWORDS_BY_LANG
from ..text.fusion import RRF_K
from ..text.analysis import analyze
from ..text.language import question_language
from ..text.tokens import count_tokens
from .condense import condense as condense_offline
from .extractive import Evidence as Reading
from .extractive import SELECTION_FEATURES, ExtractiveAnswerer, cite, passage_for, sentence_by_terms
from ..grounding.conflicts import ANSWERS_MIN, asked_kind, conflict_record, find_conflicts, values
from .policy import LANGUAGE, PLAIN, AnswerPolicy, Decision, Signals, merged_choice, policy_for
from .planner import CatalogueEntry, Planner, Route, mentioned, topic_terms
from .prompts import (COMPARE_REMINDER, CONDENSE_PROMPT, DOCUMENT_REMINDER, HYDE_PROMPT, RELEVANCE_TASK, VERIFY_PROMPT,
                      neutralise, system_prompt, user_message)
from . import document_reader as docread
from ..retrieval.query import detect_lookup

log = logging.getLogger(__name__)
ABSTAIN_TEXT = messages.text("abstain")  # the English refusal; every language's is in text/messages.py
CHECKING = "Checking the answer against the sources…"
_MARKER = re.compile(r"\s*\[\d{1,3}\]")
# The model's own "not in the sources" (rule 4 of the prompt, and the usual paraphrases). An
# answer that says only this, citing nothing, is an abstention and is shown as one.
_NO_ANSWER = re.compile(
    r"\b(i (do not|don't|cannot|can't) (have|find|see)|(is|are) not (mentioned|provided|stated|given|included|specified)"
    r"|(do|does) not (contain|mention|provide|state|say|specify)|no (information|mention)|not enough information"
    r"|cannot be (determined|answered|found))\b"
    # the same in the other languages the app speaks (the model answers in the question's)
    r"|keine (informationen|angaben)|nicht (erwähnt|enthalten|angegeben)|je n'ai pas d'information|aucune information"
    r"|ne (mentionnent|contiennent|précisent) pas|no tengo información|no (mencionan|contienen|se menciona)"
    r"|情報(は|が)(ありません|見つかりません)|記載(は|が)(ありません|されていません)|没有(相关)?(信息|提及)|未(提及|提供)", re.I)


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


@dataclass(frozen=True)
class Context:
    """retrieve → gate → respond: the passages and the reader's verdict on them."""

    turn: Turn
    sources: list[ScoredChunk]
    lookup_source: str | None = None
    lookup_chunks: int = 0  # a lookup: the document's passages in all (more than `sources` when cut short)
    best: float = 0.0  # best passage's reranker (or fused) score
    below_threshold: int = 0  # passages the knowledge bases' minimum relevance dropped
    reading: Reading | None = None
    policy: AnswerPolicy | None = None  # the answer policy in force for this question
    decision: Decision | None = None  # its decision before generation
    relevance: bool | None = None  # the model's relevance check, when it ran

    @property
    def abstain(self) -> bool:
        return self.decision is not None and self.decision.abstain


def closest_passages(sources: list[ScoredChunk], reading: Reading | None, k: int, question: str = "",
                     language: str = "en", idf=None) -> list[Citation]:
    """The passages that came nearest to answering, for an abstention: ranked by the reader's
    best P(answers) over each passage's sentences (retrieval order where it read none), each
    with the sentence it liked best as the snippet the viewer highlights and the paragraph,
    list or code block around it as an offline answer would show it (extractive.passage_for).
    A refusal with the answering passage in hand is then still useful: the person sees it,
    its best sentence marked, and judges. Where the reader read nothing (a language it does
    not read), retrieval's order stands and each passage's best sentence is the one sharing
    the most weighted terms with the question (extractive.sentence_by_terms)."""
    if k <= 0 or not sources:
        return []
    best: dict[int, tuple[float, int, str]] = {}
    if reading is not None:
        for (si, ki, text), p in zip(reading.cands, reading.probs):
            if si not in best or float(p) > best[si][0]:
                best[si] = (float(p), ki, text)
    elif question:
        for si, s in enumerate(sources[:k]):
            got = sentence_by_terms(question, language, s.chunk.text, s.chunk.language or "en", idf)
            if got is not None:
                best[si] = (0.0, *got)
    order = sorted(range(len(sources)), key=lambda i: (-best.get(i, (-1.0, 0, ""))[0], i))[:k]
    out = []
    for n, i in enumerate(order, 1):
        if i not in best:
            out.append(citation_for(n, sources[i], ""))
            continue
        _, k_i, sentence = best[i]
        passage, highlight = passage_for(sources[i].chunk.text, k_i, sentence)
        c = citation_for(n, sources[i], highlight or sentence)
        c.passage = passage or ""
        out.append(c)
    return out


@dataclass
class AnswerEvent:
    """What the chain streams. kind: "token" (answer text), "status" (a step in progress),
    "restart" (the text so far is replaced: the answer is rewritten), "notice" (the LLM
    failed; answering offline), "answer" (the verified Answer, last).

    Events add up (`a + b`), as LCEL requires of streamed chunks: the sum holds the text
    since the last restart and the final answer, so `chain.invoke()` returns one event."""

    kind: Literal["token", "status", "restart", "notice", "answer"]
    text: str = ""
    answer: Answer | None = None

    def __add__(self, other: AnswerEvent) -> AnswerEvent:
        text = other.text if other.kind == "restart" else (
            self.text + other.text if other.kind == "token" else self.text)
        return AnswerEvent(other.kind if other.kind in ("answer", "restart") else self.kind, text,
                           other.answer or self.answer)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "text": self.text, "answer": self.answer}


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 2)


def _timed(obj, **timings: float):
    return replace(obj, timings={**obj.timings, **timings})


class AnswerEngine:
    def __init__(self, retrieval, embedder, store, settings: Settings, chat=None, callbacks: list | None = None,
                 locate_page=None, fast_chat=None, cache=None):
        # locate_page(kb_id, doc_id, first, last, text) -> the page of first..last holding
        # `text` (the Workspace reads the stored PDF): a passage crossing a page break is cited
        # at the page its cited sentences are on, not the page it starts on.
        self.locate_page = locate_page
        self.retrieval = retrieval
        self.embedder = embedder
        self.store = store
        self.settings = settings
        self.chat = chat
        idf = getattr(store, "idf", None)
        self.reader = get_reader(settings.reader_threads)
        self.verifier = Verifier(reader=self.reader, idf=idf)
        # the selection's cosine feature comes from the model it was fitted with (embeddings.bundled_embedder)
        selection = embedder if getattr(embedder, "model_id", "") == MINILM_ID else bundled_embedder(settings)
        self.extractive = ExtractiveAnswerer(reader=self.reader, idf=idf, embed=selection.embed_array)
        self.retriever = GroundworkRetriever(pipeline=retrieval)
        # Documents go in the human turn inside <retrieved_context>; the system turn holds only
        # our rules and the knowledge bases' instructions (prompts.py).
        self.prompt = ChatPromptTemplate.from_messages(
            [("system", "{system}"), MessagesPlaceholder("history", optional=True), ("human", "{user}")]
        )
        self.llm = (chat | StrOutputParser()) if chat is not None else None
        # the small steps (condense, plan, relevance check, rewrites) go to the fast model
        self.fast = (fast_chat | StrOutputParser()).with_config(run_name="fast_model") if fast_chat is not None else self.llm
        self.planner = Planner(llm=self.fast if settings.planner_asks_model else None)
        self.cache = cache  # answer_cache.AnswerCache, or None
        self.generator = (self.prompt | self.llm).with_config(run_name="generate") if chat is not None else None
        self.verify = RunnableLambda(self._verify_step, name="verify")
        self.pipeline = (
            RunnableLambda(self._condense, name="condense")
            | RunnableLambda(self._plan, name="plan")
            | RunnableLambda(self._retrieve, name="retrieve")
            | RunnableLambda(self._gate, name="gate")
            | RunnableGenerator(self._respond, name="respond")
        )
        # The cache sits in front of everything: a hit is served in milliseconds, without a
        # model call; a miss runs the pipeline and stores its verified answer.
        self.chain = RunnableGenerator(self._serve, name="answer").with_config(
            run_name="groundwork_answer", callbacks=callbacks or None)

    @property
    def mode(self) -> str:
        return "llm" if self.chat is not None else "extractive"

    # ---- public ----------------------------------------------------------------------
    def answer(self, req: AnswerRequest, config: RunnableConfig | None = None) -> Answer:
        return self.chain.invoke(req, config).answer

    def stream(self, req: AnswerRequest, config: RunnableConfig | None = None) -> Iterator[dict[str, Any]]:
        """The chain's events as dicts ({"type", "text", "answer"}), for callers that want them."""
        for ev in self.chain.stream(req, config):
            yield ev.to_dict()

    # ---- steps -----------------------------------------------------------------------
    def _models(self) -> dict[str, str]:
        m = {"embedding": getattr(self.embedder, "model_id", "?"), "reader": f"reader-int8@{self.reader.sha256[:12]}"}
        if self.chat is not None:
            m["llm"] = self.settings.llm_label
            m["llm_fast"] = self.settings.llm_fast_label
        return m

    def _condense(self, req: AnswerRequest, config: RunnableConfig) -> Turn:
        t = time.perf_counter()
        turn = Turn(req=req, standalone=req.question.strip(), settings=merged_settings(req.kbs), t0=t,
                    models=self._models())
        question = turn.standalone
        if any(role == "user" for role, _ in req.history):
            if self.llm is not None and self.settings.llm_condense:
                history = "\n".join(f"{role}: {_MARKER.sub('', text)}" for role, text in req.history[-6:])
                try:
                    question = self.fast.invoke(CONDENSE_PROMPT.format(history=history, question=question),
                                                config).strip().splitlines()[0].strip() or question
                except Exception as exc:  # noqa: BLE001 - keep going offline
                    turn = self._failed(turn, exc)
                    question = condense_offline(question, req.history)
            else:
                question = condense_offline(question, req.history)
        langs = req.filters.languages
        language = question_language(req.question.strip(), langs[0] if langs else "en")
        return _timed(replace(turn, standalone=question, language=language), condense=_ms(t))

    def _serve(self, inputs: Iterator[AnswerRequest], config: RunnableConfig) -> Iterator[AnswerEvent]:
        """The answer cache in front of the pipeline (answer_cache.py): a hit is the stored answer,
        marked cached with the time it was first computed; a miss runs the pipeline and stores
        its answer (not one composed offline because the model failed: that one is not what
        the settings ask for)."""
        req: AnswerRequest | None = None
        for req in inputs:
            pass
        assert req is not None
        use_cache = self.cache is not None and req.cache_key is not None
        if use_cache:
            t = time.perf_counter()
            hit = self.cache.get(req.cache_key)
            if hit is not None:
                first = hit.timings_ms.get("total")
                hit.question = req.question
                hit.timings_ms = {"cache": _ms(t), "total": _ms(t), **({"first_total": first} if first else {})}
                if not hit.abstained:
                    yield AnswerEvent("token", hit.text)
                yield AnswerEvent("answer", answer=hit)
                return
        final = None
        for ev in self.pipeline.stream(req, config):
            if ev.kind == "answer":
                final = ev.answer
            yield ev
        if use_cache and final is not None and "llm_error" not in final.models:
            self.cache.put(req.cache_key, final)

    def _plan(self, turn: Turn, config: RunnableConfig) -> Turn:
        """The planner's route for the standalone question (planner.py), over the documents the
        caller may see in scope."""
        t = time.perf_counter()
        req = turn.req
        cat = list(req.catalogue or [])
        lookup = detect_lookup(turn.standalone) if req.route in (None, "document") else None
        lookup_doc = None
        if lookup and cat:
            named = mentioned(lookup, cat)
            lookup_doc = named[0] if named else None
        route = self.planner.plan(turn.standalone, cat, override=req.route, lookup_doc=lookup_doc, config=config,
                                  use_model=self._llm_ok(turn))
        return _timed(replace(turn, route=route), plan=_ms(t))

    def _search(self, q: str, turn: Turn, config: RunnableConfig, query_vector=None) -> tuple[list[ScoredChunk], dict]:
        info: dict = {}  # filled even when nothing comes back (e.g. all below the minimum relevance)
        docs = self.retriever.invoke(q, config, filters=turn.req.filters, settings=turn.settings,
                                     query_vector=query_vector, report=info, lookup=turn.route.by != "user")
        return [from_lc_document(d) for d in docs], info

    def _retrieve(self, turn: Turn, config: RunnableConfig) -> Context:
        if turn.route.kind == "compare" or (turn.route.kind == "document" and turn.route.intent != "show"):
            return Context(turn=turn, sources=[])  # the documents are read whole when answering
        t = time.perf_counter()
        queries = [turn.standalone]
        qvec = None
        if self._llm_ok(turn) and self.settings.llm_multi_query:
            try:
                queries += self._paraphrases(turn.standalone, config)
            except Exception as exc:  # noqa: BLE001
                turn = self._failed(turn, exc)
        if self._llm_ok(turn) and self.settings.llm_hyde:
            # HyDE: a hypothetical answer is closer in embedding space to real answers than
            # the question is; keywords still come from the question itself.
            try:
                hypo = self.fast.invoke(HYDE_PROMPT.format(question=turn.standalone), config)
                if hypo.strip():
                    qvec = self.embedder.embed_array([hypo])[0]
            except Exception as exc:  # noqa: BLE001
                turn = self._failed(turn, exc)
        runs = [self._search(q, turn, config, qvec if i == 0 else None) for i, q in enumerate(queries)]
        sources, info = runs[0]
        if len(runs) > 1:
            sources = _rrf_merge([r for r, _ in runs], turn.settings.top_k)
        timings = {f"retrieve_{k}": v for k, v in info.get("timings_ms", {}).items()}
        turn = _timed(turn, **timings, retrieve=_ms(t))
        if turn.route.kind == "document" and not info.get("lookup_source"):
            turn = replace(turn, route=Route("search", (), "rules", "asked to see a document, but none of that name is in scope"))
        return Context(turn=turn, sources=sources, lookup_source=info.get("lookup_source"),
                       lookup_chunks=int(info.get("lookup_chunks") or 0),
                       best=max((s.scores.get("rerank", s.score) for s in sources), default=0.0),
                       below_threshold=int(info.get("below_threshold") or 0))

    def _gate(self, ctx: Context, config: RunnableConfig) -> Context:
        """The reader reads the passages (offline: to choose the answer; with a model: to choose
        and order what the model reads), then the answer policy decides whether to go on. The
        reader's evidence is a veto only where the policy in force makes it one."""
        turn = ctx.turn
        policy = policy_for(self.settings, merged_choice(turn.req.kbs), llm=self.chat is not None)
        turn = replace(turn, models={**turn.models, "policy": policy.name})
        ctx = replace(ctx, turn=turn, policy=policy)
        if ctx.lookup_source or not ctx.sources or not _reader_reads(ctx):
            return replace(ctx, decision=policy.before_generation(self._signals(ctx)))
        t = time.perf_counter()
        # LLM mode: every retrieved passage is read, to give the model the best-answering ones.
        reading = self.extractive.read(turn.standalone, ctx.sources,
                                       max_passages=len(ctx.sources) if self.chat is not None else None)
        ctx = replace(ctx, turn=_timed(turn, read=_ms(t)), reading=reading)
        decision = policy.before_generation(self._signals(ctx))
        turn = ctx.turn
        if not decision.abstain and self._llm_ok(turn):
            ctx = self._focus(ctx)
            if self.settings.llm_relevance_check:
                try:
                    # the answer's own prompt plus the task: the server's prompt cache then
                    # serves the answer's prompt, so the check costs a few tokens
                    msgs = self._prompt_value(turn, ctx.sources, RELEVANCE_TASK)
                    verdict = self.fast.invoke(self.prompt.invoke(msgs, config), config)
                    ctx = replace(ctx, relevance=not verdict.strip().lower().startswith("no"))
                except Exception as exc:  # noqa: BLE001
                    ctx = replace(ctx, turn=self._failed(turn, exc))
                decision = policy.before_generation(self._signals(ctx))
        return replace(ctx, decision=decision)

    def _signals(self, ctx: Context, **written) -> Signals:
        """What the policy reads: retrieval, the reader's evidence, the model's verdicts, and
        (after generation) the written answer's support and P(answers)."""
        kbs = ctx.turn.req.kbs
        route = ctx.turn.route
        return Signals(mode="llm" if self._llm_ok(ctx.turn) else "extractive", passages=len(ctx.sources),
                       route="search" if route.intent == "show" else route.kind,
                       dropped=ctx.below_threshold, min_relevance=ctx.turn.settings.score_threshold,
                       evidence=ctx.reading.best if ctx.reading is not None else None,
                       lookup=bool(ctx.lookup_source), relevance=ctx.relevance,
                       grounded_only=any(kb.grounded_only for kb in kbs), reader_reads=_reader_reads(ctx), **written)

    def _focus(self, ctx: Context) -> Context:
        """LLM mode: the passages the model reads, those holding the reader's best-answering
        sentences first, at most `llm_context_passages`. Passages without a sentence read
        keep their retrieval order after the read ones. The reading is renumbered to match,
        so an offline fallback cites the same numbers."""
        reading = ctx.reading
        if reading is None or not reading.cands:
            return ctx
        best: dict[int, float] = {}
        for (si, _, _), p in zip(reading.cands, reading.probs):
            best[si] = max(best.get(si, 0.0), float(p))
        order = sorted(range(len(ctx.sources)), key=lambda i: (-best.get(i, -1.0), i))
        order = order[: self.settings.llm_context_passages]
        new = {old: k for k, old in enumerate(order)}
        keep = [i for i, (si, _, _) in enumerate(reading.cands) if si in new]
        focused = Reading([(new[si], k, s) for si, k, s in (reading.cands[i] for i in keep)],
                          reading.probs[keep], reading.features[keep])
        return replace(ctx, sources=[ctx.sources[i] for i in order], reading=focused)

    def _respond(self, inputs: Iterator[Context], config: RunnableConfig) -> Iterator[AnswerEvent]:
        ctx: Context | None = None
        for ctx in inputs:  # one Context; a generator step receives its input as a stream
            pass
        assert ctx is not None
        route = ctx.turn.route
        if route.kind == "compare":
            events = self._respond_compare(ctx, config)
        elif route.kind == "document" and route.intent != "show":
            events = self._respond_document(ctx, config)
        else:
            events = self._respond_search(ctx, config)
        for ev in events:
            if ev.kind == "answer" and ev.answer is not None:
                ev.answer.route, ev.answer.plan = route.kind, route.record()
            yield ev

    def _respond_search(self, ctx: Context, config: RunnableConfig) -> Iterator[AnswerEvent]:
        if ctx.abstain:
            yield AnswerEvent("answer", answer=self._abstain(ctx, ctx.decision))
            return
        turn, sources = ctx.turn, ctx.sources
        t = time.perf_counter()
        draft, snippets, highlight = "", None, ""
        if self._llm_ok(turn) and not ctx.lookup_source:
            parts: list[str] = []
            try:
                for piece in self.generator.stream(self._prompt_value(turn, sources), config):
                    if piece:
                        parts.append(piece)
                        yield AnswerEvent("token", piece)
                draft = "".join(parts)
            except Exception as exc:  # noqa: BLE001 - answer offline instead
                turn = self._failed(turn, exc)
                yield AnswerEvent("notice", turn.models["llm_error"])
                if parts:
                    yield AnswerEvent("restart")
        if not draft:
            if self._llm_ok(ctx.turn) and not self._llm_ok(turn) and not ctx.lookup_source:
                # the model failed after the policy let the question through on its account:
                # the offline answer is the reader's, so the reader judges it as it would offline
                ctx = replace(ctx, turn=turn)
                decision = ctx.policy.before_generation(self._signals(ctx))
                if decision.abstain:
                    yield AnswerEvent("answer", answer=self._abstain(ctx, decision))
                    return
            draft, snippets, highlight, sources = self._offline_draft(ctx)
            if not draft:
                yield AnswerEvent("answer", answer=self._abstain(
                    ctx, ctx.policy.after_generation(self._signals(ctx, drafted=False))))
                return
            for sentence in answer_sentences(draft):
                yield AnswerEvent("token", sentence.strip() + " ")
        turn = _timed(turn, generate=_ms(t))
        declined = self._llm_ok(turn) and bool(_NO_ANSWER.search(draft)) and not _MARKER.search(draft)
        if declined:
            ctx = replace(ctx, turn=turn)
            yield AnswerEvent("answer", answer=self._abstain(ctx, ctx.policy.after_generation(
                self._signals(ctx, declined=True))))
            return

        # Conflicting sources: the rival's sentence joins the answer with its own citation, so
        # both sides are cited; which side says what, dated, is listed with the answer.
        conflicts = []
        if not ctx.lookup_source:
            t = time.perf_counter()
            conflicts, sources = self._conflicts(turn, ctx.reading, sources)
            turn = _timed(turn, conflicts=_ms(t))
        for cf in conflicts:
            for si, text in ((cf.lead, cf.lead_text), (cf.rival, cf.rival_text)):
                if text in _MARKERS.sub("", draft) and f"[{si + 1}]" in draft:
                    continue  # already said and cited (an LLM may have cited another passage)
                added = cite(text, si + 1)
                draft = f"{draft.rstrip()} {added}"
                if snippets is not None:
                    snippets[si + 1] = (snippets.get(si + 1, "") + " " + text).strip()
                yield AnswerEvent("token", " " + added)

        yield AnswerEvent("status", CHECKING)
        t = time.perf_counter()
        question = turn.standalone
        draft, claims, grounding, auto_cited = self._checked(draft, sources, question, config)
        rounds = revised = 0
        while (self._llm_ok(turn) and not ctx.lookup_source and self.settings.llm_crag
               and rounds < self.settings.llm_crag_rounds
               and ctx.policy.correct(confidence(grounding, answers_question(claims)))):
            # Corrective retrieval: search for evidence of the unsupported claims and rewrite.
            # (An answer that is supported but does not answer has no weak claim to search
            # for: it stays, shown with its low "answers the question" score.)
            rounds += 1
            weak = [c.text for c in claims if c.label != "supported"][:3]
            if not weak:
                break
            yield AnswerEvent("status", "Some sentences are not supported by the sources: searching again…")
            seen = {s.chunk.chunk_id for s in sources}
            new = []
            for q in weak:
                for r in self._search(q, turn, config)[0]:
                    if r.chunk.chunk_id not in seen:
                        seen.add(r.chunk.chunk_id)
                        new.append(r)
            if not new:
                break
            more = sources + new[:4]
            parts = []
            yield AnswerEvent("restart", "")
            yield AnswerEvent("status", f"Rewriting the answer with {len(new[:4])} more passage(s)…")
            try:
                for piece in self.generator.stream(self._prompt_value(turn, more), config):
                    if piece:
                        parts.append(piece)
                        yield AnswerEvent("token", piece)
            except Exception as exc:  # noqa: BLE001 - the endpoint failed mid-correction: keep the answer we have
                turn = self._failed(turn, exc)
                yield AnswerEvent("notice", turn.models["llm_error"])
                yield AnswerEvent("restart", draft)
                break
            redo, c2, g2, n2 = self._checked("".join(parts), more, question, config)
            if confidence(g2, answers_question(c2)) < confidence(grounding, answers_question(claims)):
                # The rewrite is worse: show the first answer again, and say so.
                yield AnswerEvent("restart", draft)
                yield AnswerEvent("status", "The rewrite was not better supported; keeping the first answer.")
                break
            draft, sources, claims, grounding, auto_cited = redo, more, c2, g2, n2
            revised += 1
        turn = _timed(turn, crag_rounds=rounds)
        if self._llm_ok(turn) and self.settings.llm_verify:
            claims, grounding, turn = self._llm_judge(turn, claims, sources, config)
        draft, claims, grounding, kept = self._grounded_only(turn, draft, claims, grounding, sources, question, config)
        res = _resolved(draft, sources, snippets, claims)
        # A document lookup ("show me the biography file") is answered by showing that document:
        # fully only when all of it is shown. An excerpt (cut by the context budget, or its
        # passages shortened) is scored like any answer: the reader's P(answers) on the text shown.
        aq = 1.0 if ctx.lookup_source and _lookup_complete(ctx) else answers_question(claims)
        ctx = replace(ctx, turn=turn)
        if not ctx.lookup_source and not _reader_reads(ctx):
            aq = None  # the reader does not read this language: "answers the question" was not judged
        sig = self._signals(ctx, labels=tuple(c.label for c in claims), answers=aq,
                            kept=None if kept is None else len(kept))
        decision = ctx.policy.after_generation(sig)
        if decision.abstain:
            yield AnswerEvent("answer", answer=self._abstain(ctx, decision, sig))
            return
        turn = _timed(turn, verify=_ms(t), total=_ms(turn.t0))
        reading = ctx.reading
        self._place_pages(res.citations, sources, claims, highlight)
        shown = [conflict_record(cf, sources, res.mapping) for cf in conflicts]
        yield AnswerEvent("answer", answer=Answer(
            question=turn.req.question, text=res.text, citations=res.citations, claims=claims,
            grounding_score=grounding, answers_question=aq, confidence=grounding if aq is None else confidence(grounding, aq),
            abstained=False, language=turn.language,
            invalid_citations=res.invalid, retrieval_score=round(ctx.best, 4),
            evidence_score=round(reading.best if reading else 0.0, 4),
            mode="extractive" if "llm_error" in turn.models or self.chat is None else "llm",
            models=turn.models, timings_ms=turn.timings, standalone_question=turn.standalone, revised=revised, auto_cited=auto_cited,
            below_threshold=ctx.below_threshold, conflicts=[c for c in shown if c],
            decided_by=decision.decided_by, policy=ctx.policy.name, signals=_signal_record(sig), highlight=highlight,
        ))

    # ---- whole documents and comparisons ---------------------------------------------
    def _respond_document(self, ctx: Context, config: RunnableConfig) -> Iterator[AnswerEvent]:
        """One document read as a whole: with a model, its text within the token budget, in
        parts beyond it (map-reduce, progress shown); offline, its outline (the headings with
        each section's most central sentence) or, for a request about something in it ("list
        every option"), the sections that mention it with their best sentence."""
        turn = ctx.turn
        doc = turn.route.documents[0]
        t = time.perf_counter()
        chunks = self.store.document_chunks(doc.kb_id, doc.doc_id)
        lang = doc.language or (chunks[0].language if chunks else "") or "en"
        if chunks and self._llm_ok(turn):
            try:
                draft, sources, note = yield from self._read_with_model(turn, doc, chunks, config)
                if draft.strip():
                    turn = _timed(turn, read_document=_ms(t))
                    if _NO_ANSWER.search(draft) and not _MARKER.search(draft):
                        draft = ""
                        yield AnswerEvent("restart")  # the model's refusal gives way to the outline
                    else:
                        yield from self._finish_whole(replace(ctx, turn=turn), draft, sources, None, config,
                                                      {"read": note, "sections": len(sources)})
                        return
            except Exception as exc:  # noqa: BLE001 - the model failed: the offline outline instead
                turn = self._failed(turn, exc)
                yield AnswerEvent("notice", turn.models["llm_error"])
                yield AnswerEvent("restart")
        draft, sources, info = self._outline(turn, doc, chunks, lang)
        turn = _timed(turn, read_document=_ms(t))
        ctx = replace(ctx, turn=turn)
        if not draft:
            yield AnswerEvent("answer", answer=self._abstain(ctx, ctx.policy.after_generation(
                self._signals(ctx, drafted=False))))
            return
        for line in draft.split("\n"):
            yield AnswerEvent("token", line + "\n")
        yield from self._finish_whole(ctx, draft, sources, None, config, info)

    def _outline(self, turn: Turn, doc: CatalogueEntry, chunks, lang: str):
        """(draft, sources, info): the offline reading of a whole document, one list item per
        section: its heading, then its most central sentence (or, for a request about a topic,
        the sentence of that section that shares most of the request's terms), cited."""
        if not chunks:
            return "", [], {}
        secs = docread.sections(chunks)
        limit = self.settings.outline_sections
        topic = " ".join(topic_terms(turn.standalone, turn.route.documents, turn.language))
        picks: list[tuple[int, str, Any]] = []  # (section index, sentence, chunk)
        if turn.route.intent == "ask" and topic:
            want = set(analyze(topic, turn.language)) | set(analyze(topic, lang))
            hits = []
            for i, sec in enumerate(secs):
                terms = analyze(sec.text, lang)
                n = sum(1 for x in terms if x in want)
                if n:
                    hits.append((n / math.sqrt(len(terms) or 1), i))
            for _, i in sorted(hits, reverse=True)[:limit]:
                for c in secs[i].chunks:
                    got = docread.sentence_on(want, c.text, lang)
                    if got is not None:
                        picks.append((i, got, c))
                        break
            picks.sort(key=lambda p: p[0])
            how = f"the {len(picks)} section(s) of {len(secs)} that mention {topic}"
        else:
            secs, picks = docread.outline(chunks, limit, lang)
            how = (f"an outline: {len({p[0] for p in picks})} of its {len(secs)} sections, each with its most "
                   "central sentence")
        if not picks:
            return "", [], {}
        sources: list[ScoredChunk] = []
        pos: dict[str, int] = {}
        lines = []
        for i, sentence, chunk in picks:
            if chunk.chunk_id not in pos:
                sources.append(ScoredChunk(chunk, 1.0, {"document": 1.0}))
                pos[chunk.chunk_id] = len(sources)
            # a part of an undivided document has no heading of its own: its sentence alone
            # (a made-up "part 2 of 8" would be words the sources do not hold)
            head = "" if secs[i].label else _item_heading(secs[i].heading)
            lines.append(f"- {head}: {cite(sentence, pos[chunk.chunk_id])}" if head
                         else f"- {cite(sentence, pos[chunk.chunk_id])}")
        total = sum(s.tokens for s in secs) or 1
        covered = sum(secs[i].tokens for i in {p[0] for p in picks}) / total
        return "\n".join(lines), sources, {"read": how, "sections": len(secs), "coverage": round(covered, 4)}

    def _read_with_model(self, turn: Turn, doc: CatalogueEntry, chunks, config):
        """Generator: the model reads the document (events: progress and tokens); returns
        (draft, sources, note). Sources are the document's sections, numbered in order."""
        budget = self.settings.document_budget
        total = sum(count_tokens(c.text) for c in chunks)
        lang = doc.language or chunks[0].language or "en"
        want = max(3, min(60, total // 600))
        secs = docread.sections(chunks, want=want)
        ps = docread.parts(secs, budget)
        note = f"the whole document ({total:,} tokens)" if len(ps) == 1 else f"the whole document in {len(ps)} parts"
        if len(ps) > self.settings.document_max_parts:
            keep = docread.central_chunks(chunks, budget * self.settings.document_max_parts, lang)
            secs = docread.sections(keep, want=want)
            ps = docread.parts(secs, budget)
            note = (f"its {len(keep)} most central passages of {len(chunks)} ({len(ps)} parts): the whole "
                    f"document is over {self.settings.document_max_parts} parts of {budget:,} tokens")
        sources = [sec.source() for p in ps for sec in p]
        if len(ps) == 1:
            parts = []
            for piece in self.generator.stream(self._prompt_value(turn, sources, reminder=DOCUMENT_REMINDER), config):
                if piece:
                    parts.append(piece)
                    yield AnswerEvent("token", piece)
            return "".join(parts), sources, note
        notes, off = [], 0
        for i, part in enumerate(ps, 1):
            yield AnswerEvent("status", f"Reading {doc.source}: part {i} of {len(ps)}…")
            srcs = [sec.source() for sec in part]
            task = docread.MAP_TASK.format(span=f"{off + 1}–{off + len(srcs)}", name=neutralise(doc.source),
                                           question=neutralise(turn.standalone))
            out = self.llm.invoke(self.prompt.invoke(self._prompt_value(turn, srcs, task), config), config)
            notes.append(_renumber(out, len(srcs), off))
            off += len(srcs)
        yield AnswerEvent("status", f"Writing the answer from the notes on {len(ps)} parts…")
        from ..text.language import name as language_name

        prompt = docread.REDUCE_PROMPT.format(name=neutralise(doc.source), notes=_TAGS.sub("", "\n\n".join(notes)),
                                              question=neutralise(turn.standalone),
                                              language=language_name(turn.language) if turn.language else "English")
        parts = []
        for piece in self.llm.stream(prompt, config):
            if piece:
                parts.append(piece)
                yield AnswerEvent("token", piece)
        return "".join(parts), sources, note

    def _respond_compare(self, ctx: Context, config: RunnableConfig) -> Iterator[AnswerEvent]:
        """Several documents side by side: each is searched on its own for what the question is
        about (or, when it names no topic, read through its most central passages); the answer
        says, per document, what each states, dated where the document has a date."""
        turn = ctx.turn
        docs = list(turn.route.documents)
        t = time.perf_counter()
        topic = " ".join(topic_terms(turn.standalone, docs, turn.language))
        per_doc: list[tuple[CatalogueEntry, list[ScoredChunk]]] = []
        for d in docs:
            if topic:
                f = replace(turn.req.filters, kb_ids=[d.kb_id], doc_ids=[d.doc_id])
                r = self.retrieval.run(topic, f, turn.settings, k=COMPARE_PASSAGES, lookup=False)
                got = r.results
            else:
                chunks = self.store.document_chunks(d.kb_id, d.doc_id)
                budget = max(200, self.settings.document_budget // max(len(docs), 1)) if self._llm_ok(turn) else 600
                got = [ScoredChunk(c, 1.0, {"document": 1.0}) for c in
                       docread.central_chunks(chunks, budget, d.language or "en")[:COMPARE_PASSAGES]]
            per_doc.append((d, got))
        turn = _timed(turn, read_documents=_ms(t))
        ctx = replace(ctx, turn=turn)
        sources = [s for _, got in per_doc for s in got]
        info = {"read": f"{len(docs)} documents, each " + (f"searched for {topic}" if topic else "through its most central passages"),
                "documents": len(docs)}
        if sources and self._llm_ok(turn):
            parts = []
            try:
                for piece in self.generator.stream(self._prompt_value(turn, sources, reminder=COMPARE_REMINDER), config):
                    if piece:
                        parts.append(piece)
                        yield AnswerEvent("token", piece)
                draft = "".join(parts)
                if draft.strip() and not (_NO_ANSWER.search(draft) and not _MARKER.search(draft)):
                    yield from self._finish_whole(ctx, draft, sources, None, config, info, docs)
                    return
            except Exception as exc:  # noqa: BLE001
                turn = self._failed(turn, exc)
                ctx = replace(ctx, turn=turn)
                yield AnswerEvent("notice", turn.models["llm_error"])
            yield AnswerEvent("restart")
        lines, used = [], []
        if not topic and len(docs) == 2:
            # two versions of one document ("what changed?"): the sentences that differ
            lines, used = self._changes(docs, turn)
            if lines:
                info = {**info, "read": "2 documents, sentence by sentence: what changed between them"}
        question = topic or turn.standalone
        for d, got in ([] if lines else per_doc):
            if not got:
                continue
            sentence, src = None, None
            if _reader_reads(replace(ctx, sources=got)) and topic:
                reading = self.extractive.read(question, got, max_passages=len(got))
                if reading.cands:
                    si, _, text = reading.cands[int(np.argmax(reading.probs))]
                    sentence, src = text, got[si]
            if sentence is None:
                for s in got:
                    found = (sentence_by_terms(question, turn.language, s.chunk.text, s.chunk.language or "en", self.store.idf)
                             if topic else None)
                    if found is None and not topic:
                        central = docread.central_sentences([docread.Section(s.chunk.section, [s.chunk])],
                                                            s.chunk.language or "en")[0]
                        found = (0, central[0][0]) if central else None
                    if found is not None:
                        sentence, src = found[1], s
                        break
            if sentence is None:
                continue
            used.append(src)
            date = f" ({d.date})" if d.date else ""
            lines.append(f"- {_item_heading(d.source)}{date}: {cite(sentence, len(used))}")
        if not lines:
            yield AnswerEvent("answer", answer=self._abstain(ctx, ctx.policy.after_generation(
                self._signals(ctx, drafted=False))))
            return
        draft = "\n".join(lines)
        for line in lines:
            yield AnswerEvent("token", line + "\n")
        yield from self._finish_whole(ctx, draft, used, None, config, info, docs)

    def _changes(self, docs: list[CatalogueEntry], turn: Turn) -> tuple[list[str], list[ScoredChunk]]:
        """Offline "what changed": each changed, removed or added sentence under its document's name."""
        a, b = (self.store.document_chunks(d.kb_id, d.doc_id) for d in docs)
        found = docread.changes(a, b, docs[0].language or "en", limit=self.settings.outline_sections)
        lines: list[str] = []
        used: list[ScoredChunk] = []
        pos: dict[str, int] = {}

        def item(d: CatalogueEntry, sc, only: bool = False) -> str:
            sentence, chunk = sc
            if chunk.chunk_id not in pos:
                used.append(ScoredChunk(chunk, 1.0, {"document": 1.0}))
                pos[chunk.chunk_id] = len(used)
            date = f" ({d.date})" if d.date else ""
            head = f"Only in {_item_heading(d.source)}" if only else _item_heading(d.source)
            return f"- {head}{date}: {cite(sentence, pos[chunk.chunk_id])}"

        for old, new in found:
            if old is not None:
                lines.append(item(docs[0], old, only=new is None))
            if new is not None:
                lines.append(item(docs[1], new, only=old is None))
        return lines, used

    def _finish_whole(self, ctx: Context, draft: str, sources: list[ScoredChunk], snippets, config,
                      info: dict, documents: list[CatalogueEntry] | None = None) -> Iterator[AnswerEvent]:
        """Verification and the answer, for a whole-document or comparison route: every sentence
        checked against its sources as for any answer. "Answers the question" is not judged (the
        reader scores whether a sentence answers a question, not whether an outline or a
        comparison covers documents); the record says what was read and how much of it."""
        turn = ctx.turn
        yield AnswerEvent("status", CHECKING)
        t = time.perf_counter()
        draft, claims, grounding, auto_cited = self._checked(draft, sources, turn.standalone, config)
        # as for any answer: grounded-only drops unsupported sentences
        draft, claims, grounding, kept = self._grounded_only(turn, draft, claims, grounding, sources,
                                                             turn.standalone, config)
        res = _resolved(draft, sources, snippets, claims)
        if documents:
            cited_docs = {cit.doc_id for cit in res.citations}
            info = {**info, "documents_cited": sum(1 for d in documents if d.doc_id in cited_docs)}
        sig = self._signals(ctx, labels=tuple(c.label for c in claims), answers=None,
                            kept=None if kept is None else len(kept))
        decision = ctx.policy.after_generation(sig)
        if decision.abstain:
            yield AnswerEvent("answer", answer=self._abstain(ctx, decision, sig))
            return
        turn = _timed(turn, verify=_ms(t), total=_ms(turn.t0))
        self._place_pages(res.citations, sources, claims)
        yield AnswerEvent("answer", answer=Answer(
            question=turn.req.question, text=res.text, citations=res.citations, claims=claims,
            grounding_score=grounding, answers_question=None, confidence=grounding, abstained=False,
            language=turn.language, invalid_citations=res.invalid, retrieval_score=1.0, evidence_score=0.0,
            mode="extractive" if "llm_error" in turn.models or not self._llm_ok(turn) else "llm",
            models=turn.models, timings_ms=turn.timings, standalone_question=turn.standalone,
            auto_cited=auto_cited, decided_by=decision.decided_by, policy=ctx.policy.name,
            signals={**_signal_record(sig), **info},
        ))

    # ---- helpers ---------------------------------------------------------------------
    def _conflicts(self, turn: Turn, reading: Reading | None, sources: list[ScoredChunk]):
        """(conflicts, sources): the answer's passages may leave out the other version of a
        document (MMR drops near-duplicates as redundant; extractive mode reads the top few), so
        the lead sentence is also looked up by keywords, within the caller's filters: passages
        of other documents found that way are read and, if one conflicts, join the sources so
        it can be cited."""
        if reading is None or not reading.cands:
            return [], sources
        col = SELECTION_FEATURES.index("reader_logit")
        cands, probs = list(reading.cands), list(reading.probs)
        rprobs = list(self.reader.calibration["answers"](reading.features[:, col]))
        lead = max(range(len(cands)), key=lambda i: probs[i])
        lead_text = cands[lead][2]
        if rprobs[lead] < ANSWERS_MIN or not (asked_kind(turn.standalone) or values(lead_text, "number")
                                               or values(lead_text, "date")):
            return [], sources  # nothing a second document could state differently
        lead_doc = sources[cands[lead][0]].chunk.doc_id
        read = {si for si, _, _ in cands}
        seen = {s.chunk.chunk_id for s in sources}
        extra = [r for r in self.store.keyword_search(lead_text, RIVAL_SEARCH, turn.req.filters)
                 if r.chunk.chunk_id not in seen and r.chunk.doc_id != lead_doc]
        pool = list(sources) + extra
        # other documents' passages not read yet: retrieved but past the reading's depth, or found now
        to_read = [i for i in range(len(pool)) if i not in read and pool[i].chunk.doc_id != lead_doc]
        if to_read:
            more = self.extractive.read(turn.standalone, [pool[i] for i in to_read], max_passages=len(to_read))
            cands += [(to_read[si], k, text) for si, k, text in more.cands]
            probs += [0.0] * len(more.cands)  # never the lead: the answer already has one
            rprobs += list(self.reader.calibration["answers"](more.features[:, col])) if more.cands else []
        found = find_conflicts(turn.standalone, cands, probs, rprobs, [s.chunk.doc_id for s in pool], self.reader)
        if not found:
            return [], sources
        # keep the sources the answer had, plus those a conflict cites (renumbered in order)
        need = sorted({cf.rival for cf in found if cf.rival >= len(sources)})
        new_index = {old: len(sources) + i for i, old in enumerate(need)}
        for cf in found:
            cf.rival = new_index.get(cf.rival, cf.rival)
        return found, sources + [pool[i] for i in need]

    def _place_pages(self, citations: list[Citation], sources: list[ScoredChunk], claims: list[Claim],
                     highlight: str = "") -> None:
        """A citation of a passage that crosses a page break names the page of the words it is
        cited for: the sentences that cite it (offline: the highlighted sentence, the one that
        answers), not the page holding most of the passage."""
        if self.locate_page is None:
            return
        by_id = {s.chunk.chunk_id: s.chunk for s in sources}
        for c in citations:
            ch = by_id.get(c.chunk_id)
            if ch is not None and ch.page_end > ch.page_start:
                words = highlight if highlight and len(citations) == 1 else " ".join(
                    cl.text for cl in claims if c.n in cl.cited)
                try:
                    c.page = int(self.locate_page(ch.kb_id, ch.doc_id, ch.page_start, ch.page_end, words or c.snippet))
                except Exception:  # noqa: BLE001 - the file may be gone or unreadable: keep the first page
                    log.debug("page lookup failed for %s", c.chunk_id, exc_info=True)

    def _offline_draft(self, ctx: Context) -> tuple[str, dict | None, str, list[ScoredChunk]]:
        """The answer without a model, and the sources it is checked against: the passage that
        answers is the document's paragraph (or list, or code block), so the best source is
        read with its neighbouring chunks and stands for all three from here on (its id, and
        so its citation, unchanged)."""
        if ctx.lookup_source:
            srcs = ctx.sources[:LOOKUP_PASSAGES]
            total = max(ctx.lookup_chunks, len(ctx.sources))
            shortened = any(len(" ".join(s.chunk.text.split())) > LOOKUP_PASSAGE_CHARS for s in srcs)
            what = (f"Here is {srcs[0].chunk.source}" if _lookup_complete(ctx) else
                    f"Here is an excerpt of {srcs[0].chunk.source} ({len(srcs)} of its {total} passages"
                    + (", each cut to its start" if shortened else "") + ")")
            return (f"{what}, passage by passage: " + " ".join(
                f"{_lookup_text(s)} [{i}]" for i, s in enumerate(srcs, 1)), {}, "", ctx.sources)
        reading = ctx.reading or self.extractive.read(ctx.turn.standalone, ctx.sources)
        sources = list(ctx.sources)
        context = {}
        if reading.cands:
            si = reading.cands[int(np.argmax(reading.probs))][0]
            chunk = sources[si].chunk
            try:
                wide = widened(chunk, *neighbours(self.store, chunk))
            except Exception:  # noqa: BLE001 - a store that cannot fetch by id: the chunk alone
                log.debug("neighbours of %s unavailable", chunk.chunk_id, exc_info=True)
                wide = chunk
            if wide is not chunk:
                context[si] = wide.text
                sources[si] = replace(sources[si], chunk=wide)
        ex = self.extractive.compose(reading, ctx.sources, context)
        return ex.text, ex.snippets, ex.highlight, sources

    def _grounded_only(self, turn: Turn, draft: str, claims: list[Claim], grounding: float,
                       sources: list[ScoredChunk], question: str, config):
        """Grounded-only knowledge bases: the answer without its unsupported sentences, verified
        again (draft, claims, grounding, the claims kept; kept is None when not grounded-only)."""
        if not any(kb.grounded_only for kb in turn.req.kbs):
            return draft, claims, grounding, None
        kept = [c for c in claims if c.label != "unsupported"]
        if kept and len(kept) < len(claims):
            cited_by = {c.text: c.cited_by for c in claims}
            draft = _keep_sentences(draft, {c.text for c in kept})
            claims, grounding = self.verify.invoke((draft, sources, question), config)
            for c in claims:
                c.cited_by = cited_by.get(c.text, "model" if c.cited else None)
        return draft, claims, grounding, kept

    def _checked(self, draft: str, sources: list[ScoredChunk], question: str, config):
        """A written draft with its markers placed, uncited and mis-cited sentences cited
        where a passage supports them, and verified: (draft, claims, grounding, sentences
        cited by us)."""
        draft = attach_markers(draft)
        claims, grounding = self.verify.invoke((draft, sources, question), config)
        draft, fixed = _fix_citations(draft, claims)
        if fixed:
            claims, grounding = self.verify.invoke((draft, sources, question), config)
        for c in claims:  # who placed each citation: the writer of the draft, or this checker
            c.cited_by = "checker" if c.text in fixed else "model" if c.cited else None
        return draft, claims, grounding, len(fixed)

    def _verify_step(self, args: tuple[str, list[ScoredChunk], str]) -> tuple[list[Claim], float]:
        draft, sources, question = args
        return self.verifier.verify(draft, [s.chunk.text for s in sources], question=question,
                                    titles=[s.chunk.heading for s in sources])

    def _llm_ok(self, turn: Turn) -> bool:
        return self.llm is not None and "llm_error" not in turn.models

    def _failed(self, turn: Turn, exc: Exception) -> Turn:
        """The LLM endpoint failed (timeout, connection, HTTP error): note it; later LLM steps
        are skipped and the answer is composed offline."""
        where = self.settings.llm_label if self.settings.llm_gguf else (self.settings.openai_base_url or "the OpenAI API")
        msg = (f"The language model ({where}) did not answer ({type(exc).__name__}); "
               "this answer was composed offline from the sources instead.")
        return replace(turn, models={**turn.models, "llm_error": msg})

    def _abstain(self, ctx: Context, decision: Decision, sig: Signals | None = None) -> Answer:
        turn = ctx.turn
        lang = turn.language
        # plain words in the person's language where the rule's own words stand (a reason with
        # figures of its own, like the minimum relevance, stays as the policy wrote it)
        reason = (messages.reason(decision.decided_by, decision.reason, lang)
                  if decision.reason == PLAIN.get(decision.decided_by) else decision.reason)
        stop = STOPWORDS_BY_LANG.get(lang, ())
        terms = [t for t in key_terms(turn.standalone or turn.req.question)
                 if "'" not in t and t not in _TIP_NOISE and t not in stop]
        suggestions = [
            messages.text("tip_kbs", lang),
            messages.text("tip_terms", lang, terms=", ".join(terms[:4])) if terms else messages.text("tip_rephrase", lang),
            messages.text("tip_upload", lang),
        ]
        return Answer(
            # offline in a language the reader does not read, nothing was refused: the passages
            # are what it can offer, and the first line says so
            question=turn.req.question, abstained=True, reason=reason,
            text=messages.text("language" if decision.decided_by == LANGUAGE else "abstain", lang),
            suggestions=suggestions,
            retrieval_score=round(ctx.best, 4), evidence_score=round(ctx.reading.best if ctx.reading else 0.0, 4),
            mode=self.mode, models=turn.models, timings_ms={**turn.timings, "total": _ms(turn.t0)},
            standalone_question=turn.standalone, below_threshold=ctx.below_threshold,
            closest=closest_passages(ctx.sources, ctx.reading, self.settings.closest_passages,
                                     turn.standalone, lang, self.store.idf),
            decided_by=decision.decided_by, policy=ctx.policy.name if ctx.policy else "",
            signals={**_signal_record(sig or self._signals(ctx)), **({"detail": decision.detail} if decision.detail else {})},
            language=lang,
        )

    def _history(self, req: AnswerRequest) -> list:
        """Recent turns for the prompt, newest kept, within `llm_history_tokens`. Old answers'
        [n] markers are dropped: they point at sources this prompt does not hold."""
        msgs = [HumanMessage(text) if role == "user" else AIMessage(_MARKER.sub("", text))
                for role, text in req.history if text]
        if not msgs or self.settings.llm_history_tokens <= 0:
            return []
        return trim_messages(msgs, max_tokens=self.settings.llm_history_tokens, strategy="last",
                             token_counter=lambda ms: sum(count_tokens(str(m.content)) + 4 for m in ms),
                             start_on="human", include_system=False)

    def _prompt_value(self, turn: Turn, sources: list[ScoredChunk], task: str | None = None,
                      reminder: str | None = None) -> dict:
        user = user_message(turn.standalone, sources, turn.language, reminder)
        return {"system": system_prompt(turn.req.kbs), "history": self._history(turn.req),
                "user": f"{user}\n\n{task}" if task else user}

    def _llm_judge(self, turn: Turn, claims: list[Claim], sources: list[ScoredChunk], config):
        """The LLM re-judges claims the offline verifier did not find supported."""
        for c in claims:
            if c.label == "supported" or not self._llm_ok(turn):
                continue
            cited = [sources[n - 1].chunk.text for n in c.cited if 1 <= n <= len(sources)] or [s.chunk.text for s in sources[:3]]
            prompt = VERIFY_PROMPT.format(claim=neutralise(c.text), sources="\n\n".join(neutralise(t) for t in cited))
            try:
                verdict = self.llm.invoke(prompt, config).strip().upper()
            except Exception as exc:  # noqa: BLE001
                turn = self._failed(turn, exc)
                break
            for label, score in (("UNSUPPORTED", 0.1), ("PARTIAL", 0.5), ("SUPPORTED", 0.9)):
                if verdict.startswith(label):
                    c.label, c.score = label.lower(), score
                    break
        return claims, grounding_score(claims), turn

    def _paraphrases(self, question: str, config) -> list[str]:
        prompt = "Write two alternative phrasings of this search question, one per line, no numbering:\n" + question
        lines = self.fast.invoke(prompt, config).splitlines()
        return [ln.strip(" -•\t") for ln in lines if len(ln.strip()) > 3][:2]


# Words a question is made of but a rephrasing tip should not suggest changing ("try other
# words for doesn't, think, equals" was seen): contractions go too.
_TIP_NOISE = set("""think thinks know mean means meant equal equals equivalent work works use used using get gets make
makes want need needs way ways happen happens possible thing things something anything really actually also just
like called call say says said seem seems show shows find tell explain describe example kind sort type
anyone someone everyone anybody somebody everybody nobody people person""".split())


RIVAL_SEARCH = 5  # passages looked up by the lead sentence's words, for another version of it
_MARKERS = re.compile(r"\s*" + MARKER.pattern, MARKER.flags)  # every marker the citation resolver reads


def _rrf_merge(lists: list[list[ScoredChunk]], k: int) -> list[ScoredChunk]:
    """Reciprocal rank fusion of the rankings of several phrasings of one question."""
    by_id: dict[str, ScoredChunk] = {}
    score: dict[str, float] = {}
    for lst in lists:
        for rank, r in enumerate(lst, 1):
            cid = r.chunk.chunk_id
            by_id.setdefault(cid, r)
            score[cid] = score.get(cid, 0.0) + 1.0 / (RRF_K + rank)
    return [by_id[cid] for cid, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def _fix_citations(draft: str, claims: list[Claim]) -> tuple[str, set[str]]:
    """Citations placed by the checker, not the model (small models forget markers, and
    often cite [1] whatever the fact's passage):
    - a sentence left uncited gets the passage the verifier found supporting it best;
    - a sentence whose cited passages do not support it, while another passage does, cites
      that passage instead.
    Their labels are then judged against the new passage like any citation; an unsupported
    sentence stays as it is (uncited, or with the model's citation, shown as unsupported).
    Returns the draft and the sentences (marker-free text) whose citation the checker placed."""
    new = {c.text: c.best_source for c in claims if not c.cited and c.best_source and c.label != "unsupported"}
    new.update({c.text: c.supported_by for c in claims if c.cited and c.supported_by})
    if not new:
        return draft, set()
    out, fixed = [], set()
    for sent in answer_sentences(draft):
        text = plain(sent)
        if text in new:
            end = text[-1] if text[-1:] in (".", "!", "?") else ""
            sent = f"{text[:-1] if end else text} [{new[text]}]{end}"
            fixed.add(text)
        out.append(sent.strip())
    return " ".join(out), fixed


COMPARE_PASSAGES = 3  # passages of each document a comparison reads on its topic
_TAGS = re.compile(r"</?\s*(retrieved_context|source|notes|system|instructions?)\b[^>]*>", re.I)


def _resolved(draft: str, sources: list[ScoredChunk], snippets, claims: list[Claim]):
    """The draft's citations resolved to the sources, and each claim's markers renumbered to
    match (a claim whose markers pointed at no passage cites nothing)."""
    res = resolve(draft, sources, snippets)
    for c in claims:
        c.cited = [res.mapping[n] for n in c.cited if n in res.mapping]
        c.best_source = res.mapping.get(c.best_source) if c.best_source else None
        if not c.cited:
            c.cited_by = None
    return res


def _renumber(text: str, n: int, offset: int) -> str:
    """A part's notes with its markers [1..n] as the whole document's [offset+1..]; a marker
    outside the part is dropped (it points at nothing the part showed)."""
    def sub(m):
        k = int(m.group(1))
        return f"[{k + offset}]" if 1 <= k <= n else ""
    return re.sub(r"\[(\d{1,3})\]", sub, text)


def _item_heading(text: str) -> str:
    """A heading or file name as the start of an outline item: one line, no trailing colon."""
    return " ".join(text.split()).rstrip(":").strip() or "—"


LOOKUP_PASSAGES = 8  # passages a whole-document lookup shows
LOOKUP_PASSAGE_CHARS = 400  # characters shown of each


# The languages the reader model reads: it is MiniLM fine-tuned on English (rag_core/reader).
READER_LANGUAGES = frozenset({"en"})


def _reader_reads(ctx: Context) -> bool:
    """Whether the reader can judge this question over these passages: both in a language
    it reads (a chunk from before languages, "", is English). The best passage stands for
    the passages: it is the one an answer would come from."""
    if ctx.turn.language not in READER_LANGUAGES:
        return False
    return not ctx.sources or (ctx.sources[0].chunk.language or "en") in READER_LANGUAGES


def _lookup_text(s: ScoredChunk) -> str:
    return " ".join(s.chunk.text.split())[:LOOKUP_PASSAGE_CHARS]


def _lookup_complete(ctx: Context) -> bool:
    """Whether a lookup's answer shows the whole document: every passage (none cut by the
    context budget or the passage limit), each in full."""
    shown = ctx.sources[:LOOKUP_PASSAGES]
    return (len(shown) == len(ctx.sources) >= ctx.lookup_chunks
            and all(len(" ".join(s.chunk.text.split())) <= LOOKUP_PASSAGE_CHARS for s in shown))


def _keep_sentences(text: str, keep: set[str]) -> str:
    return " ".join(s.strip() for s in answer_sentences(text) if plain(s) in keep)


def _signal_record(sig: Signals) -> dict[str, Any]:
    """The signals an answer was decided on, as logged and returned (JSON-safe, rounded)."""
    out: dict[str, Any] = {"mode": sig.mode, "passages": sig.passages}
    if sig.evidence is not None:
        out["evidence"] = round(float(sig.evidence), 4)
    if sig.relevance is not None:
        out["relevance"] = sig.relevance
    if sig.declined is not None:
        out["declined"] = sig.declined
    if sig.labels:
        out["labels"] = list(sig.labels)
    if sig.answers is not None:
        out["answers"] = round(float(sig.answers), 4)
    return out
