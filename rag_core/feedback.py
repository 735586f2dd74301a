"""Query log, feedback, and the analytics frames (pandas) the analytics page shows."""

from __future__ import annotations

import json
import time
import uuid

import numpy as np
import pandas as pd

from .db import Database
from .errors import InputError
from .models import Answer
from .privacy import ANONYMOUS

SCHEMA = """
CREATE TABLE IF NOT EXISTS queries (
    query_id TEXT PRIMARY KEY,
    ts REAL NOT NULL,
    user TEXT,
    kb_ids TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    citations TEXT NOT NULL,
    claims TEXT NOT NULL,
    grounding REAL NOT NULL,
    confidence REAL NOT NULL,
    abstained INTEGER NOT NULL,
    mode TEXT NOT NULL,
    timings TEXT NOT NULL,
    answers_question REAL
);
CREATE INDEX IF NOT EXISTS queries_ts ON queries(ts);
CREATE TABLE IF NOT EXISTS feedback (
    query_id TEXT PRIMARY KEY REFERENCES queries(query_id) ON DELETE CASCADE,
    rating INTEGER NOT NULL CHECK (rating IN (-1, 1)),
    comment TEXT NOT NULL DEFAULT '',
    ts REAL NOT NULL,
    reason TEXT
);
"""

MAX_COMMENT = 2000
# What a thumbs down can say, so "why" can be counted (free text alone cannot be).
REASONS = ("wrong", "incomplete", "not in my documents", "wrong source", "other")


# A Platt fit of the reader's `answers` logit, (a, b): p = σ(a·logit + b).
Platt = tuple[float, float]


def _key(c: Platt) -> str:
    return f"{c[0]:.6f},{c[1]:.6f}"


def _reread(p: np.ndarray, old: Platt, new: Platt) -> np.ndarray:
    """A probability that `old` gave, as `new` reads the same logit (monotone: rankings kept,
    0 and 1 stay 0 and 1)."""
    p = np.clip(p.astype(float), 0.0, 1.0)
    with np.errstate(divide="ignore", over="ignore"):
        z = (np.log(p) - np.log1p(-p) - old[1]) / old[0]
        return 1.0 / (1.0 + np.exp(-(new[0] * z + new[1])))


def _on_current_scale(df: pd.DataFrame, logged: list[str | None], now: Platt, unrecorded: Platt) -> None:
    """*Answers the question* (and the confidence made from it) as the shipped calibration
    reads it, whatever calibration a row was logged under: the same logit, so a chart over time
    does not step when the reader is recalibrated. Rows that do not name their calibration were
    scored with `unrecorded`; rows from before the reader (no answers_question) stay as they are."""
    keys = pd.Series(logged, index=df.index, dtype=object).fillna(_key(unrecorded))
    aq = pd.to_numeric(df["answers_question"], errors="coerce")
    for k in set(keys) - {_key(now)}:
        rows = (keys == k) & aq.notna()
        if not rows.any():
            continue
        a, b = (float(x) for x in k.split(","))
        df.loc[rows, "answers_question"] = np.round(_reread(aq[rows].to_numpy(), (a, b), now), 4)
        shown = rows & ~df["abstained"]
        df.loc[shown, "confidence"] = np.round(
            df.loc[shown, "answers_question"].astype(float).clip(0, 1) * df.loc[shown, "grounding"].astype(float).clip(0, 1), 4)


def _helpful_rate(ratings: pd.Series) -> float | None:
    """Share of thumbs up among a group's rated answers; None when none was rated."""
    return (ratings.dropna() > 0).mean() if ratings.notna().any() else None



def refused_reason(answer: Answer) -> str | None:
    """Moderation's category when it refused (generation/moderation.py): "weapons" for a
    question, "answer: weapons" for a written answer; None otherwise."""
    category = (answer.signals or {}).get("refused") if answer.decided_by == "moderation" else None
    if not category:
        return None
    return f"answer: {category}" if answer.signals.get("refused_answer") else category

