"""Calibrate the shipped int8 reader on held-out train-side pairs; write model/reader.json.

    python training/reader/calibrate.py --pairs training/out/pairs      # runtime env, ~1 min

Per task, Platt scaling (p = σ(a·logit + b)) fitted on calib.jsonl (SQuAD v2.0 train articles
17–19, never trained on) with the *int8 file that ships* (so quantisation is calibrated too).
Also records the file's sha256 (checked at every load), size, load time and pairs/s.
The ``relevant`` task has no held-out pairs here; its raw logit is used only inside the
reranker's fitted combination, so it keeps the identity calibration.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from rag_core.reader import META_FILE, MODEL_FILE, Reader, file_sha256  # noqa: E402


def platt(logits: np.ndarray, y: np.ndarray, iters: int = 100) -> tuple[float, float]:
    """Logistic regression of y on the logit (Newton steps, Platt's smoothed targets). Each step
    is halved until the log-loss falls: a full Newton step from (1, 0) overshoots when the
    logits are large and weakly separating, and once ran off to a = 2e8 on the shipped reader's
    multi-domain rows."""
    n1, n0 = y.sum(), len(y) - y.sum()
    t = np.where(y == 1, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))

    def loss(a: float, b: float) -> float:
        z = a * logits + b
        return float((np.logaddexp(0, z) - t * z).sum())

    a, b = 1.0, 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(a * logits + b)))
        g = np.array([((p - t) * logits).sum(), (p - t).sum()])
        w = p * (1 - p) + 1e-9
        h = np.array([[(w * logits * logits).sum(), (w * logits).sum()], [(w * logits).sum(), w.sum()]])
        step = np.linalg.solve(h + 1e-6 * np.eye(2), g)
        now, scale = loss(a, b), 1.0
        while scale > 1e-6 and loss(a - scale * step[0], b - scale * step[1]) > now:
            scale /= 2
        a, b = a - scale * step[0], b - scale * step[1]
        if np.abs(scale * step).max() < 1e-8:
            break
    return float(a), float(b)


def auc(pos, neg) -> float:
    pos, neg = np.asarray(pos), np.asarray(neg)
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def domain_rows(docs_file: str | None, per_domain: int = 400, seed: int = 0, scifact_heldout: float = 0.0) -> list[dict]:
    """`answers` pairs for calibration from several domains, train side only, the same number
    from each (so no one domain sets the scale): SQuAD v2.0 dev articles 17–19 (held out of the
    reader's training), SciFact *train* claims (the shipped reader's answers task never saw them;
    for a model trained on mix_data.py --scifact-heldout S, pass the same S and only the claims it
    kept out are used), and held-out documentation pairs when given. The smallest domain sets
    the count: with a held-out science share of 0.2 that is 84 questions per domain. Each question gives its evidence sentence (1) and its most
    word-sharing non-answer (0), read with and without the passage title as the app and
    `verify` read them."""
    import random

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import domain_pairs
    from make_data import assert_not_evaluation

    from mix_data import heldout

    science = domain_pairs.scifact("claims_train.csv")
    if scifact_heldout:  # a model trained on mix_data.py --scifact-heldout saw the other claims as `answers` rows
        science = [it for it in science if heldout(it["q"], scifact_heldout)]
    domains = {"squad-calib": domain_pairs.squad(range(17, 20)), "scifact-train": science}
    if docs_file:
        assert_not_evaluation(docs_file)
        domains["docs-heldout"] = domain_pairs.docs(Path(docs_file))
    rng = random.Random(seed)
    n = min(per_domain, *(len(v) for v in domains.values()))
    rows = []
    for kind, pairs in domains.items():
        for it in rng.sample(pairs, n):
            for title in (it["title"], ""):
                rows.append({"task": "answers", "a": it["q"], "b": f"{title} | {it['evidence']}", "label": 1, "kind": kind})
                rows.append({"task": "answers", "a": it["q"], "b": f"{title} | {it['topical']}", "label": 0, "kind": kind})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--train-report", default=None, help="training run folder (its log is summarised in the card)")
    ap.add_argument("--domains", action="store_true",
                    help="fit `answers` on evidence-vs-topical pairs of several domains (train side) instead of "
                         "calib.jsonl's SQuAD-only pairs")
    ap.add_argument("--answers-context", action="store_true",
                    help="the model was trained to read answer candidates with their neighbours (make_data.py "
                         "--context-share): recorded in reader.json, so the app reads that way")
    ap.add_argument("--scifact-heldout", type=float, default=0.0,
                    help="with --domains: only the SciFact train claims mix_data.py --scifact-heldout kept out of training")
    ap.add_argument("--docs", default=None, help="held-out documentation pairs from mine_docs.py (adds that domain)")
    args = ap.parse_args()
    rows = [json.loads(x) for x in (Path(args.pairs) / "calib.jsonl").open()]
    sha = file_sha256(MODEL_FILE)
    meta = {"sha256": sha, "calibration": {}, "answers_context": args.answers_context}
    META_FILE.write_text(json.dumps(meta))
    t = time.perf_counter()
    reader = Reader()
    load_s = time.perf_counter() - t
    report = {"file": MODEL_FILE.name, "mb": round(MODEL_FILE.stat().st_size / 1e6, 2), "sha256": sha,
              "load_s": round(load_s, 3), "calibration": {}, "calib_auc": {}}
    for task in ("answers", "supports"):
        sel = [r for r in rows if r["task"] == task]
        if task == "answers" and args.domains:
            sel = domain_rows(args.docs, scifact_heldout=args.scifact_heldout)
            report["calibration_domains"] = sorted({r["kind"] for r in sel})
        t = time.perf_counter()
        lg = reader.logits(task, [r["a"] for r in sel], [r["b"] for r in sel])
        secs = time.perf_counter() - t
        y = np.array([r["label"] for r in sel], dtype=float)
        a, b = platt(lg, y)
        meta["calibration"][task] = {"a": round(a, 6), "b": round(b, 6)}
        p = 1 / (1 + np.exp(-(a * lg + b)))
        bins = np.clip((p * 10).astype(int), 0, 9)
        rel = [{"bin": f"{k / 10:.1f}-{(k + 1) / 10:.1f}", "n": int((bins == k).sum()),
                "mean_p": round(float(p[bins == k].mean()), 3), "observed": round(float(y[bins == k].mean()), 3)}
               for k in range(10) if (bins == k).any()]
        report["calibration"][task] = {"a": round(a, 4), "b": round(b, 4), "pairs": len(sel),
                                       "pairs_per_s": round(len(sel) / secs, 1), "reliability": rel,
                                       "brier": round(float(((p - y) ** 2).mean()), 4)}
        kinds = sorted({r["kind"] for r in sel if r["label"] == 0})
        pos = lg[y == 1]
        report["calib_auc"][task] = round(auc(pos, lg[y == 0]), 4)
        for k in kinds:
            report["calib_auc"][f"{task}/{k}"] = round(auc(pos, lg[[i for i, r in enumerate(sel) if r["kind"] == k]]), 4)
    META_FILE.write_text(json.dumps(meta, indent=1) + "\n")
    out = ROOT / "rag_core" / "reader" / "model" / "calibration_report.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
