"""Feedback that changes retrieval, two ways, both per knowledge base:

1. thumbs become (question, passage, judgement) records that promote or demote a passage for
   *similar* questions in *its* knowledge base (this helps a question asked again, by anyone);
2. each rating also records the reranker's features of the passages read for that question,
   with the cited ones labelled; a knowledge base's records fit a *correction of the
   reranker's weights* (`Corrections`), which reaches questions nobody rated: what its users
   find relevant, not which passage one question wanted. Measured: similar-question
   promotion left other questions of the rated articles unchanged; the correction is what
   moves them (closing note of the living-knowledge-base issue).

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
CREATE TABLE IF NOT EXISTS feedback_examples (
    query_id TEXT NOT NULL REFERENCES feedback(query_id) ON DELETE CASCADE,
    kb_id TEXT NOT NULL,
    chunk_ids TEXT NOT NULL,
    matrix BLOB NOT NULL,
    labels BLOB NOT NULL,
    ts REAL NOT NULL,
    active INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (query_id, kb_id)
);
CREATE INDEX IF NOT EXISTS feedback_examples_kb ON feedback_examples(kb_id, active);
CREATE TABLE IF NOT EXISTS feedback_models (
    kb_id TEXT PRIMARY KEY,
    correction TEXT NOT NULL,
    examples INTEGER NOT NULL,
    detail TEXT NOT NULL,
    ts REAL NOT NULL
);
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
    def __init__(self, db: Database, embed=None, examples=None):
        self.db = db
        self._embed = embed  # question text → unit vector (the workspace's embedder)
        # (question, kb_id) → (head chunk ids, feature matrix), or None (pipeline.examples)
        self._examples = examples
        self.corrections = Corrections(db)
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
        self._record_examples(query_id, row["question"] if row else "", cited, judgement)
        return len(cited)

    def _record_examples(self, query_id: str, question: str, cited: set, judgement: int) -> None:
        """The reranker's view of this question in each cited knowledge base, cited passages
        labelled +1 (thumbs up) or −1 (wrong source); the knowledge base's correction is
        refitted. A rating that teaches nothing removes what an earlier one recorded."""
        kbs = sorted({kb for kb, _ in cited if kb})
        rows = []
        for kb_id in kbs if self._examples is not None else []:
            got = self._examples(question, kb_id)
            if got is None:
                continue
            ids, m = got
            mine = {cid for kb, cid in cited if kb == kb_id}
            labels = np.array([judgement if cid in mine else 0 for cid in ids], dtype=np.int8)
            if labels.any():
                rows.append((query_id, kb_id, json.dumps(ids), np.asarray(m, dtype=np.float32).tobytes(),
                             labels.tobytes(), time.time()))
        with self.db.transaction() as c:
            before = [r[0] for r in c.execute("SELECT kb_id FROM feedback_examples WHERE query_id=?", (query_id,))]
            c.execute("DELETE FROM feedback_examples WHERE query_id=?", (query_id,))
            c.executemany("INSERT INTO feedback_examples (query_id, kb_id, chunk_ids, matrix, labels, ts) "
                          "VALUES (?,?,?,?,?,?)", rows)
        for kb_id in sorted(set(before) | {r[1] for r in rows}):
            self.corrections.refit(kb_id, force=False)

    def correction(self, kb_id: str) -> np.ndarray | None:
        return self.corrections.get(kb_id)

    def revert(self, signal_id: int, by: str) -> bool:
        """One record reverted: so is what its rating taught the knowledge base's correction."""
        with self.db.transaction() as c:
            n = c.execute("UPDATE feedback_signals SET active=0, reverted_by=?, reverted_ts=? "
                          "WHERE signal_id=? AND active=1", (by, time.time(), signal_id)).rowcount
            row = c.execute("SELECT query_id, kb_id FROM feedback_signals WHERE signal_id=?", (signal_id,)).fetchone()
            if n and row:
                c.execute("UPDATE feedback_examples SET active=0 WHERE query_id=? AND kb_id=?", (row[0], row[1]))
        if n and row:
            self.corrections.refit(row[1])
        return n > 0

    def revert_kb(self, kb_id: str, by: str) -> int:
        with self.db.transaction() as c:
            n = c.execute("UPDATE feedback_signals SET active=0, reverted_by=?, reverted_ts=? "
                          "WHERE kb_id=? AND active=1", (by, time.time(), kb_id)).rowcount
            c.execute("UPDATE feedback_examples SET active=0 WHERE kb_id=?", (kb_id,))
        self.corrections.refit(kb_id)
        return n

    # ---- reads -----------------------------------------------------------------------
    def list(self, kb_ids: list[str], limit: int = 500) -> list[Signal]:
        if not kb_ids:
            return []
        rows = self.db.query(
            f"SELECT * FROM feedback_signals WHERE kb_id IN ({','.join('?' * len(kb_ids))}) ORDER BY ts DESC LIMIT ?",
            [*kb_ids, limit])
        return [Signal(r["signal_id"], r["query_id"], r["kb_id"], r["chunk_id"], r["judgement"], r["user"], r["ts"],
                       bool(r["active"]), r["reverted_by"]) for r in rows]

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


