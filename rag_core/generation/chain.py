"""The answer chain (LCEL): condense → retrieve → sufficiency → generate → verify →
(corrective retrieval) → Answer.

Each step is a plain function over a state dict, composed with LangChain runnables, so the
chain invokes, batches and traces like any LCEL chain; `stream()` runs the same steps and
yields the answer text as it is produced, then the verified Answer (citations, scores).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableLambda

from ..config import Settings
from ..grounding.citations import attach_markers, resolve
from ..grounding.verify import Verifier, answer_sentences, answers_question, confidence, grounding_score, plain
from ..models import Answer, KnowledgeBase, ScoredChunk, SearchFilters
from ..reader import get_reader
from ..retrieval.fusion import RRF_K
from ..retrieval.query import key_terms
from .extractive import ExtractiveAnswerer
from .prompts import CONDENSE_PROMPT, HYDE_PROMPT, RELEVANCE_TASK, VERIFY_PROMPT, neutralise, system_prompt, user_message

ABSTAIN_TEXT = "I don't have information about that in the selected knowledge bases."
_DEPENDENT = re.compile(r"\b(it|its|they|them|their|this|that|these|those|he|she|him|her|his|hers|there)\b", re.I)
MAX_CRAG_ROUNDS = 2


@dataclass
class AnswerRequest:
    question: str
    kbs: list[KnowledgeBase]
    filters: SearchFilters
    history: list[tuple[str, str]] = field(default_factory=list)  # (role "user"/"assistant", text)


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 2)


class AnswerEngine:
    def __init__(self, retrieval, embedder, store, settings: Settings, chat=None):
        self.retrieval = retrieval
        self.embedder = embedder
        self.settings = settings
        self.chat = chat
        idf = getattr(store, "idf", None)
        self.reader = get_reader(settings.reader_threads)
        self.verifier = Verifier(reader=self.reader, idf=idf)
        self.extractive = ExtractiveAnswerer(reader=self.reader, idf=idf, embed=embedder.embed_array)
        self.chain = (
            RunnableLambda(self._condense, name="condense")
            | RunnableLambda(self._retrieve, name="retrieve")
            | RunnableLambda(self._sufficiency, name="sufficiency")
            | RunnableLambda(self._generate, name="generate")
            | RunnableLambda(self._finish, name="verify")
        )

    @property
    def mode(self) -> str:
        return "llm" if self.chat is not None else "extractive"

    # ---- public ----------------------------------------------------------------------
    def answer(self, req: AnswerRequest) -> Answer:
        return self.chain.invoke(self._start(req))

    def stream(self, req: AnswerRequest) -> Iterator[dict[str, Any]]:
        """Events: {"type": "token", "text"} while the answer is written, then
        {"type": "answer", "answer": Answer} with citations, claims and scores."""
        state = self._sufficiency(self._retrieve(self._condense(self._start(req))))
        if state.get("abstain"):
            ans = self._finish(state)
            yield {"type": "token", "text": ans.text}
            yield {"type": "answer", "answer": ans}
            return
        t = time.perf_counter()
        streamed = False
        if self.chat is not None:
            parts = []
            try:
                for piece in (self._llm_runnable()).stream(self._messages(state)):
                    if piece:
                        parts.append(piece)
                        yield {"type": "token", "text": piece}
                state["draft"] = "".join(parts)
                state["snippets"] = {}
                streamed = True
            except Exception as exc:  # noqa: BLE001 - any client/server failure: answer offline instead
                self._llm_failed(state, exc)
                yield {"type": "notice", "text": state["models"]["llm_error"]}
        if not streamed:
            state = self._generate(state, use_llm=False)
            for sentence in answer_sentences(state.get("draft", "")):
                yield {"type": "token", "text": sentence.strip() + " "}
        state["timings"]["generate"] = _ms(t)
        yield {"type": "answer", "answer": self._finish(state)}

    # ---- steps -----------------------------------------------------------------------
    def _start(self, req: AnswerRequest) -> dict:
        return {"req": req, "t0": time.perf_counter(), "timings": {}, "models": self._models()}

    def _models(self) -> dict[str, str]:
        m = {"embedding": getattr(self.embedder, "model_id", "?"), "reader": f"reader-int8@{self.reader.sha256[:12]}"}
        if self.chat is not None:
            m["llm"] = self.settings.llm_model
        return m

    def _condense(self, state: dict) -> dict:
        req: AnswerRequest = state["req"]
        t = time.perf_counter()
        question = req.question.strip()
        last_user = next((text for role, text in reversed(req.history) if role == "user"), None)
        if last_user:
            if self.chat is not None and self.settings.llm_condense:
                history = "\n".join(f"{role}: {text}" for role, text in req.history[-6:])
                try:
                    question = str(
                        (self._llm_runnable()).invoke(CONDENSE_PROMPT.format(history=history, question=question))
                    ).strip() or question
                except Exception as exc:  # noqa: BLE001 - keep the user's own words
                    self._llm_failed(state, exc)
            elif _DEPENDENT.search(question) or len(question.split()) < 5:
                # Offline: carry the previous question's key terms into a dependent follow-up.
                extra = [t for t in key_terms(last_user) if t.lower() not in question.lower()]
                if extra:
                    question = f"{question} ({' '.join(extra[:8])})"
        state["standalone"] = question
        state["timings"]["condense"] = _ms(t)
        return state

    def _retrieve(self, state: dict) -> dict:
        req: AnswerRequest = state["req"]
        t = time.perf_counter()
        settings = req.kbs[0].retrieval
        queries = [state["standalone"]]
        llm_ok = self.chat is not None and "llm_error" not in state["models"]
        if llm_ok and self.settings.llm_multi_query:
            queries += self._guard(state, lambda: self._paraphrases(state["standalone"]), [])
        qvec = None
        if llm_ok and self.settings.llm_hyde:
            # HyDE: a hypothetical answer is closer in embedding space to real answers than
            # the question is; keywords still come from the question itself.
            hypo = self._guard(state, lambda: str(self._llm_runnable().invoke(HYDE_PROMPT.format(question=queries[0]))), "")
            if hypo.strip():
                qvec = self.embedder.embed_array([hypo])[0]
        runs = [self.retrieval.run(q, req.filters, settings, query_vector=qvec if i == 0 else None)
                for i, q in enumerate(queries)]
        retrieved = runs[0]
        if len(runs) > 1:
            retrieved.results = _rrf_merge([r.results for r in runs], settings.top_k)
        state["retrieved"] = retrieved
        state["sources"] = list(retrieved.results)
        state["timings"].update({f"retrieve_{k}": v for k, v in retrieved.timings_ms.items()})
        state["timings"]["retrieve"] = _ms(t)
        return state

    def _sufficiency(self, state: dict) -> dict:
        """Abstain unless some retrieved sentence answers the question: the reader's best
        P(answers) over the passages' sentences against one threshold (chosen on the SQuAD
        train split; the same for every corpus — no BM25 or reranker scale involved)."""
        sources: list[ScoredChunk] = state["sources"]
        r = state["retrieved"]
        state["best"] = max((s.scores.get("rerank", s.score) for s in sources), default=0.0)
        if r.lookup_source:
            return state
        t = time.perf_counter()
        if not sources:
            state["abstain"] = "no passage in the selected knowledge bases matched the question"
        else:
            # LLM mode answers from every retrieved passage, so every one is read for the gate.
            ev = self.extractive.read(state["standalone"], sources,
                                      max_passages=len(sources) if self.chat is not None else None)
            state["reading"] = ev
            state["evidence"] = ev.best
            if ev.best < self.settings.answer_threshold:
                state["abstain"] = (
                    "the closest passages mention the topic but no sentence in them answers the question "
                    f"(best {ev.best:.2f}, below the {self.settings.answer_threshold:.2f} needed)"
                )
        state["timings"]["read"] = _ms(t)
        if (not state.get("abstain") and self.chat is not None and self.settings.llm_relevance_check
                and "llm_error" not in state["models"]):
            verdict = self._guard(state, lambda: str(self._llm_runnable().invoke(self._messages(state, RELEVANCE_TASK))), "yes")
            if verdict.strip().lower().startswith("no"):
                state["abstain"] = "the language model found no answer to the question in the retrieved passages"
        return state

    def _generate(self, state: dict, use_llm: bool = True) -> dict:
        if state.get("abstain"):
            return state
        t = time.perf_counter()
        if self.chat is not None and use_llm and "llm_error" not in state["models"]:
            try:
                state["draft"] = str(self._llm_runnable().invoke(self._messages(state)))
                state["snippets"] = {}
                state["timings"]["generate"] = _ms(t)
                return state
            except Exception as exc:  # noqa: BLE001
                self._llm_failed(state, exc)
        if state["retrieved"].lookup_source:
            srcs = state["sources"]
            state["draft"] = f"Here is {srcs[0].chunk.source}, passage by passage: " + " ".join(
                f"{' '.join(s.chunk.text.split())[:400]} [{i}]" for i, s in enumerate(srcs[:8], 1)
            )
            state["snippets"] = {}
        else:
            ev = state.get("reading") or self.extractive.read(state["standalone"], state["sources"])
            ex = self.extractive.compose(ev)
            state["draft"], state["snippets"] = ex.text, ex.snippets
            if not ex.text:
                state["abstain"] = "the matching passages contain no sentence that answers the question"
        state["timings"]["generate"] = _ms(t)
        return state

    def _finish(self, state: dict) -> Answer:
        req: AnswerRequest = state["req"]
        t = time.perf_counter()
        if state.get("abstain"):
            return self._abstain(state, state["abstain"])
        sources: list[ScoredChunk] = state["sources"]
        draft: str = attach_markers(state["draft"])
        grounded = any(kb.grounded_only for kb in req.kbs)
        question = state["standalone"]
        claims, grounding = self._verify(draft, sources, question)
        rounds = 0
        lookup = bool(state["retrieved"].lookup_source)
        while (
            self.chat is not None
            and not lookup
            and not state.get("llm_failed")
            and self.settings.llm_crag
            and rounds < MAX_CRAG_ROUNDS
            and confidence(grounding, answers_question(claims)) < self.settings.confidence_threshold
        ):
            # Corrective retrieval: look for evidence of the unsupported claims, regenerate.
            # (An answer that is supported but does not answer has no weak claim to search
            # for: it stays, shown with its low "answers the question" score.)
            rounds += 1
            weak = [c.text for c in claims if c.label != "supported"][:3]
            extra = [r for q in weak for r in self.retrieval.run(q, req.filters, req.kbs[0].retrieval).results]
            seen = {s.chunk.chunk_id for s in sources}
            new = [r for r in extra if r.chunk.chunk_id not in seen and not seen.add(r.chunk.chunk_id)]
            if not new:
                break
            redo = self._guard(state, lambda: str(self._llm_runnable().invoke(self._messages(state, sources=sources + new[:4]))), None)
            if redo is None:  # the endpoint failed mid-correction: keep the answer we have
                break
            sources = state["sources"] = sources + new[:4]
            draft = redo
            claims, grounding = self._verify(draft, sources, question)
        state["timings"]["crag_rounds"] = rounds
        if self.chat is not None and self.settings.llm_verify and "llm_error" not in state["models"]:
            claims, grounding = self._llm_judge(state, claims, sources)
        if grounded:
            kept = [c for c in claims if c.label != "unsupported"]
            if not kept:
                return self._abstain(state, "grounded-only: no sentence of the draft answer is supported by the sources")
            if len(kept) < len(claims):
                draft = _keep_sentences(draft, {c.text for c in kept})
                claims, grounding = self._verify(draft, sources, question)
        res = resolve(draft, sources, state.get("snippets"))
        for c in claims:
            c.cited = [res.mapping[n] for n in c.cited if n in res.mapping]
            c.best_source = res.mapping.get(c.best_source) if c.best_source else None
        # A document lookup ("show me the biography file") is answered by showing that document.
        aq = 1.0 if lookup else answers_question(claims)
        state["timings"]["verify"] = _ms(t)
        state["timings"]["total"] = _ms(state["t0"])
        return Answer(
            question=req.question, text=res.text, citations=res.citations, claims=claims, grounding_score=grounding,
            answers_question=aq, confidence=confidence(grounding, aq), abstained=False, invalid_citations=res.invalid, retrieval_score=round(state["best"], 4),
            evidence_score=round(state.get("evidence", 0.0), 4),
            mode="extractive" if state.get("llm_failed") else self.mode, models=state["models"],
            timings_ms=state["timings"], standalone_question=state["standalone"],
        )

    # ---- helpers ---------------------------------------------------------------------
    def _llm_failed(self, state: dict, exc: Exception) -> None:
        """The LLM endpoint failed (timeout, connection, HTTP error): say so, answer offline."""
        where = self.settings.openai_base_url or "the OpenAI API"
        state["models"]["llm_error"] = (
            f"The language model at {where} did not answer ({type(exc).__name__}); "
            "this answer was composed offline from the sources instead."
        )
        state["llm_failed"] = True
    def _abstain(self, state: dict, reason: str) -> Answer:
        req: AnswerRequest = state["req"]
        terms = key_terms(state.get("standalone") or req.question)
        suggestions = [
            "Check that the right knowledge bases are selected.",
            f"Try other words for the key terms ({', '.join(terms[:4])})." if terms else "Try rephrasing the question.",
            "Upload a document that covers this topic.",
        ]
        state["timings"]["total"] = _ms(state["t0"])
        return Answer(
            question=req.question, text=ABSTAIN_TEXT, abstained=True, reason=reason, suggestions=suggestions,
            retrieval_score=round(state.get("best", 0.0), 4), evidence_score=round(state.get("evidence", 0.0), 4),
            mode=self.mode, models=state["models"], timings_ms=state["timings"],
            standalone_question=state.get("standalone", req.question),
        )

    def _verify(self, draft: str, sources: list[ScoredChunk], question: str):
        return self.verifier.verify(draft, [s.chunk.text for s in sources], question=question,
                                    titles=[s.chunk.heading for s in sources])

    def _llm_runnable(self):
        return self.chat | StrOutputParser()

    def _guard(self, state: dict, call, fallback):
        """An optional LLM step that fails is skipped, with the failure noted on the answer."""
        try:
            return call()
        except Exception as exc:  # noqa: BLE001
            self._llm_failed(state, exc)
            return fallback

    def _messages(self, state: dict, task: str | None = None, sources: list[ScoredChunk] | None = None) -> list:
        req: AnswerRequest = state["req"]
        user = user_message(state["standalone"], state["sources"] if sources is None else sources)
        return [SystemMessage(system_prompt(req.kbs)), HumanMessage(f"{user}\n\n{task}" if task else user)]

    def _llm_judge(self, state: dict, claims, sources: list[ScoredChunk]):
        """The LLM re-judges claims the offline verifier did not find supported."""
        for c in claims:
            if c.label == "supported":
                continue
            cited = [sources[n - 1].chunk.text for n in c.cited if 1 <= n <= len(sources)] or [s.chunk.text for s in sources[:3]]
            prompt = VERIFY_PROMPT.format(claim=neutralise(c.text), sources="\n\n".join(neutralise(t) for t in cited))
            verdict = self._guard(state, lambda: str(self._llm_runnable().invoke(prompt)), "").strip().upper()
            for label, score in (("UNSUPPORTED", 0.1), ("PARTIAL", 0.5), ("SUPPORTED", 0.9)):
                if verdict.startswith(label):
                    c.label, c.score = label.lower(), score
                    break
        return claims, grounding_score(claims)

    def _paraphrases(self, question: str) -> list[str]:
        prompt = (
            "Write two alternative phrasings of this search question, one per line, no numbering:\n" + question
        )
        lines = str(self._llm_runnable().invoke(prompt)).splitlines()
        return [ln.strip(" -•\t") for ln in lines if len(ln.strip()) > 3][:2]


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


def _keep_sentences(text: str, keep: set[str]) -> str:
    return " ".join(s.strip() for s in answer_sentences(text) if plain(s) in keep)
