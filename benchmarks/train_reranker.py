"""Fit the offline reranker's logistic weights, and pick the default alpha, on SciFact TRAIN
claims (809 claims with cited documents; disjoint from the 300 test queries used by
`eval beir`), so the reported test numbers are not tuned on the test set.

Needs a data folder in which the SciFact corpus is indexed (benchmarks/ingest_throughput.py
or one `eval beir` run makes it):

    python benchmarks/train_reranker.py --data-dir /tmp/gw-eval [--write]

Prints nDCG@10 on the training claims per alpha (no rerank) and with the fitted reranker,
and with --write stores the weights in rag_core/retrieval/reranker_weights.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import doc_ranking, evaluate_run  # noqa: E402
from rag_core.retrieval.rerank import FEATURES, WEIGHTS_FILE, FeatureReranker  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402
from rag_core.access import Caller

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
KB = "beir-beir-scifact"
DEPTH = 30


def train_claims() -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    claims, qrels = {}, {}
    with (SHARED / "beir-scifact" / "scifact-original-claims" / "claims_train.csv").open() as fh:
        for row in csv.DictReader(fh):
            cited = re.findall(r"\d+", row["cited_doc_ids"] or "")  # a numpy-style list: "[ 123 456]"
            if not cited:
                continue
            claims[row["id"]] = row["claim"]
            qrels.setdefault(row["id"], {}).update({str(d): 1 for d in cited})
    return claims, qrels


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50) -> np.ndarray:
    """Newton's method (IRLS) with an L2 penalty on all weights but the bias."""
    w = np.zeros(x.shape[1])
    reg = np.full(x.shape[1], l2)
    reg[0] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + reg * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--skip-alpha", action="store_true", help="skip the alpha sweep")
    args = ap.parse_args()
    ws = Workspace(get_settings(args.data_dir))
    kb = ws.get_kb(KB, caller=Caller.operator())
    claims, qrels = train_claims()
    print(json.dumps({"train_claims": len(claims)}))

    for alpha in () if args.skip_alpha else (0.3, 0.4, 0.5, 0.6, 0.7):
        run = {q: doc_ranking(ws.search([kb.kb_id], t, k=100, alpha=alpha, rerank=False, caller=Caller.operator()).results, 100)
               for q, t in claims.items()}
        m = evaluate_run(run, qrels)
        print(json.dumps({"alpha": alpha, "rerank": False, **{k: round(v, 4) for k, v in m.items()}}), flush=True)

    alpha = kb.retrieval.alpha
    feat = FeatureReranker(idf=ws.store.idf)
    xs, ys, cands_by_q = [], [], {}
    for q, text in claims.items():
        cands = ws.search([kb.kb_id], text, k=DEPTH, alpha=alpha, rerank=False, caller=Caller.operator()).results
        cands_by_q[q] = cands
        if not cands:
            continue
        xs.append(feat.features(text, cands))
        ys.append([1.0 if c.chunk.doc_id in qrels[q] else 0.0 for c in cands])
    # Pairwise (RankNet-style) fit for the ranking direction: for every relevant/irrelevant
    # pair of one claim's candidates, the feature difference should predict which is which.
    diffs = []
    for xq, yq in zip(xs, ys):
        yq = np.asarray(yq)
        pos, neg = xq[yq == 1], xq[yq == 0]
        for p_row in pos:
            diffs.append(p_row[None, :] - neg)
    d = np.vstack(diffs)[:, 1:]  # the bias cancels in a difference
    dx = np.vstack([d, -d])
    dy = np.concatenate([np.ones(len(d)), np.zeros(len(d))])
    dx1 = np.hstack([np.zeros((len(dx), 1)), dx])  # fit_logistic's first column is the unpenalised bias
    w_rank = fit_logistic(dx1, dy)[1:]
    # Platt scaling: map the ranking score to P(relevant) on the same candidates.
    x, y = np.vstack(xs), np.concatenate(ys)
    score = x[:, 1:] @ w_rank
    a_b = fit_logistic(np.column_stack([np.ones(len(score)), score]), y, l2=0.0)
    w = np.concatenate([[a_b[0]], a_b[1] * w_rank])
    weights = {f: round(float(v), 4) for f, v in zip(FEATURES, w)}
    print(json.dumps({"fitted": weights, "rows": int(len(y)), "positives": int(y.sum()), "pairs": int(len(d))}))

    reranker = FeatureReranker(idf=ws.store.idf, weights=weights)
    run = {q: doc_ranking(reranker.rerank(claims[q], list(c)), 100) for q, c in cands_by_q.items()}
    m = evaluate_run(run, qrels)
    print(json.dumps({"alpha": alpha, "rerank": "fitted", "depth": DEPTH, **{k: round(v, 4) for k, v in m.items()}}))
    if args.write:
        WEIGHTS_FILE.write_text(json.dumps({
            "weights": weights,
            "fitted_on": "SciFact train claims (claims_train.csv, cited docs as relevant), hybrid top-30 candidates",
            "command": "python benchmarks/train_reranker.py --data-dir DIR --write",
            "alpha": alpha,
        }, indent=2) + "\n")
        print(f"wrote {WEIGHTS_FILE}")


if __name__ == "__main__":
    main()