# ---- the per-knowledge-base correction of the reranker ------------------------------------
MIN_EXAMPLES = 30  # rated questions a knowledge base needs before anything is fitted
LAMBDAS = (0.01, 0.001)  # L2 pull towards the shipped weights, chosen per base by 2-fold CV
STEPS = 400


class Corrections:
    """A knowledge base's rated questions (their read heads' features, cited passages
    labelled) fit a change to the reranker's weights: a listwise logistic model over each
    head — maximise the probability of the passages rated up and minimise that of those
    rated "wrong source" — started from, and pulled back towards, the shipped weights.

    Guard rails: only a base's own records fit its correction, and it applies only to
    searches over that base alone (pipeline._rerank); it is adopted only when it ranks the
    labelled passages of held-out records better (2-fold cross-validation over the base's
    records, the pull strength chosen the same way) — otherwise none is kept; its effect on a
    candidate is centred over the head and bounded (rerank.CORRECTION_BOUND); records decay
    with the similar-question records' half-life; it is stored with its evidence
    (feedback_models: examples, fold gains) and refitted whenever a rating or a revert
    changes the records, so an admin's revert removes it at once.
    """

    def __init__(self, db: Database):
        self.db = db
        db.executescript(SCHEMA)

    def get(self, kb_id: str) -> np.ndarray | None:
        row = self.db.query_one("SELECT correction FROM feedback_models WHERE kb_id=?", (kb_id,))
        corr = json.loads(row[0]) if row else None
        return None if corr is None else np.asarray(corr, dtype=np.float64)

    def detail(self, kb_id: str) -> dict | None:
        row = self.db.query_one("SELECT * FROM feedback_models WHERE kb_id=?", (kb_id,))
        if row is None:
            return None
        return {"correction": json.loads(row["correction"]), "examples": row["examples"],
                **json.loads(row["detail"]), "ts": row["ts"]}

    def _load(self, kb_id: str, now: float):
        rows = self.db.query("SELECT matrix, labels, ts FROM feedback_examples WHERE kb_id=? AND active=1", (kb_id,))
        out = []
        for r in rows:
            labels = np.frombuffer(r["labels"], dtype=np.int8)
            m = np.frombuffer(r["matrix"], dtype=np.float32).reshape(len(labels), -1).astype(np.float64)
            w = 0.5 ** (max(now - r["ts"], 0.0) / 86400.0 / HALF_LIFE_DAYS)
            out.append((m, labels, w))
        return out

    def refit(self, kb_id: str, now: float | None = None, force: bool = True) -> dict | None:
        """Fit (or drop) the base's correction. A new rating refits only once the records
        have grown 10% since the last fit (each fit reads them all: refitting on every
        rating made rating cost grow with the records); a revert always refits."""
        now = time.time() if now is None else now
        if not force:
            last = self.db.query_one("SELECT examples FROM feedback_models WHERE kb_id=?", (kb_id,))
            count = self.db.query_one("SELECT COUNT(*) FROM feedback_examples WHERE kb_id=? AND active=1", (kb_id,))[0]
            if count < MIN_EXAMPLES and last is None:
                return None
            if last is not None and last[0] <= count < last[0] * 1.1:
                return self.detail(kb_id)
        examples = self._load(kb_id, now)
        fitted = fit_correction(examples) if len(examples) >= MIN_EXAMPLES else None  # outside the write lock
        with self.db.transaction() as c:
            c.execute("DELETE FROM feedback_models WHERE kb_id=?", (kb_id,))
            if fitted is not None:  # kept when not adopted too: the attempt and its evidence
                corr, detail = fitted
                c.execute("INSERT INTO feedback_models VALUES (?,?,?,?,?)",
                          (kb_id, json.dumps(None if corr is None else [round(float(v), 6) for v in corr]),
                           len(examples), json.dumps(detail), now))
        return self.detail(kb_id)


