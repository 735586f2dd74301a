"""Retrieval evaluation on BEIR-format folders (corpus.jsonl, queries.jsonl, qrels/test.tsv).

Metric definitions follow trec_eval / pytrec_eval (what BEIR reports): nDCG@k with linear
gain (rel) and log2(rank+1) discount, the ideal ranking built from every judged relevant
document; recall@k over documents with rel > 0; MRR@k = 1/rank of the first relevant.
A test checks these against ranx on the same run.
"""

from __future__ import annotations

import csv
import json
import math
import re
import string
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import GroundworkError


_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces.
    An answer is right when a gold answer, so normalised, is inside it."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def ndcg_at_k(ranked: list[str], qrels: dict[str, int], k: int) -> float:
    dcg = sum(qrels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in qrels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: list[str], qrels: dict[str, int], k: int) -> float:
    rel = {d for d, r in qrels.items() if r > 0}
    return len(rel & set(ranked[:k])) / len(rel) if rel else 0.0


def mrr_at_k(ranked: list[str], qrels: dict[str, int], k: int) -> float:
    for i, d in enumerate(ranked[:k]):
        if qrels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def percentile(xs: list[float], p: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


@dataclass
class BeirSet:
    corpus: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(folder: Path, split: str = "test") -> BeirSet:
    corpus = folder / "corpus.jsonl"
    qfile = folder / "queries.jsonl"
    qrels_file = folder / "qrels" / f"{split}.tsv"
    for f in (corpus, qfile, qrels_file):
        if not f.exists():
            raise GroundworkError(f"not a BEIR folder: {f} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open() as fh:
        reader = csv.reader(fh, delimiter="\t")
        for row in reader:
            if not row or row[0] == "query-id":
                continue
            qid, did, score = row[0], row[1], int(row[2])
            qrels.setdefault(qid, {})[did] = score
    queries = {}
    with qfile.open() as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                qid = str(rec.get("_id", rec.get("id")))
                if qid in qrels:
                    queries[qid] = rec["text"]
    return BeirSet(corpus, queries, qrels)


@dataclass
class EvalReport:
    dataset: str
    mode: str
    queries: int
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    latency_ms_p50: float
    latency_ms_p95: float
    extra: dict = field(default_factory=dict)


def evaluate_run(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    qids = [q for q in qrels if q in run]
    n = max(len(qids), 1)
    return {
        "ndcg_at_10": sum(ndcg_at_k(run[q], qrels[q], 10) for q in qids) / n,
        "recall_at_10": sum(recall_at_k(run[q], qrels[q], 10) for q in qids) / n,
        "recall_at_100": sum(recall_at_k(run[q], qrels[q], 100) for q in qids) / n,
        "mrr_at_10": sum(mrr_at_k(run[q], qrels[q], 10) for q in qids) / n,
    }


def doc_ranking(results, k: int) -> list[str]:
    """Chunk results → document ranking: a document ranks where its best chunk ranks."""
    seen: dict[str, None] = {}
    for r in results:
        seen.setdefault(r.chunk.doc_id, None)
        if len(seen) >= k:
            break
    return list(seen)


def run_beir(ws, folder: Path, *, caller, mode: str = "hybrid", kb_name: str | None = None, progress=None,
             **search_kw) -> EvalReport:
    """Index the corpus into its own knowledge base, as `caller` (once: later runs find every
    record already indexed, and the embedding cache spares the model), then time every query."""
    from .errors import NotFound

    data = load_beir(folder)
    kb_name = kb_name or f"beir-{folder.name}"
    try:
        kb = ws.get_kb(kb_name, caller=caller)
    except NotFound:
        kb = ws.create_kb(kb_name, caller=caller, description=f"BEIR corpus {folder}")
    docs, _ = ws.kb_counts(kb.kb_id, caller=caller)
    ingest_stats = None
    if docs == 0:
        ingest_stats = ws.ingest(kb.kb_id, [data.corpus], caller=caller, progress=progress)
    run: dict[str, list[str]] = {}
    lat: list[float] = []
    for qid, text in data.queries.items():
        t = time.perf_counter()
        res = ws.search([kb.kb_id], text, k=200, mode=mode, caller=caller, **search_kw)
        lat.append((time.perf_counter() - t) * 1000)
        run[qid] = doc_ranking(res.results, 100)
    m = evaluate_run(run, data.qrels)
    extra = {"kb": kb.name, "chunks": ws.store.count(kb.kb_id)}
    if ingest_stats:
        extra["ingest_seconds"] = round(ingest_stats.seconds_total, 1)
    return EvalReport(
        dataset=folder.name, mode=mode, queries=len(run), latency_ms_p50=percentile(lat, 50),
        latency_ms_p95=percentile(lat, 95), extra=extra, **m,
    )
