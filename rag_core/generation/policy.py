"""The answer policy: the one place that decides whether an answer is shown, shown with some
sentences flagged, or withheld (an abstention that lists the closest passages), and that
records which rule decided (`decided_by`), what answered (`mode`) and why (`reason`).

Every answer and every abstention leaves through this object, on every route (search,
whole document, comparison, lookup). The answer path asks it twice, because generating
costs time:

- `before_generation` (the gate): is there anything to answer from (retrieval), does the
  reader veto (its best sentence's evidence), did the model's relevance check say no;
- `decide` (after drafting and verifying): did nothing get written, did the model decline
  (`model_declined`: the one rule for it), does an offline answer reach the reader's line
  (also the reader's answer composed because the model failed), grounded-only, is any
  sentence supported by its sources (`no supported sentence`: one rule for every route),
  does the written answer answer the question (P(answers) of what the model wrote);

and once in between, `correct`: whether corrective retrieval should rewrite an answer.

**The best judge present decides.** Offline the reader is the only judge: its evidence
against `offline_min`. With a language model the reader's scores are signals (they choose
and order the passages the model reads, flag sentences, are shown and logged) and a veto only
where the policy in force says so:

- `conservative`: the reader vetoes before generation (`evidence_min` = `answer_threshold`)
  and after it (`written_min` = `llm_answer_threshold`, on the written answer).
- `model`: the model's own verdict decides (it declined; the relevance check said no); the
  reader only signals.
- `auto` (default): the policy calibrated for the model in use when a usable calibration is
  stored (policy_choice.py: made for these model files, prompts and settings, on at least
  MIN_CALIBRATION_QUESTIONS questions, and it met its target), else the uncalibrated default
  the realistic-model harness measured best — `model` for a model behind an endpoint,
  `conservative` for a local GGUF file — saying which and why.

Under every policy, whatever the route: an answer in which no sentence is supported by its
sources is never shown; a model's refusal is shown as a refusal; an answer the offline
reader composed is held to the reader's line (also when it stands in for a model that
failed), and records itself as the reader's (`mode` "extractive").
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

POLICIES = ("auto", "conservative", "model")
Action = Literal["proceed", "answer", "flag", "abstain"]

# decided_by: the rule that made the decision, as A.jsonl, the API, the query log and
# Analytics record it.
RETRIEVAL = "retrieval"  # nothing retrieved
READER = "reader"  # the reader's evidence: below its threshold (abstain) or, offline, the answer it chose
RELEVANCE = "model_relevance_check"  # the model's relevance check said no
DECLINED = "model_declined"  # the model wrote that the documents do not answer
MODEL = "model"  # the model's written answer, shown
WRITTEN = "written_answer_check"  # the reader's P(answers) of what the model wrote, below the policy's line
VERIFICATION = "verification"  # no sentence of the answer is supported by its sources
GROUNDED = "grounded_only"  # grounded-only: no supported sentence is left
LOOKUP = "lookup"  # a whole-document lookup: shown as the document
# The planner's whole-document and comparison routes (generation/planner.py): the answer reads
# whole documents, so no sentence score of the reader's can say it answers nothing; the
# reader's lines do not apply to them (verification and a model's refusal do).
DOCUMENT = "document"
COMPARE = "compare"
# Offline, in a language the reader does not read: it judged nothing, so nothing is shown as
# an answer; the closest passages are, with their best sentence marked (text/messages.py).
LANGUAGE = "reader_language"
# Moderation (generation/moderation.py) refused the question, or the answer it would have given.
MODERATION = "moderation"
DECIDED_BY = (MODERATION, RETRIEVAL, READER, RELEVANCE, DECLINED, MODEL, WRITTEN, VERIFICATION, GROUNDED, LOOKUP, LANGUAGE,
              DOCUMENT, COMPARE)

# What a person reads when the answer is withheld: what the system could not do, never a claim
# that the documents hold no answer. The numbers stay in `detail` (JSON, the details expander).
PLAIN = {
    RETRIEVAL: "No passage in the selected knowledge bases matched the question.",
    READER: "No sentence in the closest passages could be confirmed as an answer to the question.",
    RELEVANCE: "The language model found no answer to the question in the closest passages.",
    DECLINED: "The language model found no answer to the question in the closest passages.",
    WRITTEN: "The written answer could not be confirmed as an answer to the question.",
    VERIFICATION: "No sentence of the written answer could be confirmed in the sources.",
    GROUNDED: "Grounded-only is on, and no sentence of the answer could be confirmed in the sources.",
    LANGUAGE: "The offline reader reads English only: it judged no sentence of these passages.",
    DOCUMENT: "No sentence of the document could be read for this request.",
    MODERATION: "Moderation refused the request.",
    COMPARE: "None of the documents to compare held a passage on the question.",
}

# The model's own "not in the sources" (rule 4 of the prompt, and the usual paraphrases), in
# the languages the app speaks (the model answers in the question's).
_NO_ANSWER = re.compile(
    r"\b(i (do not|don't|cannot|can't) (have|find|see)|(is|are) not (mentioned|provided|stated|given|included|specified)"
    r"|(do|does) not (contain|mention|provide|state|say|specify)|no (information|mention)|not enough information"
    r"|cannot be (determined|answered|found))\b"
    r"|keine (informationen|angaben)|nicht (erwähnt|enthalten|angegeben)|je n'ai pas d'information|aucune information"
    r"|ne (mentionnent|contiennent|précisent) pas|no tengo información|no (mencionan|contienen|se menciona)"
    r"|情報(は|が)(ありません|見つかりません)|記載(は|が)(ありません|されていません)|没有(相关)?(信息|提及)|未(提及|提供)", re.I)
_CITED = re.compile(r"(?<!\[)\[\d{1,3}\](?!\])")


def model_declined(text: str) -> bool:
    """The one "model declined" rule: the model wrote that the sources do not answer, and cited
    nothing. (A refusal beside cited sentences is a partial answer: it is verified like any.)"""
    return bool(_NO_ANSWER.search(text or "")) and not _CITED.search(text or "")


@dataclass(frozen=True)
class Signals:
    """Everything the answer path knows when it asks. None = not measured (the step did not run)."""

    # Who answers: "llm" (the model writes) or "extractive" (the offline reader composes: no
    # model configured, or the model failed and the reader stands in; then `fallback` says why).
    mode: Literal["llm", "extractive"]
    passages: int = 0  # retrieved passages
    dropped: int = 0  # candidate passages the knowledge bases' minimum relevance dropped
    min_relevance: float = 0.0  # that minimum
    evidence: float | None = None  # the reader's best selection score over the retrieved sentences
    lookup: bool = False  # a whole-document lookup
    route: str = "search"  # the planner's route: "search", "document" or "compare"
    relevance: bool | None = None  # the model's relevance check: yes / no
    declined: bool | None = None  # model_declined() of what the model wrote
    drafted: bool = True  # something was written (offline: a sentence was found)
    labels: tuple[str, ...] = ()  # support label per sentence of the written answer
    answers: float | None = None  # calibrated P(answers) of the written answer (its best sentence)
    grounded_only: bool = False
    kept: int | None = None  # grounded-only: sentences left after the unsupported ones were dropped
    # The reader reads the question's and the passages' language (English): otherwise its
    # evidence and P(answers) were not measured and must not decide anything.
    reader_reads: bool = True
    fallback: str = ""  # why the reader answers although a model is configured ("" = it does not)
    verified_by: str = "reader"  # who labelled the sentences: "reader", or "model" (the LLM judge relabelled)
    # Moderation's category when it refused the question or the answer ("" = it did not)
    refused: str = ""
    refused_answer: bool = False  # it was the written answer that moderation refused

    def record(self) -> dict[str, Any]:
        """Every field, JSON-safe and rounded: an answer's `signals`, a calibration row's replay input."""
        out = asdict(self)
        out["labels"] = list(self.labels)
        for k in ("evidence", "answers"):
            if out[k] is not None:
                out[k] = round(float(out[k]), 4)
        return out

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> Signals:
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in rec.items() if k in known}
        d["labels"] = tuple(d.get("labels") or ())
        return cls(**d)


@dataclass(frozen=True)
class Decision:
    action: Action
    decided_by: str
    reason: str = ""  # plain words for a person (abstentions)
    detail: str = ""  # the figures behind it (JSON, logs, the details expander)
    mode: str = "extractive"  # what answered, or would have: "llm" or "extractive"

    @property
    def abstain(self) -> bool:
        return self.action == "abstain"

    def why(self) -> str:
        """The reason as stored on an Answer: the plain words, then the figures in brackets."""
        return f"{self.reason} ({self.detail})" if self.detail else self.reason


@dataclass(frozen=True)
class PolicyParams:
    """The numbers a policy applies. 0 switches a reader veto off. The gate reads evidence_min
    and offline_min, the decision written_min and offline_min (the calibration's replay relies
    on which line each step reads: calibrate.Replay)."""

    name: str  # "conservative", "model", "calibrated", or "strictest" (several knowledge bases)
    evidence_min: float  # LLM mode: the reader's evidence needed before the model is asked
    written_min: float  # LLM mode: P(answers) of the written answer needed to show it
    offline_min: float  # offline (and the reader's stand-in answer): the reader's evidence needed
    correct_below: float  # corrective retrieval when confidence is below this
    source: str = ""  # where the numbers come from, in words
    calibrated_at: str = ""  # ISO date of the calibration, when calibrated
    figures: dict = field(default_factory=dict)  # the calibration's figures at the chosen point
    mode: str = "llm"  # what answers: "llm" (a model) or "extractive" (the offline reader alone)


class AnswerPolicy:
    """Decides answer / flag / abstain from the signals; one instance per question."""

    def __init__(self, params: PolicyParams):
        self.params = params

    @property
    def name(self) -> str:
        return self.params.name

    def before_generation(self, s: Signals) -> Decision:
        if s.refused:
            return self._refused(s)
        if s.route in (DOCUMENT, COMPARE):
            return Decision("proceed", s.route, mode=s.mode)
        if s.lookup:
            return Decision("proceed", LOOKUP, mode=s.mode)
        if s.passages == 0 and s.dropped:
            return Decision("abstain", RETRIEVAL, "No passage reached the minimum relevance set on the knowledge base.",
                            f"the minimum relevance ({s.min_relevance:.2f}) dropped all {s.dropped} candidate passage(s)",
                            s.mode)
        if s.passages == 0:
            return Decision("abstain", RETRIEVAL, PLAIN[RETRIEVAL], mode=s.mode)
        reader_line = self._reader_line(s)
        if reader_line is not None:
            return reader_line
        if s.relevance is False:
            return Decision("abstain", RELEVANCE, PLAIN[RELEVANCE], "relevance check: no", s.mode)
        return Decision("proceed", READER if s.mode == "extractive" else MODEL, mode=s.mode)

    def decide(self, s: Signals) -> Decision:
        """The decision on a draft: shown, shown with sentences flagged, or withheld."""
        if s.refused:
            return self._refused(s)
        if not s.drafted:
            rule = s.route if s.route in (DOCUMENT, COMPARE) else READER
            detail = "nothing could be read for the request" if rule != READER else \
                "no sentence of the matching passages was chosen"
            return Decision("abstain", rule, PLAIN[rule], detail, s.mode)
        if s.mode == "llm" and s.declined:
            return Decision("abstain", DECLINED, PLAIN[DECLINED], "the model declined", s.mode)
        reader_line = self._reader_line(s) if s.mode == "extractive" else None
        if reader_line is not None:  # an offline answer, also the reader's stand-in for a failed model
            return reader_line
        if s.grounded_only and not s.kept:
            return Decision("abstain", GROUNDED, PLAIN[GROUNDED], "grounded-only: no supported sentence", s.mode)
        if "supported" not in s.labels:
            return Decision("abstain", VERIFICATION, PLAIN[VERIFICATION],
                            f"0 of {len(s.labels)} sentences supported by their sources", s.mode)
        need = self.params.written_min
        if (s.mode == "llm" and s.route == "search" and not s.lookup and need > 0 and s.answers is not None
                and s.answers < need):
            return Decision("abstain", WRITTEN, PLAIN[WRITTEN],
                            f"P(answers) of the written answer {s.answers:.2f}, below the {need:.2f} the "
                            f"{self._judge(s)} needs", s.mode)
        who = (s.route if s.route in (DOCUMENT, COMPARE) else LOOKUP if s.lookup
               else MODEL if s.mode == "llm" else READER)
        flagged = any(x != "supported" for x in s.labels)
        return Decision("flag" if flagged else "answer", who, mode=s.mode)

    @staticmethod
    def _refused(s: Signals) -> Decision:
        what = "answer" if s.refused_answer else "question"
        return Decision("abstain", MODERATION, PLAIN[MODERATION], f"moderation refused the {what}: {s.refused}", s.mode)

    def _reader_line(self, s: Signals) -> Decision | None:
        """The reader's veto on a search answer: offline its own line (always), with a model the
        policy's evidence line (where it sets one)."""
        if s.route in (DOCUMENT, COMPARE) or s.lookup:
            return None
        if s.mode == "extractive" and not s.reader_reads:
            return Decision("abstain", LANGUAGE, PLAIN[LANGUAGE], "the offline reader reads English only", s.mode)
        need = self.params.offline_min if s.mode == "extractive" else self.params.evidence_min
        if s.evidence is not None and need > 0 and s.evidence < need:
            return Decision("abstain", READER, PLAIN[READER],
                            f"reader evidence {s.evidence:.2f}, below the {need:.2f} the {self._judge(s)} needs", s.mode)
        return None

    def correct(self, confidence: float) -> bool:
        """Corrective retrieval: rewrite an LLM answer whose confidence is below the line."""
        return confidence < self.params.correct_below

    def _judge(self, s: Signals) -> str:
        return "offline reader" if s.mode == "extractive" else f"{self.params.name} policy"

    def describe(self) -> dict:
        """The policy in force, for the Knowledge bases page and `GET /v1/answer-policy`."""
        out = asdict(self.params)
        out["summary"] = summary(self.params)
        return out