def _pad(examples):
    """Heads padded to one size: (n, h, f) features, (n, h) labels, (n, h) mask, (n,) weights."""
    h = max(len(lab) for _, lab, _ in examples)
    f = examples[0][0].shape[1]
    X = np.zeros((len(examples), h, f))
    L = np.zeros((len(examples), h))
    M = np.zeros((len(examples), h), dtype=bool)
    W = np.array([w for _, _, w in examples])
    for i, (m, lab, _) in enumerate(examples):
        X[i, : len(lab)], L[i, : len(lab)], M[i, : len(lab)] = m, lab, True
    return X, L, M, W


def _probs(X, M, base, theta):
    s = X @ theta + base
    s = np.where(M, s, -np.inf)
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=1, keepdims=True)


def _fit(X, L, M, W, base, lam: float) -> np.ndarray:
    """theta (the change of weights) by gradient descent on the weighted listwise loss:
    −log Σ p(up-rated) for thumbs up, −log(1 − Σ p(wrong)) for "wrong source"."""
    theta = np.zeros(X.shape[2])
    pos, neg = L > 0, L < 0
    up = pos.any(axis=1)
    wsum = max(W.sum(), 1e-9)
    for _ in range(STEPS):
        p = _probs(X, M, base, theta)
        pp = np.where(up, (p * pos).sum(axis=1), 1.0 - (p * neg).sum(axis=1))
        pp = np.maximum(pp, 1e-9)
        # d loss / d s_j: thumbs up p_j − p_j·[j∈pos]/P; wrong source p_j·([j∈neg] − Pn)/(1 − Pn)
        g_up = p - p * pos / pp[:, None]
        pn = 1.0 - pp
        g_dn = p * (neg - pn[:, None]) / pp[:, None]
        g = np.where(up[:, None], g_up, g_dn) * M * W[:, None]
        grad = np.einsum("nh,nhf->f", g, X) / wsum + lam * theta
        theta -= 0.5 * grad
    return theta


def _score(X, L, M, base, theta) -> float:
    """Share of records ranked right at the top: an up-rated passage first (thumbs up), or
    a passage other than the wrong ones first (wrong source)."""
    s = np.where(M, X @ theta + base, -np.inf)
    top = s.argmax(axis=1)
    lab = L[np.arange(len(L)), top]
    up = (L > 0).any(axis=1)
    return float(np.mean(np.where(up, lab > 0, lab >= 0)))


def fit_correction(examples) -> tuple[np.ndarray | None, dict]:
    """The correction for these records, or None when it does not rank held-out records
    better than the shipped weights in both folds (see Corrections); with the evidence."""
    from .rerank import ReaderReranker, load_weights

    weights = load_weights()
    theta0 = np.array([weights[f] for f in ReaderReranker.LEARNABLE[:-1]] + [1.0])
    X, L, M, W = _pad(examples)
    base = X @ theta0  # the shipped combination (the bias and the combo's equal weights aside)
    order = np.random.default_rng(0).permutation(len(X))
    folds = (order[: len(X) // 2], order[len(X) // 2 :])
    tried, best = {}, None
    for lam in LAMBDAS:
        gains = []
        for a, b in ((folds[0], folds[1]), (folds[1], folds[0])):
            theta = _fit(X[a], L[a], M[a], W[a], base[a], lam)
            gains.append(_score(X[b], L[b], M[b], base[b], theta) - _score(X[b], L[b], M[b], base[b], np.zeros_like(theta)))
        tried[str(lam)] = [round(g, 4) for g in gains]
        if min(gains) > 0 and (best is None or sum(gains) > sum(tried[str(best)])):
            best = lam
    if best is None:
        return None, {"adopted": False, "fold_gains": tried}
    return _fit(X, L, M, W, base, best), {"adopted": True, "lambda": best, "fold_gains": tried}
