"""Query log, feedback, and the analytics frames (pandas) the analytics page shows."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid

import pandas as pd

from .db import Database
from .errors import InputError
from .models import Answer

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
    ts REAL NOT NULL
);
"""

MAX_COMMENT = 2000


class FeedbackLog:
    def __init__(self, db: Database):
        self.db = db
        db.executescript(SCHEMA)
        cols = {r["name"] for r in db.query("PRAGMA table_info(queries)")}
        if "answers_question" not in cols:  # logs written before the reader model existed: NULL, not 0
            try:
                db.executescript("ALTER TABLE queries ADD COLUMN answers_question REAL")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    def log_answer(self, answer: Answer, kb_ids: list[str], user: str | None = None) -> str:
        qid = uuid.uuid4().hex
        with self.db.transaction() as c:
            c.execute(
                "INSERT INTO queries (query_id, ts, user, kb_ids, question, answer, citations, claims, grounding, "
                "confidence, abstained, mode, timings, answers_question) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    qid, time.time(), user, json.dumps(kb_ids), answer.question, answer.text,
                    json.dumps([x.to_dict() for x in answer.citations]), json.dumps([x.to_dict() for x in answer.claims]),
                    answer.grounding_score, answer.confidence, int(answer.abstained), answer.mode,
                    json.dumps(answer.timings_ms), answer.answers_question,
                ),
            )
        return qid

    def rate(self, query_id: str, rating: int, comment: str = "") -> None:
        """One rating per answer; rating again (or adding a comment) replaces it."""
        if rating not in (-1, 1):
            raise InputError("rating must be +1 (helpful) or -1 (not helpful)")
        if len(comment) > MAX_COMMENT:
            raise InputError(f"the comment is too long (limit {MAX_COMMENT} characters)")
        if not self.db.query_one("SELECT 1 FROM queries WHERE query_id=?", (query_id,)):
            raise InputError("that answer is not in the log")
        with self.db.transaction() as c:
            c.execute("INSERT OR REPLACE INTO feedback VALUES (?,?,?,?)", (query_id, rating, comment.strip(), time.time()))

    def rating_of(self, query_id: str) -> tuple[int, str] | None:
        r = self.db.query_one("SELECT rating, comment FROM feedback WHERE query_id=?", (query_id,))
        return (r["rating"], r["comment"]) if r else None

    # ---- analytics -------------------------------------------------------------------
    def frame(self, kb_names: dict[str, str] | None = None) -> pd.DataFrame:
        """One row per answer, with its feedback (rating NaN when none)."""
        rows = self.db.query(
            "SELECT q.*, f.rating, f.comment FROM queries q LEFT JOIN feedback f ON f.query_id = q.query_id ORDER BY q.ts"
        )
        cols = ["query_id", "ts", "user", "kb_ids", "question", "answer", "citations", "claims", "grounding",
                "answers_question", "confidence", "abstained", "mode", "timings", "rating", "comment"]
        df = pd.DataFrame([dict(r) for r in rows], columns=cols)
        df["time"] = pd.to_datetime(df["ts"], unit="s")
        df["abstained"] = df["abstained"].astype(bool)
        names = kb_names or {}
        df["kb"] = [", ".join(names.get(k, k) for k in json.loads(v)) for v in df["kb_ids"]]
        df["sources"] = [", ".join(sorted({c["source"] for c in json.loads(v)})) for v in df["citations"]]
        return df

    @staticmethod
    def summary(df: pd.DataFrame) -> dict:
        rated = df["rating"].dropna()
        return {
            "answers": int(len(df)),
            "rated": int(len(rated)),
            "helpful_rate": float((rated > 0).mean()) if len(rated) else None,
            "abstention_rate": float(df["abstained"].mean()) if len(df) else None,
            "grounding_mean": float(df.loc[~df["abstained"], "grounding"].mean()) if (~df["abstained"]).any() else None,
            "answers_question_mean": (float(df.loc[~df["abstained"], "answers_question"].mean())
                                      if (~df["abstained"]).any() else None),
        }

    @staticmethod
    def daily(df: pd.DataFrame) -> pd.DataFrame:
        if df.empty:
            return pd.DataFrame(columns=["answers", "helpful_rate"])
        g = df.set_index("time").groupby(pd.Grouper(freq="D"))
        out = pd.DataFrame({"answers": g.size(), "helpful_rate": g["rating"].apply(lambda r: (r.dropna() > 0).mean())})
        return out

    @staticmethod
    def latency(df: pd.DataFrame) -> pd.DataFrame:
        """p50/p95 per stage (ms)."""
        stages: dict[str, list[float]] = {}
        for t in df["timings"]:
            for k, v in json.loads(t).items():
                if isinstance(v, (int, float)) and not k.startswith("crag"):
                    stages.setdefault(k, []).append(float(v))
        return pd.DataFrame(
            [{"stage": k, "p50_ms": pd.Series(v).quantile(0.5), "p95_ms": pd.Series(v).quantile(0.95), "n": len(v)}
             for k, v in sorted(stages.items())]
        )

    @staticmethod
    def per_kb(df: pd.DataFrame) -> pd.DataFrame:
        if df.empty:
            return pd.DataFrame(columns=["kb", "answers", "helpful_rate", "abstention_rate", "grounding_mean",
                                         "answers_question_mean"])
        g = df.groupby("kb")
        return pd.DataFrame({
            "answers": g.size(),
            "helpful_rate": g["rating"].apply(lambda r: (r.dropna() > 0).mean()),
            "abstention_rate": g["abstained"].mean(),
            "grounding_mean": g["grounding"].mean(),
            "answers_question_mean": df[~df["abstained"]].groupby("kb")["answers_question"].mean(),
        }).reset_index()