def strictest(policies: list[AnswerPolicy]) -> AnswerPolicy:
    """Several knowledge bases asked together: every line at the strictest any of them sets, so
    asking across them never loosens one's rule (each veto is `value < line`, so the highest
    line of each abstains whenever any of the policies would)."""
    if len(policies) == 1:
        return policies[0]
    ps = [p.params for p in policies]
    names = sorted({p.name for p in ps})
    if len(names) == 1 and len({(p.evidence_min, p.written_min, p.offline_min) for p in ps}) == 1:
        return policies[0]
    return AnswerPolicy(PolicyParams(
        "strictest", max(p.evidence_min for p in ps), max(p.written_min for p in ps), max(p.offline_min for p in ps),
        max(p.correct_below for p in ps), source="the strictest lines of the selected knowledge bases' policies ("
        + ", ".join(names) + ")", mode=ps[0].mode))


def summary(p: PolicyParams) -> str:
    """The policy in words a person understands."""
    f = p.figures or {}
    if p.mode == "extractive" and not f:
        return ("Offline, the reader decides: an answer is shown when a sentence of your documents answers the "
                f"question with enough evidence (at least {p.offline_min:.2f}, the shipped line), else the closest "
                "passages are listed. Run `python -m rag_core calibrate` to fit the line on the calibration set.")
    if "answerable_correct" in f and "unanswerable_abstained" in f:
        a = round(10 * f["answerable_correct"])
        d = round(10 * f["unanswerable_abstained"])
        return (f"With this model: answers about {a} of 10 answerable questions correctly, declines about {d} of 10 "
                f"that the documents do not answer (calibrated {p.calibrated_at} on {f.get('questions', '?')} questions).")
    if p.name == "model":
        why = ""
        if "not calibrated" in p.source or "ignored" in p.source:
            why = (p.source.split(":")[0] + ". ").capitalize() if "ignored" not in p.source else \
                p.source[: p.source.rfind(":")].capitalize() + ". "
        return (f"{why}The language model's own verdict decides whether to answer; the reader's scores are shown and "
                "flag sentences but do not veto. Answers with no supported sentence are still withheld."
                + (" Run `python -m rag_core calibrate` to fit the policy to the model in use." if why else ""))
    if p.name == "strictest":
        return ("Several knowledge bases are asked together: each of the reader's lines is the strictest any of "
                f"their policies sets ({p.source}).")
    why = p.source if "ignored" in p.source else "Not calibrated for this model"
    return (f"{why[0].upper() + why[1:]}: the conservative gates apply (the reader must find an answering "
            "sentence before the model is asked, and must confirm what the model wrote). Run "
            "`python -m rag_core calibrate` to fit the policy to the model in use.")
