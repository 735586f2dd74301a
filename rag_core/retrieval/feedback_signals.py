"""Feedback that changes retrieval: thumbs become (question, passage, judgement) records that
promote or demote a passage for *similar* questions in *its* knowledge base.

Which ratings teach what (a decision; the reasons are REASONS in rag_core/feedback.py):
- thumbs up: every passage the answer cited was useful for this question → promote;
- thumbs down, "wrong source" or "not in my documents": the cited passages did not answer
  it → demote;
- any other thumbs down ("wrong", "incomplete", "other", no reason): the passage may well be
  right and the answer wrong, so nothing is learnt about passages.
Rating again replaces what the earlier rating taught.

Guard rails:
- per knowledge base: a record names the passage's knowledge base and applies only to that
  passage, which a question reaches only through the caller's own filters; nothing crosses
  an access boundary, and no question text is shown to anyone through this;
- similar questions only: a record weighs (cos − SIM_MIN) / (1 − SIM_MIN) of the embedded
  questions, 0 below SIM_MIN (0.75);
- decays: halves every HALF_LIFE_DAYS;
- bounded: a passage's score is multiplied by 1 + BOUND · tanh(Σ judgement · weight), so
  never by more than (1 ± BOUND), however many votes;
- logged and reversible: each record keeps who rated, when and the query; an admin can
  revert one record, or all of a knowledge base's, and the effect is gone at once; the
  search result shows the factor applied (scores["feedback"]);
- forgotten with its source: records are deleted with the rating or query they came from
  (foreign keys), so retention and a user's erasure remove them too.

SIM_MIN: on the SQuAD train side, among pairs of different questions of one article whose
embeddings have cosine ≥ t, the share answered by the same paragraph is 0.18 at 0.6, 0.37 at
0.7, 0.51 at 0.75, 0.67 at 0.8 and 0.83 at 0.85. At 0.6 (the first choice) a thumbs up mostly
promoted the wrong paragraph for its neighbours and the simulated-user benchmark got slightly
worse (hit@1 0.96 → 0.95 on other questions of the rated articles); 0.75 is where a similar
question more often than not wants the same passage. BOUND is a judgement. Measured with
benchmarks/feedback_learning.py (closing note of the living-knowledge-base issue).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass

import numpy as np

from ..db import Database
from ..models import ScoredChunk

SIM_MIN = 0.75
BOUND = 0.5
HALF_LIFE_DAYS = 90.0
TEACHING_REASONS = ("wrong source", "not in my documents")

SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback_signals (
    signal_id INTEGER PRIMARY KEY AUTOINCREMENT,
    query_id TEXT NOT NULL REFERENCES feedback(query_id) ON DELETE CASCADE,
    kb_id TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    judgement INTEGER NOT NULL CHECK (judgement IN (-1, 1)),
    qvec BLOB NOT NULL,
    user TEXT,
    ts REAL NOT NULL,
    active INTEGER NOT NULL DEFAULT 1,
    reverted_by TEXT,
    reverted_ts REAL
);
CREATE INDEX IF NOT EXISTS feedback_signals_chunk ON feedback_signals(chunk_id, active);
CREATE INDEX IF NOT EXISTS feedback_signals_kb ON feedback_signals(kb_id);
"""


@dataclass
class Signal:
    signal_id: int
    query_id: str
    kb_id: str
    chunk_id: str
    judgement: int
    user: str | None
    ts: float
    active: bool
    reverted_by: str | None


def judgement_of(rating: int, reason: str | None) -> int:
    """+1 promote, −1 demote, 0 nothing learnt (module docstring)."""
    if rating > 0:
        return 1
    return -1 if reason in TEACHING_REASONS else 0


