"""The answer path: one LCEL chain of small named parts, used unchanged by the chat page, `ask`,
the API and the benchmarks.

    AnswerRequest ─condense─▶ Turn ─plan─▶ Turn ─retrieve─▶ Context ─gate─▶ Context
        ─respond─▶ tokens…, Draft ─verify─▶ Checked ─decide─▶ Decision ─record─▶ Answer

- **condense** (here): a follow-up becomes a standalone question (the model rewrites it;
  offline, condense.py replaces the pronoun with the earlier question's topic).
- **plan** (planner.py): the route — search, one document read whole, or a comparison.
- **retrieve** (retrieve.py): the `GroundworkRetriever` with the knowledge bases' settings
  and the caller's filters.
- **gate** (gate.py): the reader reads the passages; the policy says whether to go on.
- **respond**: one responder per route, each drafting and never deciding — search
  (respond_search.py), whole document (respond_document.py), comparison
  (respond_compare.py), lookup (respond_lookup.py). A responder streams its tokens and
  hands on a `Draft` saying who wrote it (the model, or the reader standing in and why).
- **verify** (check.py, corrective.py): citations placed, every sentence checked against
  its sources, corrective retrieval when confidence is low, the LLM judge, grounded-only.
- **decide** (policy.py): the only exit. Every answer and every abstention leaves through
  `AnswerPolicy`, which alone sets `decided_by`, `mode` and the reason.
- **record** (record.py): the `Answer`, or the abstention with the closest passages.

`respond` and `finish` (verify → decide → record) are generator steps, so tokens stream
through; callbacks see every named step ("condense", "plan", "retrieve", "gate", "respond",
"verify", "decide", "finish"). `chain.invoke(req)` returns the events summed into one whose
`.answer` is the final Answer; `chain.stream(req)` yields them one by one. A model failure at
any step is survived: the step falls back and the answer says so (`models["llm_error"]`, a
"notice" event while streaming).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any, Iterator

from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableConfig, RunnableGenerator, RunnableLambda
from langchain_core.runnables.config import merge_configs

from ..config import Settings
from ..embeddings import MINILM_ID, bundled_embedder
from ..grounding.verify import Verifier, answers_question
from ..models import Answer
from ..process import trim_heap
from ..reader import get_reader
from ..retrieval.query import detect_lookup
from ..retrieval.retriever import GroundworkRetriever
from ..retrieval.settings import merged_settings
from ..text import messages
from ..text.language import question_language
from ..text.latest import asks_for_latest
from . import record
from .check import Checker
from .condense import condense as condense_offline, depends_on_context
from .corrective import correct
from .extractive import ExtractiveAnswerer
from .gate import gate, signals
from .kit import Kit
from .moderation import Moderator
from .parts import merge as merge_parts, missing_part
from ..text.parts import split_question
from .planner import Planner, mentioned
from .policy import model_declined
from .prompts import CONDENSE_PROMPT
from .respond_compare import respond_compare
from .respond_document import respond_document
from .respond_lookup import lookup_complete, respond_lookup
from .respond_search import respond_search
from .retrieve import retrieve
from .stream_guard import STOP_SEQUENCES
from .steps import AnswerEvent, AnswerRequest, Checked, Context, Draft, Turn, ms, reader_reads, timed

__all__ = ["ABSTAIN_TEXT", "AnswerEngine", "AnswerEvent", "AnswerRequest"]

ABSTAIN_TEXT = messages.text("abstain")  # the English refusal; every language's is in text/messages.py
_MARKER = re.compile(r"\s*(?<!\[)\[\d{1,3}\](?!\])")


class AnswerEngine:
    def __init__(self, retrieval, embedder, store, settings: Settings, chat=None, callbacks: list | None = None,
                 locate_page=None, fast_chat=None, cache=None):
        # locate_page(kb_id, doc_id, first, last, text) -> the page of first..last holding
        # `text` (the Workspace reads the stored PDF): a passage crossing a page break is cited
        # at the page its cited sentences are on, not the page it starts on.
        self.settings = settings
        self.chat = chat
        idf = getattr(store, "idf", None)
        self.reader = get_reader(settings.reader_threads)
        # the selection's cosine feature comes from the model it was fitted with (embeddings.bundled_embedder)
        selection = embedder if getattr(embedder, "model_id", "") == MINILM_ID else bundled_embedder(settings)
        self.extractive = ExtractiveAnswerer(reader=self.reader, idf=idf, embed=selection.embed_array)
        # The managed llama.cpp server is told to stop at the prompt's own tags; an endpoint is not
        # (OpenAI's reasoning models refuse a `stop` parameter): the stream guard cuts there anyway.
        if chat is not None and settings.llm_gguf:
            chat = chat.bind(stop=STOP_SEQUENCES)
        llm = (chat | StrOutputParser()) if chat is not None else None
        # the small steps (condense, plan, relevance check, rewrites) go to the fast model
        fast = (fast_chat | StrOutputParser()).with_config(run_name="fast_model") if fast_chat is not None else llm
        self.kit = Kit(settings=settings, store=store, retrieval=retrieval, retriever=GroundworkRetriever(pipeline=retrieval),
                       embedder=embedder, reader=self.reader, extractive=self.extractive,
                       verifier=Verifier(reader=self.reader, idf=idf, embed=selection.embed_array), llm=llm, fast=fast,
                       chat=chat,
                       locate_page=locate_page)
        self.planner = Planner(llm=fast if settings.planner_asks_model else None)
        self.moderator = Moderator(settings, fast)
        self.cache = cache  # answer_cache.AnswerCache, or None
        self.verify = RunnableLambda(self._verify_step, name="verify")
        self.checker = Checker(self.kit, self.verify)
        self.decide = RunnableLambda(lambda args: args[0].decide(args[1]), name="decide")
        self.pipeline = (
            RunnableLambda(self._condense, name="condense")
            | RunnableLambda(self._plan, name="plan")
            | RunnableLambda(lambda turn, config: retrieve(self.kit, turn, config), name="retrieve")
            | RunnableLambda(lambda ctx, config: gate(self.kit, ctx, config), name="gate")
            | RunnableGenerator(self._respond, name="respond")
            | RunnableGenerator(self._finish, name="finish")
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
    def _serve(self, inputs: Iterator[AnswerRequest], config: RunnableConfig) -> Iterator[AnswerEvent]:
        """The answer cache in front of the pipeline (answer_cache.py): a hit is the stored answer,
        marked cached with the time it was first computed; a miss runs the pipeline and stores
        its answer (not one composed offline because the model failed: that one is not what
        the settings ask for)."""
        req = _last(inputs)
        use_cache = self.cache is not None and req.cache_key is not None
        if use_cache:
            t = time.perf_counter()
            hit = self.cache.get(req.cache_key)
            if hit is not None:
                first = hit.timings_ms.get("total")
                hit.question = req.question
                hit.timings_ms = {"cache": ms(t), "total": ms(t), **({"first_total": first} if first else {})}
                hit.usage = {}  # served without a model call
                if not hit.abstained:
                    yield AnswerEvent("token", hit.text)
                yield AnswerEvent("answer", answer=hit)
                return
        final = None
        usage = UsageMetadataCallbackHandler()  # tokens per model, for the answer's metadata
        run = merge_configs(config, {"callbacks": [usage]})
        language = question_language(req.question, req.filters.languages[0] if req.filters.languages else "en")
        parts = (split_question(req.question, language) if self.settings.multi_part and req.route in (None, "search")
                 else [req.question])
        events = self._parts(req, parts, language, run) if len(parts) > 1 else self.pipeline.stream(req, run)
        for ev in events:
            if ev.kind == "answer":
                final = ev.answer
                final.usage = {m: dict(u) for m, u in usage.usage_metadata.items()}
            yield ev
        if use_cache and final is not None and not {"llm_error", "llm_cut"} & set(final.models):
            self.cache.put(req.cache_key, final)
        # An answer allocates and frees tens of MB in small pieces (token lists, model
        # activations, candidate texts) that glibc keeps resident: in the hour-long API soak
        # the server's heap grew ~50 MB per 5 minutes with a corpus of constant size, and one
        # malloc_trim gave back 320 MB of it. At most once per 30 s (process.trim_heap).
        trim_heap()

    def _parts(self, req: AnswerRequest, parts: list[str], language: str, config) -> Iterator[AnswerEvent]:
        """A question of several parts (text/parts.py): the answer path once per part, its
        tokens streamed in order, a withheld part named; then the joined answer (parts.py). A
        later part is read as a follow-up of the one before ("How tall is the tower; when was it
        built?": "it" is the tower)."""
        t = time.perf_counter()
        answers = []
        for i, part in enumerate(parts):
            history = list(req.history) + ([("user", parts[i - 1]), ("assistant", "")] if i else [])
            if i:
                yield AnswerEvent("token", "\n\n")
            got = None
            for ev in self.pipeline.stream(replace(req, question=part, history=history, cache_key=None), config):
                if ev.kind == "answer":
                    got = ev.answer
                else:
                    yield ev
            if got.abstained:
                yield AnswerEvent("token", missing_part(part, language))
            answers.append(got)
        yield AnswerEvent("answer", answer=merge_parts(req.question, parts, answers, language, ms(t)))

    def _models(self) -> dict[str, str]:
        m = {"embedding": getattr(self.kit.embedder, "model_id", "?"), "reader": f"reader-int8@{self.reader.sha256[:12]}"}
        if self.chat is not None:
            m["llm"] = self.settings.llm_label
            m["llm_fast"] = self.settings.llm_fast_label
        return m

    def _condense(self, req: AnswerRequest, config: RunnableConfig) -> Turn:
        t = time.perf_counter()
        settings = merged_settings(req.kbs)
        if req.options.top_k:
            settings = replace(settings, top_k=req.options.top_k)
        turn = Turn(req=req, standalone=req.question.strip(), settings=settings, t0=t, models=self._models())
        question = turn.standalone
        langs = req.filters.languages
        language = question_language(question, langs[0] if langs else "en")
        # A follow-up that names what it asks about ("When was the University of Chicago
        # founded?") needs no rewriting: the model's call (a whole prompt read on a CPU before
        # the answer's own) is skipped. The rule reads English pronouns only; in another
        # language the model is asked as before.
        stands_alone = language == "en" and not depends_on_context(question)
        if any(role == "user" for role, _ in req.history) and not stands_alone:
            if self.kit.llm is not None and self.settings.llm_condense:
                history = "\n".join(f"{role}: {_MARKER.sub('', text)}" for role, text in req.history[-6:])
                try:
                    question = self.kit.fast.invoke(CONDENSE_PROMPT.format(history=history, question=question),
                                                    config).strip().splitlines()[0].strip() or question
                except Exception as exc:  # noqa: BLE001 - keep going offline
                    turn = self.kit.failed(turn, exc)
                    question = condense_offline(question, req.history)
            else:
                question = condense_offline(question, req.history)
        turn = replace(turn, standalone=question, language=language)
        return self._moderate(timed(self._recency(turn), condense=ms(t)), config)

    def _moderate(self, turn: Turn, config: RunnableConfig) -> Turn:
        """Moderation of the question as asked and as condensed (moderation.py): a refused one
        is neither planned nor searched; the policy's first rule withholds it."""
        level = self.moderator.level(turn.req.kbs)
        if level == "off":
            return turn
        t = time.perf_counter()
        verdict = self.moderator.check(turn.req.question, level, config=config)
        if not verdict.flagged and turn.standalone != turn.req.question.strip():
            verdict = self.moderator.check(turn.standalone, level, config=config)
        turn = replace(turn, moderation_level=level, moderation=verdict if verdict.flagged else None)
        if verdict.detail and not verdict.flagged:  # a judge that failed: the rules decided, and the answer says so
            turn = replace(turn, models={**turn.models, "moderation": verdict.detail})
        return timed(turn, moderation=ms(t))

    def _recency(self, turn: Turn) -> Turn:
        """A question asking for the latest switches recency on for itself, when its knowledge
        bases do not prefer newer documents already (text/latest.py)."""
        words = asks_for_latest(turn.standalone, turn.language)
        half_life = self.settings.latest_half_life_days
        if not words or half_life <= 0 or turn.settings.recency_half_life_days > 0:
            return turn
        return replace(turn, settings=replace(turn.settings, recency_half_life_days=half_life),
                       recency=f"the question asks for the latest (\"{words}\"): newer documents first, "
                               f"half-life {half_life:g} days")

    def _plan(self, turn: Turn, config: RunnableConfig) -> Turn:
        """The planner's route for the standalone question (planner.py), over the documents the
        caller may see in scope."""
        if turn.moderation is not None:
            return turn  # refused: nothing is planned
        t = time.perf_counter()
        req = turn.req
        cat = list(req.catalogue or [])
        lookup = detect_lookup(turn.standalone) if req.route in (None, "document") else None
        named = mentioned(lookup, cat) if lookup and cat else []
        route = self.planner.plan(turn.standalone, cat, override=req.route, lookup_doc=named[0] if named else None,
                                  config=config, use_model=self.kit.llm_ok(turn))
        return timed(replace(turn, route=route), plan=ms(t))

    def _respond(self, inputs: Iterator[Context], config: RunnableConfig) -> Iterator[AnswerEvent]:
        """The route's responder (a generator of events that returns its Draft), then the Draft."""
        ctx = _last(inputs)
        route = ctx.turn.route
        if ctx.abstain:  # the gate withheld it: nothing is written
            draft = Draft(ctx, "", ctx.sources, ctx.decision.mode, gated=True)
        elif route.kind == "compare":
            draft = yield from respond_compare(self.kit, ctx, config)
        elif route.kind == "document" and route.intent != "show":
            draft = yield from respond_document(self.kit, ctx, config)
        elif ctx.lookup_source:
            draft = yield from respond_lookup(ctx)
        else:
            draft = yield from respond_search(self.kit, ctx, config)
        yield AnswerEvent("draft", draft=draft)

    def _finish(self, events: Iterator[AnswerEvent], config: RunnableConfig) -> Iterator[AnswerEvent]:
        """verify → decide → record, for every route. A refusal or an empty draft is not
        verified: there is nothing to check."""
        for ev in events:
            if ev.kind != "draft":
                yield ev
                continue
            answer = yield from self._settle(ev.draft, config)
            route = ev.draft.turn.route
            answer.route, answer.plan = route.kind, route.record()
            yield AnswerEvent("answer", answer=answer)

    def _settle(self, draft: Draft, config) -> Iterator[AnswerEvent]:
        ctx, policy = draft.ctx, draft.ctx.policy
        if getattr(draft.text, "cut", ""):  # the stream guard stopped the model: the answer says so
            ctx = replace(ctx, turn=replace(ctx.turn, models={**ctx.turn.models, "llm_cut": draft.text.cut}))
            draft = replace(draft, ctx=ctx)
        if getattr(draft.text, "removed", 0):  # instructions in the sources the model never read
            n = draft.text.removed
            note = (f"{n} sentence{'s' if n != 1 else ''} of the sources addressed the assistant with an instruction "
                    f"and {'were' if n != 1 else 'was'} left out of what the model read (documents are data).")
            ctx = replace(ctx, turn=replace(ctx.turn, models={**ctx.turn.models, "instructions_removed": note}))
            draft = replace(draft, ctx=ctx)
        if draft.gated:
            return record.abstention(self.kit, ctx, ctx.decision, signals(ctx, draft.mode))
        base = dict(fallback=draft.fallback)
        if not draft.text.strip() or (draft.mode == "llm" and model_declined(draft.text)):
            sig = signals(ctx, draft.mode, drafted=bool(draft.text.strip()),
                          declined=(draft.mode == "llm" and model_declined(draft.text)) or None, **base)
            decision = self.decide.invoke((policy, sig), config)
            return record.abstention(self.kit, ctx, decision, sig, draft.offer)
        yield AnswerEvent("status", messages.text("checking", ctx.turn.language))
        t = time.perf_counter()
        question = draft.turn.standalone
        checked = self.checker.check(draft.text, draft.sources, question, config, draft.leads)
        checked, turn = yield from correct(self.kit, self.checker, draft, checked, config)
        if draft.mode == "llm" and self.kit.llm_ok(turn) and self.settings.llm_verify:
            checked, turn = self.checker.judge(turn, checked, config, question_language(question, turn.language))
        checked = self.checker.grounded_only(turn, checked, question, config)
        draft = replace(draft, ctx=replace(ctx, turn=timed(turn, verify=ms(t))), sources=checked.sources)
        aq = self._answers(draft, checked)
        sig = signals(draft.ctx, draft.mode, labels=tuple(c.label for c in checked.claims), answers=aq,
                      kept=checked.kept, verified_by=checked.verified_by, **base)
        decision = self.decide.invoke((policy, sig), config)
        if not decision.abstain and turn.moderation_level != "off":
            verdict = self.moderator.check(checked.text, turn.moderation_level, answer=True, config=config)
            if verdict.flagged:  # what it would show is refused: the policy withholds it
                sig = replace(sig, refused=verdict.category, refused_answer=True)
                decision = self.decide.invoke((policy, sig), config)
        if decision.abstain:
            return record.abstention(self.kit, draft.ctx, decision, sig)
        return record.answer(self.kit, draft, checked, decision, sig, aq)

    @staticmethod
    def _answers(draft: Draft, checked: Checked) -> float | None:
        """P(answers) of what is shown. A lookup that shows all of its document answers it; an
        excerpt is scored like any answer. Whole-document and comparison answers are not judged:
        the reader scores whether a sentence answers a question, not whether an outline or a
        comparison covers documents. Nor is anything the reader cannot read."""
        ctx = draft.ctx
        if ctx.turn.route.kind in ("document", "compare") and ctx.turn.route.intent != "show":
            return None
        if ctx.lookup_source:
            return 1.0 if lookup_complete(ctx) else answers_question(checked.claims)
        return answers_question(checked.claims) if reader_reads(ctx) else None

    def _verify_step(self, args):
        text, sources, question, *rest = args
        leads = rest[0] if rest else {}
        quoted = rest[1] if len(rest) > 1 else {}
        language = question_language(question, (sources[0].chunk.language or "en") if sources else "en")
        return self.kit.verifier.verify(text, [s.chunk.text for s in sources], question=question,
                                        titles=[s.chunk.heading for s in sources],
                                        leads=[leads.get(i, []) for i in range(1, len(sources) + 1)], language=language,
                                        evidence=[quoted.get(i, []) for i in range(1, len(sources) + 1)] if quoted else None)


def _last(inputs):
    """A generator step receives its one input as a stream."""
    item = None
    for item in inputs:
        pass
    assert item is not None
    return item
