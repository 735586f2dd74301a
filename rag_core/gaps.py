"""What a knowledge base is missing, from its query log: the questions it abstained on or that
were rated down, grouped by topic ("what to upload next"); precision of the cited passages
estimated from feedback; answers that need a person.

Input is the analytics frame a caller may see (feedback.CallerFeedback.frame: their own
questions, everyone's for an admin), so the report never shows a user another user's
questions. Pure pandas/numpy; the embedder is passed in.

Grouping: questions embedded with the knowledge base's own model, then a greedy "leader"
clustering (each question joins the first group whose centroid is within SIM of it, else
starts one), in time order so groups are stable as the log grows. O(questions × groups); the
log's unanswered questions number in the hundreds or thousands, not millions. A group is
labelled by its key terms: the words most over-represented in it compared with all the
questions shown (tf-idf), so "leave", "parental" name a group, not "how" or "what".
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pandas as pd

from .feedback import REASONS
from .text.analysis import STOPWORDS

_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]")
_QUESTION_WORDS = frozenset("how what when where which who whom whose why does did can could would should "
                            "many much there tell please".split())

# cosine of the question embeddings for one topic: the lowest line that mixed no topics on the
# train topics of benchmarks/topic_purity.py (0.55 before: the same purity, 1.0, on the test
# topics, but a topic split into more groups: inverse purity 0.78 vs 0.91)
SIM = 0.5
PASSAGE_REASONS = ("wrong source", "not in my documents")
assert set(PASSAGE_REASONS) <= set(REASONS)

GAP_COLUMNS = ["topic", "questions", "abstained", "nothing_found", "unconfirmed", "rated_down", "first", "last",
               "knowledge_bases", "examples"]
# Withheld with no passage found: the documents may lack the topic. Every other abstention showed
# the closest passages, which may hold the answer unconfirmed (an offline reader that does not
# read the language, a line not reached): that is no reason to upload the topic again.
NOTHING_FOUND = frozenset({"retrieval"})
MIN_JUDGED = 10  # below this many rated answers the 95% interval of precision@5 spans over 50 points


def unanswered(df: pd.DataFrame) -> pd.DataFrame:
    """Questions the system abstained on, or whose answer was rated down."""
    if df.empty:
        return df
    return df[df["abstained"] | (df["rating"] == -1)]


def _cluster(vecs: np.ndarray, sim: float) -> list[int]:
    groups: list[int] = []
    sums: list[np.ndarray] = []
    for v in vecs:
        best, best_s = -1, sim
        for g, s in enumerate(sums):
            c = float(v @ s) / max(float(np.linalg.norm(s)), 1e-12)
            if c >= best_s:
                best, best_s = g, c
        if best < 0:
            sums.append(v.astype(np.float64).copy())
            best = len(sums) - 1
        else:
            sums[best] += v
        groups.append(best)
    return groups


def _labels(texts: list[str], groups: list[int], n_terms: int = 3) -> dict[int, str]:
    # surface words, not the index's stems: a label reads "leave", not "leav"
    docs = [{t for t in _WORD.findall(x.lower()) if t not in STOPWORDS and t not in _QUESTION_WORDS and len(t) > 2}
            for x in texts]
    df = Counter(t for d in docs for t in d)
    n = len(docs)
    by_group: dict[int, Counter] = {}
    for g, d in zip(groups, docs):
        by_group.setdefault(g, Counter()).update(d)
    out = {}
    for g, tf in by_group.items():
        ranked = sorted(tf, key=lambda t: (-tf[t] * math.log(1 + n / df[t]), t))
        out[g] = ", ".join(ranked[:n_terms]) or "(no key terms)"
    return out


def gap_topics(df: pd.DataFrame, embed, sim: float = SIM) -> pd.DataFrame:
    """One row per topic of unanswered questions, most asked first. `embed`: texts → unit
    vectors (an (n, d) array)."""
    rows = unanswered(df).sort_values("ts") if not df.empty else df
    if rows.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    texts = rows["question"].astype(str).tolist()
    vecs = np.asarray(embed(texts), dtype=np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    groups = _cluster(vecs, sim)
    labels = _labels(texts, groups)
    rows = rows.assign(group=groups)
    out = []
    for g, part in rows.groupby("group"):
        out.append({
            "topic": labels[g],
            "questions": len(part),
            "abstained": int(part["abstained"].sum()),
            "nothing_found": int((part["abstained"] & part["decided_by"].isin(NOTHING_FOUND)).sum()),
            "unconfirmed": int((part["abstained"] & ~part["decided_by"].isin(NOTHING_FOUND)).sum()),
            "rated_down": int((part["rating"] == -1).sum()),
            "first": part["time"].min(),
            "last": part["time"].max(),
            "knowledge_bases": ", ".join(sorted({k for ks in part["kb_list"] for k in ks})),
            # the three most recent distinct wordings
            "examples": " | ".join(list(dict.fromkeys(reversed(part["question"].tolist())))[:3]),
        })
    return pd.DataFrame(out, columns=GAP_COLUMNS).sort_values(["questions", "last"], ascending=False,
                                                              ignore_index=True)


def precision_estimate(df: pd.DataFrame) -> dict:
    """Precision of the passages answers cited, estimated from feedback: a thumbs up judges an
    answer's cited passages relevant, a thumbs down for "wrong source" / "not in my documents"
    judges them not relevant; other thumbs down say nothing about passages and are left out.
    An answer cites at most a handful of passages (≤ 5 with the default top_k), so this is the
    feedback-judged precision at 5. With a 95% Wilson interval: a handful of ratings is noise."""
    if df.empty:
        return {"judged_answers": 0, "precision_at_5": None, "low": None, "high": None}
    up = df["rating"] == 1
    down = (df["rating"] == -1) & df["reason"].isin(PASSAGE_REASONS)
    judged = df[(up | down) & ~df["abstained"]]
    n = len(judged)
    if n < MIN_JUDGED:  # one thumbs up read "precision@5 100%" (issue 50)
        return {"judged_answers": n, "precision_at_5": None, "low": None, "high": None}
    p = float((judged["rating"] == 1).mean())
    z = 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return {"judged_answers": n, "precision_at_5": round(p, 4), "low": round(max(0.0, centre - half), 4),
            "high": round(min(1.0, centre + half), 4)}


FOLLOW_UP_COLUMNS = ["time", "why", "question", "kb", "comment", "query_id"]


def follow_ups(df: pd.DataFrame, topics: pd.DataFrame | None = None, repeat: int = 3) -> pd.DataFrame:
    """Answers that need a person: thumbs down with a comment (the user explained), and the
    topics abstained on at least `repeat` times (the knowledge base keeps failing there)."""
    out = []
    if not df.empty:
        commented = df[(df["rating"] == -1) & (df["comment"].fillna("").str.strip() != "")]
        for r in commented.itertuples():
            out.append({"time": r.time, "why": f"rated down: {r.reason or 'no reason given'}", "question": r.question,
                        "kb": r.kb, "comment": r.comment, "query_id": r.query_id})
    if topics is not None:
        for t in topics[topics["abstained"] >= repeat].itertuples():
            out.append({"time": t.last, "why": f"abstained {t.abstained}× on one topic: {t.topic}",
                        "question": t.examples, "kb": t.knowledge_bases, "comment": "", "query_id": ""})
    return pd.DataFrame(out, columns=FOLLOW_UP_COLUMNS).sort_values("time", ascending=False, ignore_index=True)