class FeedbackSignals:
    def __init__(self, db: Database, embed=None):
        self.db = db
        self._embed = embed  # question text → unit vector (the workspace's embedder)
        db.executescript(SCHEMA)

    # ---- writes ----------------------------------------------------------------------
    def learn(self, query_id: str, rating: int | None, reason: str | None = None) -> int:
        """(Re)derive the records of one rated answer from the query log; returns how many
        are active. `rating=None` (the rating was removed) only forgets."""
        row = self.db.query_one("SELECT question, citations, user FROM queries WHERE query_id=?", (query_id,))
        judgement = judgement_of(rating, reason) if rating is not None and row else 0
        cited = {(c["kb_id"], c["chunk_id"]) for c in json.loads(row["citations"])} if row and judgement else set()
        qvec = self._vector(row["question"]) if cited else None
        with self.db.transaction() as c:
            c.execute("DELETE FROM feedback_signals WHERE query_id=?", (query_id,))
            for kb_id, chunk_id in sorted(cited):
                if not kb_id or not chunk_id:
                    continue
                c.execute("INSERT INTO feedback_signals (query_id, kb_id, chunk_id, judgement, qvec, user, ts) "
                          "VALUES (?,?,?,?,?,?,?)", (query_id, kb_id, chunk_id, judgement, qvec.tobytes(),
                                                     row["user"], time.time()))
        return len(cited)

    def revert(self, signal_id: int, by: str) -> bool:
        with self.db.transaction() as c:
            n = c.execute("UPDATE feedback_signals SET active=0, reverted_by=?, reverted_ts=? "
                          "WHERE signal_id=? AND active=1", (by, time.time(), signal_id)).rowcount
        return n > 0

    def revert_kb(self, kb_id: str, by: str) -> int:
        with self.db.transaction() as c:
            return c.execute("UPDATE feedback_signals SET active=0, reverted_by=?, reverted_ts=? "
                             "WHERE kb_id=? AND active=1", (by, time.time(), kb_id)).rowcount

    # ---- reads -----------------------------------------------------------------------
    def list(self, kb_ids: list[str], limit: int = 500) -> list[Signal]:
        if not kb_ids:
            return []
        rows = self.db.query(
            f"SELECT * FROM feedback_signals WHERE kb_id IN ({','.join('?' * len(kb_ids))}) ORDER BY ts DESC LIMIT ?",
            [*kb_ids, limit])
        return [Signal(r["signal_id"], r["query_id"], r["kb_id"], r["chunk_id"], r["judgement"], r["user"], r["ts"],
                       bool(r["active"]), r["reverted_by"]) for r in rows]

    def reaching(self, kb_ids: list[str], question: str) -> list[int]:
        """The active records of these knowledge bases that can change this question's ranking
        (their question's cosine with it at least SIM_MIN, as `adjust` weighs them): what the
        answer cache keys on, so a rating elsewhere in the knowledge base leaves this question's
        answer cached. The question is embedded only when such records exist at all."""
        if not kb_ids:
            return []
        rows = self.db.query(f"SELECT signal_id, qvec FROM feedback_signals WHERE active=1 AND kb_id IN "
                             f"({','.join('?' * len(kb_ids))})", list(kb_ids))
        if not rows:
            return []
        q = self._vector(question)
        out = []
        for r in rows:
            v = np.frombuffer(r["qvec"], dtype=np.float32)
            if v.shape == q.shape and float(v @ q) > SIM_MIN:
                out.append(int(r["signal_id"]))
        return sorted(out)

    def _vector(self, text: str) -> np.ndarray:
        v = np.asarray(self._embed(text), dtype=np.float32).reshape(-1)
        return v / max(float(np.linalg.norm(v)), 1e-12)

    def adjust(self, question: str, cands: list[ScoredChunk], query_vector: np.ndarray | None = None,
               now: float | None = None) -> list[ScoredChunk]:
        """The candidates with feedback applied (re-sorted when any record matched). Cost: one
        indexed lookup of the candidates' ids; the question is embedded only when a record
        exists for one of them (and not at all when the search already did)."""
        if not cands:
            return cands
        ids = list({c.chunk.chunk_id for c in cands})
        rows = self.db.query(
            f"SELECT chunk_id, kb_id, judgement, qvec, ts FROM feedback_signals WHERE active=1 AND chunk_id IN "
            f"({','.join('?' * len(ids))})", ids)
        if not rows:
            return cands
        q = self._vector(question) if query_vector is None else np.asarray(query_vector, dtype=np.float32).reshape(-1)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        now = time.time() if now is None else now
        votes: dict[tuple[str, str], float] = {}
        for r in rows:
            v = np.frombuffer(r["qvec"], dtype=np.float32)
            if v.shape != q.shape:  # recorded under another embedding model
                continue
            sim = float(v @ q)
            w = (sim - SIM_MIN) / (1.0 - SIM_MIN)
            if w <= 0:
                continue
            w = min(w, 1.0) * 0.5 ** (max(now - r["ts"], 0.0) / 86400.0 / HALF_LIFE_DAYS)
            key = (r["kb_id"], r["chunk_id"])
            votes[key] = votes.get(key, 0.0) + r["judgement"] * w
        if not votes:
            return cands
        for c in cands:
            s = votes.get((c.chunk.kb_id, c.chunk.chunk_id))
            if s:
                factor = 1.0 + BOUND * math.tanh(s)
                c.scores["feedback"] = round(factor, 6)
                c.score *= factor
        return sorted(cands, key=lambda c: -c.score)
