"""The answer policy: the one place that decides whether an answer is shown, shown with some
sentences flagged, or withheld (an abstention that lists the closest passages), and that
records which signal decided (`decided_by`).

The chain gathers the signals and asks twice, because generating costs time:

- `before_generation`: is there anything to answer from (retrieval), does the reader veto
  (its best sentence's evidence), did the model's relevance check say no;
- `after_generation`: did the model decline, does any sentence of the written answer have
  the support of its sources, does the written answer answer the question (P(answers) of
  what was written), grounded-only;

and once more in between, `correct`: whether corrective retrieval should rewrite an answer.

**The best judge present decides.** Offline the reader is the only judge: its evidence
against `answer_threshold`. With a language model the reader's scores are signals (they
choose and order the passages the model reads, flag sentences, are shown and logged) and a
veto only where the policy in force says so:

- `conservative`: the reader vetoes before generation (`answer_threshold`) and after it
  (`llm_answer_threshold` on the written answer): the gates every version before this one ran.
- `model`: the model's own verdict decides (it declined; the relevance check said no); the
  reader only signals. Support verification still marks sentences and blocks an answer with
  no supported sentence.
- `auto` (default): the policy calibrated for the model in use (`python -m rag_core
  calibrate`, stored per model in the data folder), else `conservative`, saying so.

Support verification is not a policy choice: an answer in which no sentence is supported by
its sources is never shown as an answer, under every policy.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

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
LOOKUP = "lookup"  # a whole-document lookup: shown as the document, never vetoed
# The planner's whole-document and comparison routes (generation/planner.py): the answer reads
# whole documents, so no sentence score of the reader's can say it answers nothing; they are
# never vetoed, and withheld only when nothing could be read or written.
DOCUMENT = "document"
COMPARE = "compare"
# Offline, in a language the reader does not read: it judged nothing, so nothing is shown as
# an answer; the closest passages are, with their best sentence marked (text/messages.py).
LANGUAGE = "reader_language"
DECIDED_BY = (RETRIEVAL, READER, RELEVANCE, DECLINED, MODEL, WRITTEN, VERIFICATION, GROUNDED, LOOKUP, LANGUAGE,
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
    COMPARE: "None of the documents to compare held a passage on the question.",
}


@dataclass(frozen=True)
class Signals:
    """Everything the chain knows when it asks. None = not measured (the step did not run)."""

    mode: Literal["llm", "extractive"]
    passages: int = 0  # retrieved passages
    dropped: int = 0  # candidate passages the knowledge bases' minimum relevance dropped
    min_relevance: float = 0.0  # that minimum
    evidence: float | None = None  # the reader's best selection score over the retrieved sentences
    lookup: bool = False  # a whole-document lookup
    route: str = "search"  # the planner's route: "document" and "compare" are never vetoed
    relevance: bool | None = None  # the model's relevance check: yes / no
    declined: bool | None = None  # the model wrote "the sources do not answer" and cited nothing
    drafted: bool = True  # a draft exists (offline: a sentence was found)
    labels: tuple[str, ...] = ()  # support label per sentence of the written answer
    answers: float | None = None  # calibrated P(answers) of the written answer (its best sentence)
    grounded_only: bool = False
    kept: int | None = None  # grounded-only: sentences left after the unsupported ones were dropped
    # The reader reads the question's and the passages' language (English): otherwise its
    # evidence and P(answers) were not measured and must not decide anything.
    reader_reads: bool = True


@dataclass(frozen=True)
class Decision:
    action: Action
    decided_by: str
    reason: str = ""  # plain words for a person (abstentions)
    detail: str = ""  # the figures behind it (JSON, logs, the details expander)

    @property
    def abstain(self) -> bool:
        return self.action == "abstain"

    def why(self) -> str:
        """The reason as stored on an Answer: the plain words, then the figures in brackets."""
        return f"{self.reason} ({self.detail})" if self.detail else self.reason


@dataclass(frozen=True)
class PolicyParams:
    """The numbers a policy applies. 0 switches a reader veto off."""

    name: Literal["conservative", "model", "calibrated"]
    evidence_min: float  # LLM mode: the reader's evidence needed before the model is asked
    written_min: float  # LLM mode: P(answers) of the written answer needed to show it
    offline_min: float  # offline: the reader's evidence needed (the reader is the judge)
    correct_below: float  # corrective retrieval when confidence is below this
    source: str = ""  # where the numbers come from, in words
    calibrated_at: str = ""  # ISO date of the calibration, when calibrated
    figures: dict = field(default_factory=dict)  # the calibration's figures at the chosen point
    mode: str = "llm"  # what answers: "llm" (a model) or "extractive" (the offline reader alone)


class AnswerPolicy:
    """Decides answer / flag / abstain from the signals; one instance per answer engine."""

    def __init__(self, params: PolicyParams):
        self.params = params

    @property
    def name(self) -> str:
        return self.params.name

    def before_generation(self, s: Signals) -> Decision:
        if s.route in (DOCUMENT, COMPARE):
            return Decision("proceed", s.route)
        if s.lookup:
            return Decision("proceed", LOOKUP)
        if s.passages == 0 and s.dropped:
            return Decision("abstain", RETRIEVAL, "No passage reached the minimum relevance set on the knowledge base.",
                            f"the minimum relevance ({s.min_relevance:.2f}) dropped all {s.dropped} candidate passage(s)")
        if s.passages == 0:
            return Decision("abstain", RETRIEVAL, PLAIN[RETRIEVAL])
        if s.mode == "extractive" and not s.reader_reads:
            return Decision("abstain", LANGUAGE, PLAIN[LANGUAGE], "the offline reader reads English only")
        need = self.params.offline_min if s.mode == "extractive" else self.params.evidence_min
        if s.evidence is not None and need > 0 and s.evidence < need:
            return Decision("abstain", READER, PLAIN[READER],
                            f"reader evidence {s.evidence:.2f}, below the {need:.2f} the {self._judge(s)} needs")
        if s.relevance is False:
            return Decision("abstain", RELEVANCE, PLAIN[RELEVANCE], "relevance check: no")
        return Decision("proceed", READER if s.mode == "extractive" else MODEL)

    def after_generation(self, s: Signals) -> Decision:
        if s.route in (DOCUMENT, COMPARE):
            if not s.drafted:
                return Decision("abstain", s.route, PLAIN[s.route], "nothing could be read for the request")
            if s.grounded_only and s.labels and not s.kept:
                return Decision("abstain", GROUNDED, PLAIN[GROUNDED], "grounded-only: no supported sentence")
            return Decision("answer", s.route)
        if s.lookup:
            return Decision("answer", LOOKUP)
        if not s.drafted:
            return Decision("abstain", READER, PLAIN[READER], "no sentence of the matching passages was chosen")
        if s.mode == "llm" and s.declined:
            return Decision("abstain", DECLINED, PLAIN[DECLINED], "the model declined")
        if s.grounded_only and s.labels and not s.kept:
            return Decision("abstain", GROUNDED, PLAIN[GROUNDED], "grounded-only: no supported sentence")
        if s.labels and "supported" not in s.labels:
            return Decision("abstain", VERIFICATION, PLAIN[VERIFICATION],
                            f"0 of {len(s.labels)} sentences supported by their sources")
        need = self.params.written_min
        if s.mode == "llm" and need > 0 and s.answers is not None and s.answers < need:
            return Decision("abstain", WRITTEN, PLAIN[WRITTEN],
                            f"P(answers) of the written answer {s.answers:.2f}, below the {need:.2f} the "
                            f"{self._judge(s)} needs")
        who = MODEL if s.mode == "llm" else READER
        flagged = any(x != "supported" for x in s.labels)
        return Decision("flag" if flagged else "answer", who)

    def correct(self, confidence: float) -> bool:
        """Corrective retrieval: rewrite an LLM answer whose confidence is below the line."""
        return confidence < self.params.correct_below

    def _judge(self, s: Signals) -> str:
        return "offline reader" if s.mode == "extractive" else f"{self.params.name} policy"

    def describe(self) -> dict:
        """The policy in force, for the Knowledge bases page and `GET /v1/answer-policy`."""
        p = self.params
        out = asdict(p)
        out["summary"] = summary(p)
        return out


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
        return ("The language model's own verdict decides whether to answer; the reader's scores are shown and "
                "flag sentences but do not veto. Answers with no supported sentence are still withheld.")
    return ("Not calibrated for this model: the conservative gates apply (the reader must find an answering "
            "sentence before the model is asked, and must confirm what the model wrote). Run "
            "`python -m rag_core calibrate` to fit the policy to the model in use.")


# ---- which policy is in force ------------------------------------------------------------

POLICY_DIR = "answer_policies"


def model_key(settings, llm: bool | None = None) -> dict:
    """What a calibration is for: the model that writes answers, where it is served, or the
    offline reader. Two deployments of the same name at different endpoints are different.
    `llm`: whether a model answers (default: whether the settings configure one)."""
    if not (settings.llm_configured if llm is None else llm):
        from ..reader import get_reader  # the reader is what judges offline
        return {"mode": "extractive", "model": f"reader@{get_reader().sha256[:12]}", "endpoint": ""}
    if settings.llm_gguf:
        return {"mode": "llm", "model": Path(settings.llm_gguf).name, "endpoint": "local"}
    return {"mode": "llm", "model": settings.llm_model,
            "endpoint": settings.openai_base_url or ("https://api.openai.com/v1" if settings.openai_api_key else "")}


def policy_path(data_dir: Path, key: dict) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{key['mode']}-{key['model']}")[:80]
    h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
    return Path(data_dir) / POLICY_DIR / f"{slug}-{h}.json"


def load_calibrated(data_dir: Path, key: dict) -> dict | None:
    path = policy_path(data_dir, key)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("key") == key and "params" in data else None


def save_calibrated(data_dir: Path, key: dict, params: dict, figures: dict, frontier: list[dict], extra: dict) -> Path:
    path = policy_path(data_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "params": params, "figures": figures, "frontier": frontier,
                               "date": time.strftime("%Y-%m-%d"), **extra}, indent=1))
    tmp.replace(path)
    return path


def policy_for(settings, choice: str | None = None, llm: bool | None = None) -> AnswerPolicy:
    """The policy in force for these settings. `choice` (a knowledge base's setting) wins over
    `settings.answer_policy`; unknown values read as auto. `llm` as for model_key."""
    name = (choice or settings.answer_policy or "auto").lower()
    key = model_key(settings, llm)
    base = dict(offline_min=settings.answer_threshold, correct_below=settings.confidence_threshold, mode=key["mode"])
    conservative = PolicyParams("conservative", settings.answer_threshold, settings.llm_answer_threshold,
                                source="the conservative gates (shipped thresholds)", **base)
    if name == "conservative":
        return AnswerPolicy(conservative)
    if name == "model":
        return AnswerPolicy(PolicyParams("model", 0.0, 0.0, source="the model's own verdict (chosen by an administrator)",
                                         **base))
    cal = load_calibrated(settings.data_dir, key)
    if cal is None:
        return AnswerPolicy(PolicyParams(**{**asdict(conservative),
                                            "source": "not calibrated for this model: the conservative gates"
                                            if key["mode"] == "llm" else "the shipped reader line"}))
    p = cal["params"]
    offline = p.get("offline_min", settings.answer_threshold) if key["mode"] == "extractive" else settings.answer_threshold
    return AnswerPolicy(PolicyParams(
        "calibrated", float(p.get("evidence_min", 0.0)), float(p.get("written_min", 0.0)), float(offline),
        settings.confidence_threshold, source=f"calibrated for {key['model']}", calibrated_at=cal.get("date", ""),
        figures=cal.get("figures", {}), mode=key["mode"]))


def merged_choice(kbs) -> str | None:
    """A knowledge-base setting for the policy: one choice when the selected knowledge bases
    agree, `conservative` when they differ (asking across them must not loosen any one's
    rule), None when none sets it."""
    chosen = {kb.retrieval.answer_policy for kb in kbs if getattr(kb.retrieval, "answer_policy", "")}
    if not chosen:
        return None
    return chosen.pop() if len(chosen) == 1 else "conservative"