class FeedbackLog:
    def __init__(self, db: Database, answers_scale: tuple[Platt, Platt] | None = None):
        """`answers_scale`: the reader's shipped `answers` calibration and the one rows that do
        not name theirs were scored with (the caller knows the reader; this layer does not).
        With it, each answer is logged with its calibration and read on the shipped one;
        without it (a read-only look at a log), rows are shown as logged."""
        self.db = db
        self.answers_scale = answers_scale
        db.executescript(SCHEMA)
        # Logs written by older versions get the newer columns as NULL ("not recorded"), not 0.
        db.add_columns("queries", {"answers_question": "REAL",  # before the reader model existed
                                   "thread_id": "TEXT",  # before saved conversations
                                   "calibration": "TEXT",  # before issue 25's recalibration
                                   "decided_by": "TEXT",  # before the answer policy (issue 39)
                                   "policy": "TEXT",
                                   "route": "TEXT",  # before the planner (issue 42)
                                   "cached": "INTEGER",
                                   "usage": "TEXT",  # before issue 53: tokens per model
                                   "errors": "TEXT",  # before issue 53: {stage: what failed}
                                   "refused": "TEXT"})  # before moderation: its category, "answer: …" for an answer
        db.add_columns("feedback", {"reason": "TEXT"})  # before thumbs-down reasons

    def log_answer(self, answer: Answer, kb_ids: list[str], user: str | None = None,
                   thread_id: str | None = None) -> str:
        qid = uuid.uuid4().hex
        with self.db.transaction() as c:
            c.execute(
                "INSERT INTO queries (query_id, ts, user, kb_ids, question, answer, citations, claims, grounding, "
                "confidence, abstained, mode, timings, answers_question, thread_id, calibration, decided_by, policy, route, "
                "cached, usage, errors, refused) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    qid, time.time(), user, json.dumps(kb_ids), answer.question, answer.text,
                    json.dumps([x.to_dict() for x in answer.citations]), json.dumps([x.to_dict() for x in answer.claims]),
                    answer.grounding_score, answer.confidence, int(answer.abstained), answer.mode,
                    json.dumps(answer.timings_ms), answer.answers_question, thread_id,
                    _key(self.answers_scale[0]) if self.answers_scale else None,
                    answer.decided_by or None, answer.policy or None, answer.route or None, int(answer.cached),
                    json.dumps(answer.usage or {}), json.dumps(stage_errors(answer)), refused_reason(answer),
                ),
            )
        return qid

    def rate(self, query_id: str, rating: int, comment: str = "", reason: str | None = None) -> None:
        """One rating per answer; rating again (or adding a comment or reason) replaces it.
        A reason belongs to a thumbs down only."""
        if rating not in (-1, 1):
            raise InputError("rating must be +1 (helpful) or -1 (not helpful)")
        if reason is not None and (rating != -1 or reason not in REASONS):
            raise InputError(f"a reason goes with a thumbs down and is one of: {', '.join(REASONS)}")
        if len(comment) > MAX_COMMENT:
            raise InputError(f"the comment is too long (limit {MAX_COMMENT} characters)")
        if not self.db.query_one("SELECT 1 FROM queries WHERE query_id=?", (query_id,)):
            raise InputError("that answer is not in the log")
        with self.db.transaction() as c:
            c.execute("INSERT OR REPLACE INTO feedback (query_id, rating, comment, ts, reason) VALUES (?,?,?,?,?)",
                      (query_id, rating, comment.strip(), time.time(), reason))

    def rating_of(self, query_id: str) -> tuple[int, str, str | None] | None:
        """(rating, comment, reason) or None when not rated."""
        r = self.db.query_one("SELECT rating, comment, reason FROM feedback WHERE query_id=?", (query_id,))
        return (r["rating"], r["comment"], r["reason"]) if r else None

    # ---- analytics -------------------------------------------------------------------
    def frame(self, kb_names: dict[str, str] | None = None, unknown: str | None = None) -> pd.DataFrame:
        """One row per answer, with its feedback (rating NaN when none). Knowledge bases named
        in `kb_names` show their names; the others their id, or `unknown` when given."""
        rows = self.db.query(
            "SELECT q.*, f.rating, f.comment, f.reason, f.ts AS rated_ts "
            "FROM queries q LEFT JOIN feedback f ON f.query_id = q.query_id ORDER BY q.ts"
        )
        cols = ["query_id", "ts", "user", "kb_ids", "question", "answer", "citations", "claims", "grounding",
                "answers_question", "confidence", "abstained", "mode", "timings", "thread_id", "decided_by", "policy",
                "route", "cached", "usage", "errors", "refused", "rating", "comment", "reason", "rated_ts"]
        recs = [dict(r) for r in rows]
        df = pd.DataFrame(recs, columns=cols)
        df["time"] = pd.to_datetime(df["ts"], unit="s")
        df["usage"] = [json.loads(v) if isinstance(v, str) and v else {} for v in df["usage"]]  # older rows: none
        df["errors"] = [json.loads(v) if isinstance(v, str) and v else {} for v in df["errors"]]
        df["abstained"] = df["abstained"].astype(bool)
        if self.answers_scale:
            _on_current_scale(df, [r.get("calibration") for r in recs], *self.answers_scale)
        names = kb_names or {}
        df["kb_list"] = [[names.get(k, k if unknown is None else unknown) for k in json.loads(v)] for v in df["kb_ids"]]
        df["kb"] = [", ".join(v) for v in df["kb_list"]]
        df["sources"] = [", ".join(sorted({c["source"] for c in json.loads(v)})) for v in df["citations"]]
        counts = [_sentence_counts(a, c, cl) for a, c, cl in zip(df["abstained"], df["citations"], df["claims"])]
        df["sentences"] = [c[0] for c in counts]
        df["cited_sentences"] = [c[1] for c in counts]
        df["unsupported_sentences"] = [c[2] for c in counts]
        # who placed the citations (Claim.cited_by): logged since it was recorded; older rows
        # count in neither column but in "citation_unrecorded_sentences"
        df["model_cited_sentences"] = [c[3] for c in counts]
        df["checker_cited_sentences"] = [c[4] for c in counts]
        df["citation_unrecorded_sentences"] = [c[5] for c in counts]
        return df

    @staticmethod
    def costs(df: pd.DataFrame, prices: dict[str, tuple[float, float]]) -> pd.DataFrame:
        """Per model: answers it worked on, tokens in and out, and the cost where a price per
        million tokens (in, out) is set for it (RAG_LLM_PRICES); NaN where none is."""
        acc: dict[str, list[float]] = {}
        for usage in df["usage"] if "usage" in df else []:
            for model, u in (usage or {}).items():
                a = acc.setdefault(model, [0, 0, 0])
                a[0] += 1
                a[1] += int(u.get("input_tokens", 0))
                a[2] += int(u.get("output_tokens", 0))
        rows = []
        for model, (n, tin, tout) in sorted(acc.items()):
            price = prices.get(model)
            cost = (tin * price[0] + tout * price[1]) / 1e6 if price else float("nan")
            rows.append({"model": model, "answers": n, "tokens_in": tin, "tokens_out": tout, "cost": cost})
        return pd.DataFrame(rows, columns=["model", "answers", "tokens_in", "tokens_out", "cost"])

    @staticmethod
    def stage_errors(df: pd.DataFrame) -> pd.DataFrame:
        """Answers whose stage failed, per stage (the answer went on without it: offline, or
        without the step), with the latest message."""
        acc: dict[str, list] = {}
        for ts, errs in zip(df["ts"] if "ts" in df else [], df["errors"] if "errors" in df else []):
            for stage, msg in (errs or {}).items():
                a = acc.setdefault(stage, [0, "", 0.0])
                a[0] += 1
                if ts >= a[2]:
                    a[1], a[2] = msg, ts
        return pd.DataFrame([{"stage": s, "errors": n, "latest": m} for s, (n, m, _) in sorted(acc.items())],
                            columns=["stage", "errors", "latest"])

    @staticmethod
    def select(df: pd.DataFrame, start=None, end=None, kbs: list[str] | None = None) -> pd.DataFrame:
        """Rows in [start, end] (dates, inclusive) that involve any of `kbs` (names)."""
        keep = pd.Series(True, index=df.index)
        if start is not None:
            keep &= df["time"] >= pd.Timestamp(start)
        if end is not None:
            keep &= df["time"] < pd.Timestamp(end) + pd.Timedelta(days=1)
        if kbs:
            wanted = set(kbs)
            keep &= df["kb_list"].map(lambda ks: bool(wanted & set(ks)))
        return df[keep]

    @staticmethod
    def summary(df: pd.DataFrame) -> dict:
        """Headline numbers. Sentence rates are pooled over all answered sentences (a long
        answer weighs more than a one-liner, as it does for a reader).

        Citation coverage is the share of sentences whose citation the answer's writer placed
        itself (the LLM, or the extractive answer), pooled over the sentences for which that
        was recorded; citations the checker added or moved are counted apart
        (`checker_citation_rate`). Sentences logged before it was recorded are "not recorded"
        (`citations_not_recorded`), never counted as cited by the model."""
        rated = df["rating"].dropna()
        answered = df[~df["abstained"]]
        sentences = int(answered["sentences"].sum()) if len(answered) else 0
        unrecorded = int(answered["citation_unrecorded_sentences"].sum()) if len(answered) else 0
        recorded = sentences - unrecorded

        def mean(col: str) -> float | None:
            v = answered[col].dropna()
            return float(v.mean()) if len(v) else None

        return {
            "answers": int(len(df)),
            "rated": int(len(rated)),
            "helpful_rate": float((rated > 0).mean()) if len(rated) else None,
            "abstention_rate": float(df["abstained"].mean()) if len(df) else None,
            "grounding_mean": mean("grounding"),
            "answers_question_mean": mean("answers_question"),
            "confidence_mean": mean("confidence"),
            "citation_coverage": answered["model_cited_sentences"].sum() / recorded if recorded else None,
            "checker_citation_rate": answered["checker_cited_sentences"].sum() / recorded if recorded else None,
            "citations_not_recorded": unrecorded,
            "unsupported_rate": answered["unsupported_sentences"].sum() / sentences if sentences else None,
        }

    @staticmethod
    def daily(df: pd.DataFrame) -> pd.DataFrame:
        if df.empty:
            return pd.DataFrame(columns=["answers", "helpful_rate"])
        g = df.set_index("time").groupby(pd.Grouper(freq="D"))
        out = pd.DataFrame({"answers": g.size(), "helpful_rate": g["rating"].apply(lambda r: (r.dropna() > 0).mean())})
        return out

    @staticmethod
    def decisions(df: pd.DataFrame) -> pd.DataFrame:
        """What decided each answer (the answer policy's `decided_by`), per policy: answers
        shown and withheld, with the helpful rate of the rated ones. Rows logged before the
        policy existed count as "not recorded"."""
        cols = ["policy", "decided_by", "outcome", "answers", "helpful_rate"]
        if df.empty:
            return pd.DataFrame(columns=cols)
        x = pd.DataFrame({"policy": df["policy"].fillna("not recorded"),
                          "decided_by": df["decided_by"].fillna("not recorded"),
                          "outcome": df["abstained"].map({True: "withheld", False: "shown"}),
                          "rating": df["rating"]})
        g = x.groupby(["policy", "decided_by", "outcome"])
        out = pd.DataFrame({"answers": g.size(),
                            "helpful_rate": g["rating"].apply(_helpful_rate)})
        return out.reset_index().sort_values("answers", ascending=False)[cols].reset_index(drop=True)

    @staticmethod
    def routes(df: pd.DataFrame) -> pd.DataFrame:
        """Answers per planner route (search / document / compare), how many came from the
        answer cache, p50 time, and the helpful rate of the rated ones; rows from before the
        planner are "not recorded"."""
        cols = ["route", "answers", "cached", "p50_ms", "helpful_rate"]
        if df.empty:
            return pd.DataFrame(columns=cols)
        total = [json.loads(t or "{}").get("total") for t in df["timings"]]
        x = pd.DataFrame({"route": df["route"].fillna("not recorded"), "cached": df["cached"].fillna(0).astype(int),
                          "total": pd.to_numeric(pd.Series(total, index=df.index), errors="coerce"),
                          "rating": df["rating"]})
        g = x.groupby("route")
        out = pd.DataFrame({"answers": g.size(), "cached": g["cached"].sum(), "p50_ms": g["total"].median().round(0),
                            "helpful_rate": g["rating"].apply(_helpful_rate)})
        return out.reset_index().sort_values("answers", ascending=False)[cols].reset_index(drop=True)

    @staticmethod
    def reasons(df: pd.DataFrame) -> pd.DataFrame:
        """Thumbs-down reasons per day (long form: day, reason, count); a thumbs down without
        a reason counts as "no reason given"."""
        down = df[df["rating"] == -1]
        if down.empty:
            return pd.DataFrame(columns=["day", "reason", "count"])
        day = pd.to_datetime(down["rated_ts"].fillna(down["ts"]), unit="s").dt.floor("D")
        reason = down["reason"].fillna("no reason given")
        return (pd.DataFrame({"day": day, "reason": reason}).groupby(["day", "reason"]).size()
                .rename("count").reset_index())

    @staticmethod
    def latency(df: pd.DataFrame, detail: bool = True) -> pd.DataFrame:
        """p50/p95 per stage (ms). `detail=False` keeps the pipeline's own stages (retrieve,
        read, generate, verify, total) and drops retrieval's sub-steps (retrieve_embed, ...)."""
        stages: dict[str, list[float]] = {}
        for t in df["timings"]:
            for k, v in json.loads(t).items():
                if isinstance(v, (int, float)) and not k.startswith("crag") and (detail or "_" not in k):
                    stages.setdefault(k, []).append(float(v))
        return pd.DataFrame(
            [{"stage": k, "p50_ms": pd.Series(v).quantile(0.5), "p95_ms": pd.Series(v).quantile(0.95), "n": len(v)}
             for k, v in sorted(stages.items())],
            columns=["stage", "p50_ms", "p95_ms", "n"],
        )

    @staticmethod
    def per_kb(df: pd.DataFrame) -> pd.DataFrame:
        """One row per knowledge base; an answer drawn from two counts for both."""
        cols = ["kb", "answers", "helpful_rate", "abstention_rate", "grounding_mean", "answers_question_mean"]
        if df.empty:
            return pd.DataFrame(columns=cols)
        x = df.explode("kb_list").rename(columns={"kb_list": "kb_name"})
        g = x.groupby("kb_name")
        return pd.DataFrame({
            "answers": g.size(),
            "helpful_rate": g["rating"].apply(lambda r: (r.dropna() > 0).mean()),
            "abstention_rate": g["abstained"].mean(),
            "grounding_mean": x[~x["abstained"]].groupby("kb_name")["grounding"].mean(),
            "answers_question_mean": x[~x["abstained"]].groupby("kb_name")["answers_question"].mean(),
        }).rename_axis("kb").reset_index()[cols]


