"""Evidence vs topical sentence, and calibration, per domain (issue 25).

For each question we take, from one held-out passage, the sentence that holds the answer
(evidence) and the sentence that shares most words with the question but lacks the answer
(topical). Both are copied verbatim, so both are *supported*; only one *answers the
question*. Each is scored as an answer through the same verifier `python -m rag_core verify`
uses (with the question). Reported per domain:

- evidence_first: share of pairs where the evidence sentence scores higher on answers_question
  (target ≥ 0.80);
- right_confident: share of evidence answers shown with confidence ≥ 0.5 (target ≥ 0.70);
- topical_low: share of topical non-answers with confidence < 0.5 (target ≥ 0.90);
- ece: expected calibration error of answers_question against "this answers" (10 equal-width
  bins; target ≤ 0.08), with the reliability table.

Domains (every one held out of the reader's training):
- wikipedia: SQuAD v2.0 dev test articles 20–34 (SPLIT.md), answerable questions;
- science: SciFact *validation* claims with SUPPORT rationales (training reads claims_train only),
  asked as "Is it true that <claim>?";
- manuals: benchmarks/data/manual_questions_v2.jsonl's answerable questions on their gold pages
  (needs --pdfs, the folder of those manuals; see benchmarks/manual_questions.py).

    python benchmarks/evidence_vs_topical.py [--n 300] [--pdfs /tmp/manuals] [--out benchmarks/results/evidence_vs_topical.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.grounding.verify import Verifier, answers_question, confidence  # noqa: E402
from rag_core.reader import get_reader  # noqa: E402
from rag_core.text.sentences import split_sentences  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training" / "reader"))
import domain_pairs  # noqa: E402

HERE = Path(__file__).resolve().parent


def wikipedia(n: int, rng: random.Random) -> list[dict]:
    pairs = domain_pairs.squad(range(20, 35))  # the test articles (SPLIT.md)
    return rng.sample(pairs, min(n, len(pairs)))


def science(n: int, rng: random.Random) -> list[dict]:
    pairs = domain_pairs.scifact("claims_validation.csv")  # training reads claims_train.csv only
    return rng.sample(pairs, min(n, len(pairs)))


def manuals(pdfs: Path, n: int, rng: random.Random) -> list[dict]:
    from pypdf import PdfReader

    qs = [json.loads(x) for x in (HERE / "data" / "manual_questions_v2.jsonl").open()]
    pages: dict[tuple[str, int], str] = {}
    out = []
    for q in qs:
        if not q["answerable"]:
            continue
        found = list(pdfs.rglob(q["manual"]))
        if not found:
            continue
        for pg in q["pages"]:
            key = (q["manual"], pg)
            if key not in pages:
                pages[key] = " ".join(PdfReader(found[0]).pages[pg - 1].extract_text().split())
        text = " ".join(pages[(q["manual"], pg)] for pg in q["pages"])
        sents = split_sentences(text)
        hit = lambda s: any(e.lower() in s.lower() for e in q["expect"])  # noqa: E731
        ev = [s for s in sents if hit(s)]
        top = domain_pairs.topical_for(q["question"], sents, hit)
        if ev and top:
            out.append({"q": q["question"], "evidence": ev[0], "topical": top, "passage": text})
    return rng.sample(out, min(n, len(out)))


def score(verifier: Verifier, q: str, sentence: str, passage: str) -> tuple[float, float, float]:
    claims, supported = verifier.verify(f"{sentence.rstrip()} [1]", [passage], question=q)
    aq = answers_question(claims)
    return aq, supported, confidence(supported, aq)


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> tuple[float, list[dict]]:
    edges = np.linspace(0, 1, bins + 1)
    table, err = [], 0.0
    for lo, hi in zip(edges, edges[1:]):
        m = (p >= lo) & ((p < hi) if hi < 1 else (p <= hi))
        if m.any():
            err += m.mean() * abs(p[m].mean() - y[m].mean())
            table.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": int(m.sum()), "mean_p": round(float(p[m].mean()), 3),
                          "share_right": round(float(y[m].mean()), 3)})
    return float(err), table


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="pairs per domain (sampled with a fixed seed)")
    ap.add_argument("--pdfs", type=Path, default=None, help="folder with the v2 manuals (adds the manuals domain)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "evidence_vs_topical.json")
    args = ap.parse_args()
    verifier = Verifier(reader=get_reader())
    domains = {"wikipedia": wikipedia(args.n, random.Random(0)), "science": science(args.n, random.Random(0))}
    if args.pdfs:
        domains["manuals"] = manuals(args.pdfs, args.n, random.Random(0))
    report = {}
    for name, pairs in domains.items():
        t0 = time.perf_counter()
        rows = []
        for it in pairs:
            ev = score(verifier, it["q"], it["evidence"], it["passage"])
            tp = score(verifier, it["q"], it["topical"], it["passage"])
            rows.append((ev, tp))
        aq_e = np.array([r[0][0] for r in rows])
        aq_t = np.array([r[1][0] for r in rows])
        conf_e = np.array([r[0][2] for r in rows])
        conf_t = np.array([r[1][2] for r in rows])
        e, table = ece(np.concatenate([aq_e, aq_t]), np.concatenate([np.ones(len(rows)), np.zeros(len(rows))]))
        report[name] = {
            "pairs": len(rows),
            "evidence_first": round(float((aq_e > aq_t).mean()), 4),
            "right_confident": round(float((conf_e >= 0.5).mean()), 4),
            "topical_low": round(float((conf_t < 0.5).mean()), 4),
            "ece_answers_question": round(e, 4),
            "reliability": table,
            "verify_ms_per_answer": round((time.perf_counter() - t0) * 1000 / max(2 * len(rows), 1), 1),
        }
        print(json.dumps({"domain": name, **{k: v for k, v in report[name].items() if k != "reliability"}}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
