"""Answer quality on SQuAD 2.0 dev (../shared/data/squad-dev), and the verifier.

1. Answers: the 1,204 paragraphs of the v2.0 dev set are one knowledge base (JSONL records,
   doc_id = "<article>-<paragraph>"); N answerable + N unanswerable questions (fixed seed).
   Answerable: correct when the answer contains a gold answer (SQuAD normalisation) AND cites
   the gold paragraph. Unanswerable: correct when the system abstains. Citation validity:
   every citation points to a retrieved passage and quotes it. Latency p50/p95.
   The run uses threshold 0 and records each question's best-passage score, so the curve of
   answered-vs-abstained over the threshold comes from one pass.
2. Verifier: from SQuAD v1.1 dev, the sentence holding the gold answer (supported) vs the
   same sentence with the answer swapped for another answer of the same paragraph
   (unsupported). Fits the verifier's weights on the first half of the articles (--fit
   writes them), reports separation (AUC, accuracy at the label threshold) on the second.

    python benchmarks/answer_quality.py --data-dir /tmp/gw-squad [--n 500] [--fit]
    OPENAI_BASE_URL=... RAG_LLM_MODEL=... python benchmarks/answer_quality.py ...   # LLM mode
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import percentile  # noqa: E402
from rag_core.grounding.verify import PARTIAL, SUPPORTED, VERIFIER_FEATURES, WEIGHTS_FILE, Verifier  # noqa: E402
from rag_core.ingest.chunker import split_sentences  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad-dev"
KB = "squad-v2-dev"


def norm(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def build_kb(ws: Workspace, data: dict) -> None:
    kb = ws.appdb.find_kb(KB) or ws.create_kb(KB, description="SQuAD 2.0 dev paragraphs")
    if ws.appdb.counts(kb.kb_id)[0]:
        return
    path = Path(ws.settings.data_dir) / "squad-v2-paragraphs.jsonl"
    with path.open("w") as fh:
        for ai, art in enumerate(data["data"]):
            for pi, p in enumerate(art["paragraphs"]):
                fh.write(json.dumps({"_id": f"{ai}-{pi}", "title": art["title"].replace("_", " "), "text": p["context"]}) + "\n")
    t = time.perf_counter()
    stats = ws.ingestor.ingest(kb, [path])
    print(json.dumps({"indexed_paragraphs": stats.documents, "chunks": stats.chunks, "seconds": round(time.perf_counter() - t, 1)}))


def sample_questions(data: dict, n: int, seed: int = 0):
    ans, imp = [], []
    for ai, art in enumerate(data["data"]):
        for pi, p in enumerate(art["paragraphs"]):
            for qa in p["qas"]:
                item = (qa["id"], qa["question"], f"{ai}-{pi}", [a["text"] for a in qa["answers"]])
                (imp if qa.get("is_impossible") else ans).append(item)
    rng = random.Random(seed)
    return rng.sample(ans, n), rng.sample(imp, n)


def answers(ws: Workspace, n: int) -> None:
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    build_kb(ws, data)
    answerable, impossible = sample_questions(data, n)
    # decide afterwards, per threshold pair, from the recorded scores
    ws.settings.answer_threshold = 0.0
    ws.settings.evidence_threshold = 0.0
    rows = []
    lat = []
    invalid = 0
    cites = 0
    for label, items in (("answerable", answerable), ("impossible", impossible)):
        for qid, q, gold_doc, golds in items:
            t = time.perf_counter()
            a = ws.ask([KB], q)
            lat.append((time.perf_counter() - t) * 1000)
            ok_text = any(norm(g) in norm(a.text) for g in golds) if golds else False
            ok_cite = any(c.doc_id == gold_doc for c in a.citations)
            invalid += a.invalid_citations
            for c in a.citations:
                cites += 1
                chunk = ws.store.get_chunks([c.chunk_id])
                if not chunk or c.snippet.split()[0] not in chunk[0].text:
                    invalid += 1
            rows.append({"label": label, "score": a.retrieval_score, "evidence": a.evidence_score, "abstained": a.abstained,
                         "correct": ok_text and ok_cite, "text_ok": ok_text, "cite_ok": ok_cite,
                         "grounding": a.grounding_score})
    print(json.dumps({"questions": len(rows), "citations": cites, "invalid_citations": invalid,
                      "latency_ms_p50": round(percentile(lat, 50), 1), "latency_ms_p95": round(percentile(lat, 95), 1)}))
    A = [r for r in rows if r["label"] == "answerable"]
    U = [r for r in rows if r["label"] == "impossible"]
    print(json.dumps({"answerable_correct_if_never_abstaining": round(sum(r["correct"] for r in A) / len(A), 4),
                      "answer_text_ok": round(sum(r["text_ok"] for r in A) / len(A), 4),
                      "gold_paragraph_cited": round(sum(r["cite_ok"] for r in A) / len(A), 4)}))
    def curve(t_pass: float, t_ev: float) -> dict:
        ok = lambda r: r["score"] >= t_pass and r["evidence"] >= t_ev  # noqa: E731
        return {"answer_threshold": t_pass, "evidence_threshold": t_ev,
                "answerable_correct": round(sum(1 for r in A if ok(r) and r["correct"]) / len(A), 4),
                "answerable_answered": round(sum(1 for r in A if ok(r)) / len(A), 4),
                "unanswerable_abstained": round(sum(1 for r in U if not ok(r)) / len(U), 4)}

    for t in [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]:
        print(json.dumps(curve(t, 0.0)))
    for te in [0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75]:
        print(json.dumps(curve(0.02, te)))
    fields = type(ws.settings).model_fields
    print(json.dumps({"defaults": curve(fields["answer_threshold"].default, fields["evidence_threshold"].default)}))


def verifier_pairs(data: dict, articles: range):
    """(claim, source, label, kind). Two kinds, each as a supported/swapped pair:
    "sentence" — the paragraph's sentence holding the gold answer, verbatim (what an
    extractive answer says) vs the same sentence with the answer swapped for another answer
    of the paragraph; "statement" — the question turned into a statement with the answer
    ("In what country is Normandy located: France."), worded unlike the source as an LLM's
    answer would be, vs the same statement with the swapped answer."""
    pairs = []
    for art in [data["data"][i] for i in articles]:
        for p in art["paragraphs"]:
            ctx = p["context"]
            answers_here = list(dict.fromkeys(a["text"] for qa in p["qas"] for a in qa["answers"]))
            sents = split_sentences(ctx)
            for qa in p["qas"][:3]:
                gold = qa["answers"][0]["text"]
                sent = next((s for s in sents if gold in s), None)
                others = [x for x in answers_here if x != gold and x not in sent and gold not in x] if sent else []
                if not sent or not others:
                    continue
                swap = others[sum(map(ord, qa["id"])) % len(others)]
                pairs.append((sent, ctx, 1, "sentence"))
                pairs.append((sent.replace(gold, swap, 1), ctx, 0, "sentence"))
                stem = qa["question"].strip().rstrip("?").strip()
                pairs.append((f"{stem}: {gold}.", ctx, 1, "statement"))
                pairs.append((f"{stem}: {swap}.", ctx, 0, "statement"))
    # "unrelated": a true sentence about something else (another pair's claim, shifted by
    # one article) checked against this source — the plain hallucination case.
    step = max(1, len(pairs) // 7) | 1
    for k in range(0, len(pairs), 4):
        other = pairs[(k + step * 4) % len(pairs)]
        if other[1] != pairs[k][1]:
            pairs.append((other[0], pairs[k][1], 0, "unrelated"))
    return pairs


class CachedEmbed:
    """Each paragraph's sentences recur in many pairs: embed every distinct text once."""

    def __init__(self, embedder):
        self.embedder, self.cache = embedder, {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if new:
            for t, v in zip(new, self.embedder.embed_array(new)):
                self.cache[t] = v
        return np.stack([self.cache[t] for t in texts])


def verifier(ws: Workspace, fit: bool, max_pairs: int = 1200) -> None:
    data = json.loads((SQUAD / "dev-1.1-reconstructed.json").read_text())
    half = len(data["data"]) // 2
    embed = CachedEmbed(ws.embedder)
    v = Verifier(embed=embed)
    if fit:
        from benchmarks.train_reranker import fit_logistic

        train = verifier_pairs(data, range(0, half))
        random.Random(1).shuffle(train)
        train = train[:max_pairs]
        x = []
        for c, s, _, _ in train:
            sents = [" ".join(t.split()) for t in split_sentences(s)] or [s]
            sims = embed(sents) @ embed([c])[0]
            x.append(v.features(c, s, float(sims.max()), sents[int(sims.argmax())]))
        w = fit_logistic(np.array(x), np.array([y for _, _, y, _ in train], dtype=float), l2=1.0)
        weights = {f: round(float(val), 4) for f, val in zip(VERIFIER_FEATURES, w)}
        WEIGHTS_FILE.write_text(json.dumps({"weights": weights, "fitted_on": f"SQuAD v1.1 dev articles 0..{half - 1}: "
                                            "gold answer sentence, and the question+answer as a statement, each vs the answer swapped for another answer of the paragraph; plus unrelated true sentences as negatives",
                                            "command": "python benchmarks/answer_quality.py --data-dir DIR --fit"}, indent=2) + "\n")
        print(json.dumps({"fitted_verifier": weights, "pairs": len(train)}))
        v.weights = weights
    test = verifier_pairs(data, range(half, len(data["data"])))
    random.Random(2).shuffle(test)
    test = test[:max_pairs]
    scores = np.array([v.score_pairs([c], [s])[0, 0] for c, s, _, _ in test])
    labels = np.array([y for _, _, y, _ in test])
    kinds = np.array([k for _, _, _, k in test])
    for kind in ("sentence", "statement", "unrelated", "all"):
        sel = np.ones(len(test), bool) if kind == "all" else kinds == kind
        pos, neg = scores[sel & (labels == 1)], scores[sel & (labels == 0)]
        if kind == "unrelated":  # negatives only: compare with all positives
            pos = scores[labels == 1]
        auc = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
        print(json.dumps({
            "verifier_pairs": int(sel.sum()), "kind": kind, "auc": round(auc, 4),
            "supported_labelled_supported": round(float((pos >= SUPPORTED).mean()), 4),
            "supported_labelled_unsupported": round(float((pos < PARTIAL).mean()), 4),
            "swapped_labelled_unsupported": round(float((neg < PARTIAL).mean()), 4),
            "swapped_labelled_supported": round(float((neg >= SUPPORTED).mean()), 4),
            "accuracy_at_0.5": round(float(((scores[sel] >= 0.5) == (labels[sel] == 1)).mean()), 4),
        }))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--n", type=int, default=500, help="answerable and unanswerable questions each")
    ap.add_argument("--fit", action="store_true", help="fit and write the verifier weights first")
    ap.add_argument("--skip-answers", action="store_true")
    ap.add_argument("--skip-verifier", action="store_true")
    args = ap.parse_args()
    ws = Workspace(get_settings(args.data_dir))
    print(json.dumps({"mode": ws.answers.mode, "n_each": args.n}))
    if not args.skip_verifier:
        verifier(ws, args.fit)
    if not args.skip_answers:
        answers(ws, args.n)


if __name__ == "__main__":
    main()