def _sentence_counts(abstained: bool, citations: str, claims: str) -> tuple[int, int, int, int, int, int]:
    """(sentences, sentences citing a passage the answer lists, sentences judged unsupported,
    of those citing: cited by the answer's writer, cited by the checker, and sentences whose
    citation's author was not recorded (logged before `cited_by` existed))."""
    if abstained:
        return 0, 0, 0, 0, 0, 0
    valid = {c["n"] for c in json.loads(citations)}
    cl = json.loads(claims)
    citing = [c for c in cl if set(c.get("cited") or []) & valid]
    return (len(cl), len(citing), sum(1 for c in cl if c.get("label") == "unsupported"),
            sum(1 for c in citing if c.get("cited_by") == "model"),
            sum(1 for c in citing if c.get("cited_by") == "checker"),
            sum(1 for c in cl if "cited_by" not in c))


def stage_errors(answer: Answer) -> dict[str, str]:
    """What failed while answering, by stage: a call to the language model (condense, plan,
    check or write: the answer then went on offline, and says so)."""
    return {"model": answer.models["llm_error"]} if answer.models.get("llm_error") else {}


class CallerFeedback:
    """The query log and feedback as one caller may use them (Workspace.feedback_for): log and
    rate their own answers only; analytics over their own answers (admins: everyone's), with the
    names of the knowledge bases they can see (others read "(hidden)")."""

    def __init__(self, log: FeedbackLog, caller, visible_kbs: dict[str, str], on_rated=None, level_of=None,
                 on_logged=None):
        self._log = log
        self._on_logged = on_logged  # after an answer is logged (alert rules are checked: alerts.py)
        # kb_ids -> the query log's level for a question asked in them (privacy.log_level)
        self._level_of = level_of or (lambda kb_ids: "full")
        self.caller = caller
        self._names = visible_kbs
        # (query_id, rating, reason) after each rating: what retrieval learns from it
        # (retrieval/feedback_signals.py)
        self._on_rated = on_rated

    def log_answer(self, answer: Answer, kb_ids: list[str], thread_id: str | None = None) -> str | None:
        """The answer's query id in the log; None when the query log is off for these knowledge
        bases (nothing is written). Anonymous: the row records no user and no conversation."""
        level = self._level_of(kb_ids)
        if level == "off":
            return None
        if level == "anonymous":
            qid = self._log.log_answer(answer, kb_ids, ANONYMOUS)
        else:
            qid = self._log.log_answer(answer, kb_ids, self.caller.user, thread_id=thread_id)
        if self._on_logged is not None:
            self._on_logged()
        return qid

    def _mine(self, query_id: str) -> None:
        r = self._log.db.query_one("SELECT user FROM queries WHERE query_id=?", (query_id,))
        # An anonymous answer belongs to no one on record: whoever holds its query id (128
        # random bits, handed only to the person who asked) may rate it, or no one could.
        if r is None or not (self.caller.admin or r["user"] == self.caller.user or r["user"] == ANONYMOUS):
            raise InputError("that answer is not in the log")  # the same for "not yours"

    def owns(self, query_id: str) -> bool:
        """Whether this answer is in the log and this caller may rate it (its own; admins: any)."""
        try:
            self._mine(query_id)
        except InputError:
            return False
        return True

    def rate(self, query_id: str, rating: int, comment: str = "", reason: str | None = None) -> None:
        self._mine(query_id)
        self._log.rate(query_id, rating, comment, reason)
        if self._on_rated is not None:
            self._on_rated(query_id, rating, reason)

    def rating_of(self, query_id: str) -> tuple[int, str, str | None] | None:
        return self._log.rating_of(query_id) if self.owns(query_id) else None

    def kb_ids_of(self, query_id: str) -> list[str]:
        """The knowledge bases a question of the caller's was asked of ([] for another's)."""
        if not self.owns(query_id):
            return []
        r = self._log.db.query_one("SELECT kb_ids FROM queries WHERE query_id=?", (query_id,))
        return json.loads(r["kb_ids"]) if r else []

    def history(self, limit: int = 50, offset: int = 0) -> dict:
        """The caller's own logged questions, newest first (admins too: their own), with each
        answer's scores and rating. Anonymous questions are no one's on record and are not here."""
        db = self._log.db
        total = db.query_one("SELECT COUNT(*) FROM queries WHERE user IS ?", (self.caller.user,))[0]
        rows = db.query(
            "SELECT q.query_id, q.ts, q.kb_ids, q.question, q.answer, q.abstained, q.mode, q.grounding, "
            "q.answers_question, q.confidence, q.route, q.cached, f.rating, f.reason, f.comment FROM queries q "
            "LEFT JOIN feedback f ON f.query_id=q.query_id WHERE q.user IS ? ORDER BY q.ts DESC LIMIT ? OFFSET ?",
            (self.caller.user, int(limit), int(offset)))
        items = [{
            "query_id": r["query_id"], "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r["ts"])),
            "knowledge_bases": [self._names.get(k, "(hidden)") for k in json.loads(r["kb_ids"])],
            "question": r["question"], "answer": r["answer"], "abstained": bool(r["abstained"]), "mode": r["mode"],
            "grounding_score": r["grounding"], "answers_question": r["answers_question"],
            "confidence": r["confidence"], "route": r["route"], "cached": bool(r["cached"]),
            "rating": r["rating"], "reason": r["reason"], "comment": r["comment"]} for r in rows]
        return {"total": total, "limit": int(limit), "offset": int(offset), "queries": items}

    def frame(self) -> pd.DataFrame:
        df = self._log.frame(self._names, unknown="(hidden)")
        if not self.caller.admin:
            df = df[df["user"].map(lambda u: u == self.caller.user)]
        return df.reset_index(drop=True)
