"""Calibrating the answer policy to the model in use (`python -m rag_core calibrate`).

The shipped calibration set (calibration/calibration_set.jsonl: 45 original documents and 270
questions, half of them near-misses the documents do not answer; DATA_CARD.md) is ingested into
a knowledge base of its own, in its own folder under the data folder (never among the users'
knowledge bases), and every question is asked through the real chain with the configured model
and **no reader veto** (policy `model`, `answer_threshold` 0), so that each question's signals
are all measured: the reader's evidence, the model's own verdict, the support of what it wrote
and that text's P(answers). Rows are appended as they come (a stopped run resumes).

The fit then replays every (evidence_min, written_min) pair on those rows through the policy's
own code (`Replay`: each row's recorded signals asked of `AnswerPolicy.before_generation` and
`AnswerPolicy.decide`, exactly as the answer path asks them), so a line is fitted to the rules
that will apply it. Rows the reader answered because the model failed are left out: they say
nothing about the model. It keeps the pair with the most correct
answers among those that abstain on at least `target` of the near-misses (default 0.85) while
keeping at least half of the right answers the model gives with no line (a line that reaches
the target only by answering almost nothing is not a policy: then the usable pair that
abstains most is kept, and `target_met` is false), and saves the frontier (the best
correct-answer share at every abstention level). Offline, only the
reader's evidence line is fitted. The result is stored per model (policy_choice.model_key) with
the fingerprint of what the rows depend on, and read by `policy_for` under
`RAG_ANSWER_POLICY=auto` while that fingerprint holds (policy_choice.py).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..evaluation import normalize_answer
from .policy import AnswerPolicy, PolicyParams, Signals
from .policy_choice import fingerprint, model_key, policy_path, save_calibrated

SET_PATH = Path(__file__).with_name("calibration") / "calibration_set.jsonl"
KB_NAME = "answer-policy-calibration"
GRID = np.round(np.arange(0.0, 1.0001, 0.01), 2)
KEEP_CORRECT = 0.5  # a chosen policy keeps at least this share of the model's right answers


@dataclass
class CalibrationRun:
    path: Path  # the stored policy
    rows: int
    minutes: float
    params: dict
    figures: dict
    target_met: bool


def load_set(path: Path = SET_PATH) -> tuple[list[dict], list[dict], str]:
    """(documents, questions, sha256 of the file)."""
    raw = path.read_bytes()
    docs, qs = [], []
    for line in raw.decode().splitlines():
        if line.strip():
            rec = json.loads(line)
            (docs if rec["type"] == "doc" else qs).append(rec)
    return docs, qs, hashlib.sha256(raw).hexdigest()


def ordered(questions: list[dict], limit: int | None) -> list[dict]:
    """Answerable and near-miss questions interleaved, so any first N is balanced."""
    a = [q for q in questions if q["answerable"]]
    n = [q for q in questions if not q["answerable"]]
    out = [x for pair in zip(a, n) for x in pair] + a[len(n):] + n[len(a):]
    return out[:limit] if limit else out


def row_of(q: dict, answer) -> dict:
    """One question's signals (all of them: the replay asks the policy with them) and whether
    what was shown is right (an answer holding a gold answer and citing the gold document)."""
    sig = answer.signals or {}
    text = normalize_answer(answer.text)
    cites_gold = any(c.doc_id == q["doc"] for c in answer.citations)
    correct = (q["answerable"] and not answer.abstained and cites_gold
               and any(normalize_answer(x) and normalize_answer(x) in text for x in q["answers"]))
    known = set(Signals.__dataclass_fields__)
    return {"id": q["id"], "answerable": q["answerable"], "abstained": answer.abstained,
            "decided_by": answer.decided_by, "evidence": sig.get("evidence", answer.evidence_score),
            "answers": sig.get("answers"), "correct": bool(correct), "mode": answer.mode,
            "signals": {k: v for k, v in sig.items() if k in known}}


class Replay:
    """Recorded rows (each question asked once with no reader line) replayed under any pair of
    lines through the policy's own code: a question is shown when `before_generation` lets it
    through and `decide` shows it, as in the answer path. The gate reads `evidence_min` and
    the decision `written_min` (PolicyParams), so each is asked once per line value and the
    grid is their product; tests check this against asking every grid point. Rows the reader
    answered for a failed model are left out (`fallbacks` counts them). The calibration's fit
    and benchmarks/policy_models.py read every policy through this."""

    def __init__(self, rows: list[dict], llm: bool = True):
        self.llm = llm
        ok = [r for r in rows if not (llm and _fell_back(r))]
        self.fallbacks = len(rows) - len(ok)
        self.rows = ok
        self.ans = np.array([r["answerable"] for r in ok], dtype=bool)
        self.correct = np.array([r["correct"] for r in ok], dtype=bool)
        self.signals = [_signals_of(r, llm) for r in ok]
        self._gate: dict[float, np.ndarray] = {}
        self._decide: dict[float, np.ndarray] = {}

    @staticmethod
    def policy(evidence_min: float, written_min: float, llm: bool = True) -> AnswerPolicy:
        return AnswerPolicy(PolicyParams("calibrated", evidence_min, written_min,
                                         offline_min=evidence_min if not llm else 0.0, correct_below=0.0,
                                         mode="llm" if llm else "extractive"))

    def passes_gate(self, e: float) -> np.ndarray:
        if e not in self._gate:
            p = self.policy(e, 0.0, self.llm)
            self._gate[e] = np.array([not p.before_generation(s).abstain and
                                      (self.llm or not p.decide(s).abstain) for s in self.signals], dtype=bool)
        return self._gate[e]

    def passes_decision(self, w: float) -> np.ndarray:
        if w not in self._decide:
            p = self.policy(0.0, w, self.llm)
            self._decide[w] = np.array([not p.decide(s).abstain for s in self.signals], dtype=bool)
        return self._decide[w]

    def shown(self, evidence_min: float, written_min: float) -> np.ndarray:
        return self.passes_gate(evidence_min) & self.passes_decision(written_min)

    def at(self, evidence_min: float, written_min: float) -> tuple[float, float]:
        """(share of answerable questions answered correctly, share of the others declined)."""
        shown = self.shown(evidence_min, written_min)
        n_a, n_u = max(int(self.ans.sum()), 1), max(int((~self.ans).sum()), 1)
        return float((shown & self.correct & self.ans).sum() / n_a), float((~shown & ~self.ans).sum() / n_u)


def _fell_back(row: dict) -> bool:
    sig = row.get("signals") or {}
    return row.get("mode") == "extractive" or bool(sig.get("fallback"))


def _signals_of(row: dict, llm: bool) -> Signals:
    """A row's signals. Rows from before signals were recorded whole carry only the figures and
    the outcome: what the fixed rules did is rebuilt from the rule that decided."""
    if row.get("signals"):
        return Signals.from_record(row["signals"])
    fixed = row["abstained"] and row.get("decided_by") not in ("reader", "written_answer_check")
    return Signals("llm" if llm else "extractive", passages=1, evidence=row.get("evidence"),
                   declined=True if fixed else None, drafted=True, labels=("supported",),
                   answers=row.get("answers"))


def fit(rows: list[dict], target: float, llm: bool) -> tuple[dict, dict, list[dict], bool]:
    """(params, figures at the chosen point, frontier, whether the target was met)."""
    replay = Replay(rows, llm)
    points = [(float(e), float(w), *replay.at(e, w)) for e in GRID for w in (GRID if llm else [0.0])]
    # A policy that reaches the target by answering (almost) nothing is no policy: a point must
    # keep at least KEEP_CORRECT of the right answers the model gives with no reader line. When
    # none of those reaches the target, the one among them that declines most is kept, and the
    # figures say the target was not met.
    floor = KEEP_CORRECT * points[0][2]  # points[0] is (0, 0): no line at all
    usable = [p for p in points if p[2] >= floor]
    ok = [p for p in usable if p[3] >= target]
    met = bool(ok)
    # most right answers within the target; ties: more abstention, then the lower lines
    best = (max(ok, key=lambda p: (p[2], p[3], -p[0], -p[1])) if ok
            else max(usable, key=lambda p: (p[3], p[2], -p[0], -p[1])))
    frontier, top = [], -1.0
    for p in sorted(points, key=lambda p: (-p[3], -p[2], p[0], p[1])):
        if p[2] > top:
            frontier.append({"evidence_min": p[0], "written_min": p[1], "answerable_correct": round(p[2], 4),
                             "unanswerable_abstained": round(p[3], 4)})
            top = p[2]
    params = {"evidence_min": best[0], "written_min": best[1]} if llm else {"offline_min": best[0], "evidence_min": best[0],
                                                                          "written_min": 0.0}
    figures = {"answerable_correct": round(best[2], 4), "unanswerable_abstained": round(best[3], 4),
               "questions": len(replay.rows), "fallbacks_left_out": replay.fallbacks, "target": target,
               "target_met": met}
    return params, figures, frontier, met


def calibrate(settings, open_set: Callable[..., Callable[[str], object]], *, limit: int | None = None,
              target: float | None = None, progress: Callable[[int, int, float | None], None] | None = None,
              set_path: Path = SET_PATH) -> CalibrationRun:
    """Run the calibration set through the configured model and store its policy. Resumes
    from the rows of an earlier run of the same set for the same model.

    `open_set(settings, docs, sha)` is the caller's (the Workspace's): it returns `(ask, close)`,
    `ask(question) -> Answer` over a knowledge base holding `docs`, answered under `settings` —
    the given settings with the calibration folder as data folder (an embedded store of its
    own, whatever store the users' knowledge bases are in) and no reader veto."""
    t0 = time.perf_counter()
    target = settings.answer_policy_target if target is None else target
    key = model_key(settings)
    llm = key["mode"] == "llm"
    docs, questions, sha = load_set(set_path)
    todo = ordered(questions, limit)
    rows_path = policy_path(settings.data_dir, key).with_suffix(".rows.jsonl")
    fp = hashlib.sha256(json.dumps(fingerprint(settings, llm, sha), sort_keys=True).encode()).hexdigest()[:16]
    rows: dict[str, dict] = {}
    if rows_path.exists():
        for line in rows_path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("set") == sha and rec.get("fp") == fp:  # rows of other files or settings are stale
                rows[rec["id"]] = rec
    left = [q for q in todo if q["id"] not in rows]
    if progress:
        progress(len(todo) - len(left), len(todo), None)
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    started, done0 = time.perf_counter(), len(todo) - len(left)
    if left:
        work = settings.model_copy(update={"data_dir": Path(settings.data_dir) / "answer_policies" / "set",
                                           "store": "embedded", "answer_policy": "model", "answer_threshold": 0.0})
        ask, close = open_set(work, docs, sha)
        try:
            with rows_path.open("a") as fh:
                for i, q in enumerate(left, 1):
                    rec = {**row_of(q, ask(q["question"])), "set": sha, "fp": fp}
                    rows[q["id"]] = rec
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
                    if progress:
                        progress(done0 + i, len(todo), (time.perf_counter() - started) / i * (len(left) - i))
        finally:
            close()
    chosen = [rows[q["id"]] for q in todo]
    params, figures, frontier, met = fit(chosen, target, llm)
    path = save_calibrated(settings.data_dir, key, params, figures, frontier,
                           {"set_sha256": sha, "limit": limit, "minutes": round((time.perf_counter() - t0) / 60, 2),
                            "fingerprint": fingerprint(settings, llm, sha)})
    return CalibrationRun(path, len(chosen), (time.perf_counter() - t0) / 60, params, figures, met)
