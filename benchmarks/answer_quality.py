"""Answer quality on SQuAD 2.0 dev (../shared/data/squad-dev, split in SPLIT.md), and the verifier.

    python benchmarks/answer_quality.py --data-dir /work/gw/squad --split calib --choose   # pick the threshold
    python benchmarks/answer_quality.py --data-dir /work/gw/squad --split test --n 300     # report
    OPENAI_BASE_URL=... RAG_LLM_MODEL=... python benchmarks/answer_quality.py ...          # LLM mode

1. Answers: all 1,204 paragraphs of the v2.0 dev set are one knowledge base (JSONL records,
   doc_id = "<article>-<paragraph>"); questions come from one side of the split only:
   - `calib`: v2.0 articles 17–19 (train side, held out of the reader's training): every
     question. The abstention threshold is chosen here (--choose prints it).
   - `test`: the 15 test articles (20–34), N answerable + N unanswerable (seed 0). Report only.
   Answerable: correct when the answer contains a gold answer (SQuAD normalisation) AND
   cites the gold paragraph. Unanswerable: correct when the system abstains. The run uses
   threshold 0 and records each question's evidence (best P(answers)), so the whole
   trade-off curve comes from one pass; the row at the configured threshold is the result.
2. Verifier (from v1.1 dev, which holds the same titles; test articles for the report,
   `--split calib` to try a change on the train side first): for each
   question, the right answer vs a hallucinated one (the answer swapped for another span of
   the same kind from the paragraph), checked against the paragraph with `verify`'s logic
   (question given). Two forms: the short answer ("1636") and the answer sentence. AUC =
   share of pairs where the right answer scores higher (ties count half).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import normalize_answer, percentile  # noqa: E402
from rag_core.generation.extractive import load_selection_weights  # noqa: E402
from rag_core.grounding.verify import Verifier, judged_score  # noqa: E402
from rag_core.text.sentences import split_sentences  # noqa: E402
from rag_core.reader import get_reader  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402
from rag_core.access import Caller, search_filters  # noqa: E402

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad-dev"
KB = "squad-v2-dev"
SPLITS = {"calib": range(17, 20), "test": range(20, 35)}
OUT = Path(__file__).resolve().parent / "results"


norm = normalize_answer  # SQuAD's normalisation (rag_core/evaluation.py; calibration scores with it too)


def citation_valid(citation, chunk) -> bool:
    """A citation is valid when the chunk it names exists, belongs to the cited document, and
    holds the cited text: the snippet, whitespace-normalised, is in the chunk's text. An
    extractive snippet is the sentence(s) the answer took from that passage, joined with one
    space (generation/extractive.py), so when two sentences that are not adjacent are taken
    each must be in it; in LLM mode the snippet is the chunk's whole text
    (grounding/citations.py). `chunk` is the stored Chunk for citation.chunk_id, or None."""
    if chunk is None or chunk.chunk_id != citation.chunk_id or chunk.doc_id != citation.doc_id:
        return False
    text = " ".join(chunk.text.split())
    snippet = " ".join((citation.snippet or "").split())
    if not snippet:
        return False
    if snippet in text:
        return True
    parts = [" ".join(p.split()) for p in split_sentences(citation.snippet)]
    return len(parts) > 1 and all(p in text for p in parts)


def build_kb(ws: Workspace, data: dict) -> None:
    kb = next(iter(ws.appdb.find_kbs(KB)), None) or ws.create_kb(KB, description="SQuAD 2.0 dev paragraphs", caller=Caller.operator())
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


def questions(data: dict, split: str, n: int | None, seed: int = 0):
    ans, imp = [], []
    for ai in SPLITS[split]:
        art = data["data"][ai]
        for pi, p in enumerate(art["paragraphs"]):
            for qa in p["qas"]:
                item = (qa["id"], qa["question"], f"{ai}-{pi}", [a["text"] for a in qa["answers"]])
                (imp if qa.get("is_impossible") else ans).append(item)
    if n:
        rng = random.Random(seed)
        ans, imp = rng.sample(ans, min(n, len(ans))), rng.sample(imp, min(n, len(imp)))
    return ans, imp


def curve_row(A, U, t: float) -> dict:
    ok = lambda r: r["evidence"] >= t and not r["abstained"]  # noqa: E731 - an LLM veto also abstains
    return {"threshold": round(t, 3),
            "answerable_correct": round(sum(1 for r in A if ok(r) and r["correct"]) / len(A), 4),
            "answerable_answered": round(sum(1 for r in A if ok(r)) / len(A), 4),
            "unanswerable_abstained": round(sum(1 for r in U if not ok(r)) / len(U), 4)}


def answers(ws: Workspace, split: str, n: int | None, choose: bool) -> None:
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    build_kb(ws, data)
    answerable, impossible = questions(data, split, n)
    configured = ws.settings.answer_threshold
    ws.settings.answer_threshold = 0.0  # decide afterwards, per threshold, from the recorded evidence
    rows, lat = [], []
    invalid = cites = 0
    for label, items in (("answerable", answerable), ("impossible", impossible)):
        for qid, q, gold_doc, golds in items:
            t = time.perf_counter()
            a = ws.ask([KB], q, caller=Caller.operator())
            lat.append((time.perf_counter() - t) * 1000)
            ok_text = any(norm(g) in norm(a.text) for g in golds) if golds else False
            ok_cite = any(c.doc_id == gold_doc for c in a.citations)
            invalid += a.invalid_citations
            for c in a.citations:
                cites += 1
                chunk = ws.store.get_chunks([c.chunk_id])
                if not citation_valid(c, chunk[0] if chunk else None):
                    invalid += 1
            # the passage shown first (the answer's first citation; on an abstention the first
            # closest passage, which is the same passage: both rank by the reader's best sentence)
            first = (a.citations or a.closest or [None])[0]
            first_chunk = ws.store.get_chunks([first.chunk_id]) if first else []
            first_ok = bool(golds and first_chunk and first.doc_id == gold_doc
                            and any(norm(g) in norm(first_chunk[0].text) for g in golds))
            rows.append({"id": qid, "label": label, "evidence": a.evidence_score, "abstained": a.abstained,
                         "first_ok": first_ok, "decided_by": getattr(a, "decided_by", ""),
                         "correct": ok_text and ok_cite, "text_ok": ok_text, "cite_ok": ok_cite,
                         "grounding": a.grounding_score, "answers_question": a.answers_question,
                         "confidence": a.confidence, "ms": lat[-1]})
    A = [r for r in rows if r["label"] == "answerable"]
    U = [r for r in rows if r["label"] == "impossible"]
    head = {"split": split, "mode": ws.answers.mode, "answerable": len(A), "unanswerable": len(U),
            "citations": cites, "invalid_citations": invalid,
            "latency_ms_p50": round(percentile(lat, 50), 1), "latency_ms_p95": round(percentile(lat, 95), 1),
            "answerable_correct_if_never_abstaining": round(sum(r["correct"] for r in A) / len(A), 4),
            "gold_paragraph_cited": round(sum(r["cite_ok"] for r in A) / len(A), 4),
            "answering_passage_first": round(sum(r["first_ok"] for r in A) / len(A), 4),
            # of the answers shown at the configured threshold, those reading Supported 100%
            "supported_100_of_answered": round(
                sum(r["grounding"] == 1.0 for r in rows if not r["abstained"] and r["evidence"] >= configured)
                / max(1, sum(1 for r in rows if not r["abstained"] and r["evidence"] >= configured)), 4),
            "decided_by_at_threshold_0": {k: sum(r["decided_by"] == k for r in rows) for k in {r["decided_by"] for r in rows}}}
    print(json.dumps(head))
    grid = [round(x, 3) for x in np.arange(0.0, 1.0001, 0.05)]
    curve = [curve_row(A, U, t) for t in grid]
    for c in curve:
        print(json.dumps(c))
    at = curve_row(A, U, configured)
    print(json.dumps({"at_configured_threshold": at}))
    # confidence separates right answers from wrong ones? (answered, at the configured threshold)
    right = [r["confidence"] for r in A if r["correct"] and r["evidence"] >= configured]
    wrong = [r["confidence"] for r in A + U if not r["correct"] and r["evidence"] >= configured]
    if right and wrong:
        print(json.dumps({"mean_confidence_right": round(float(np.mean(right)), 3),
                          "mean_confidence_wrong_or_unanswerable": round(float(np.mean(wrong)), 3)}))
    OUT.mkdir(exist_ok=True)
    with (OUT / f"answer_quality_squad_{split}.jsonl").open("w") as fh:
        for rec in [head, *curve, {"at_configured_threshold": at}]:
            fh.write(json.dumps(rec) + "\n")
    if choose:
        # The product's rule: answer whenever we can. Among thresholds that keep at least 90%
        # of the answerable questions answered correctly that would be without abstaining,
        # the one that abstains on most unanswerable ones. (Maximising the sum of the two
        # rates is printed too: it abstains far more.)
        fine = [curve_row(A, U, t) for t in np.arange(0.0, 1.0, 0.01)]
        floor = 0.9 * fine[0]["answerable_correct"]
        best = max((c for c in fine if c["answerable_correct"] >= floor), key=lambda c: (c["unanswerable_abstained"], -c["threshold"]))
        balanced = max(fine, key=lambda c: (c["answerable_correct"] + c["unanswerable_abstained"], -c["threshold"]))
        print(json.dumps({"chosen_threshold": best, "max_sum_threshold": balanced}))
        # The same rule for a gate on two numbers (issue 25): answer only when the evidence
        # reaches t_e AND the verifier's "answers the question" of the composed answer reaches
        # t_a (the LLM path's rule, here for extractive answers too).
        def gate_row(te: float, ta: float) -> dict:
            ok = lambda r: r["evidence"] >= te and r["answers_question"] >= ta and not r["abstained"]  # noqa: E731
            return {"evidence_threshold": round(float(te), 2), "answers_question_threshold": round(float(ta), 2),
                    "answerable_correct": round(sum(1 for r in A if ok(r) and r["correct"]) / len(A), 4),
                    "unanswerable_abstained": round(sum(1 for r in U if not ok(r)) / len(U), 4)}
        grid2 = [gate_row(te, ta) for te in np.arange(0.0, 0.5, 0.01) for ta in np.arange(0.0, 0.5, 0.01)]
        best2 = max((c for c in grid2 if c["answerable_correct"] >= floor),
                    key=lambda c: (c["unanswerable_abstained"], -c["evidence_threshold"], -c["answers_question_threshold"]))
        print(json.dumps({"chosen_gate": best2}))


def fit_selection(ws: Workspace, split: str) -> None:
    """Fit the sentence-selection weights (rag_core/generation/extractive.py) on one split's
    questions: every candidate sentence the answer step reads is a row, labelled 1 when the
    question is answerable, the sentence holds a gold answer and its passage is the gold
    paragraph. Only ever run on the train side (`--split calib`)."""
    from benchmarks.train_reranker import fit_logistic
    from rag_core.generation.extractive import SELECTION_FEATURES, SELECTION_FILE

    assert split != "test", "never fit on the test articles"
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    build_kb(ws, data)
    answerable, impossible = questions(data, split, None)
    kb = ws.get_kb(KB, caller=Caller.operator())
    filters = search_filters(Caller.operator(), [kb])
    reader_only = ws.answers.extractive
    xs, ys = [], []
    for label, items in (("answerable", answerable), ("impossible", impossible)):
        for _, q, gold_doc, golds in items:
            sources = ws.retrieval.run(q, filters, kb.retrieval).results
            ev = reader_only.read(q, sources)
            for (si, _, sent), row in zip(ev.cands, ev.features):
                ok = bool(golds) and sources[si].chunk.doc_id == gold_doc and any(norm(g) in norm(sent) for g in golds)
                xs.append(row)
                ys.append(1.0 if ok else 0.0)
    x, y = np.array(xs), np.array(ys)
    w = fit_logistic(x, y, l2=1.0)
    weights = {f: round(float(v), 4) for f, v in zip(SELECTION_FEATURES, w)}
    SELECTION_FILE.write_text(json.dumps({
        "weights": weights, "rows": int(len(y)), "positives": int(y.sum()),
        "fitted_on": f"SQuAD v2.0 dev articles {SPLITS[split].start}-{SPLITS[split].stop - 1} (train side, held out of the reader's training): every candidate sentence read for every question",
        "command": f"python benchmarks/answer_quality.py --data-dir DIR --split {split} --fit-selection",
    }, indent=2) + "\n")
    print(json.dumps({"fitted_selection": weights, "rows": int(len(y)), "positives": int(y.sum())}))


def verifier_pairs(data: dict, titles: set[str], max_q: int = 3):
    out = []
    for art in data["data"]:
        if art["title"] not in titles:
            continue
        for p in art["paragraphs"]:
            ctx = p["context"]
            sents = [" ".join(s.split()) for s in split_sentences(ctx)]
            answers_here = list(dict.fromkeys(a["text"] for qa in p["qas"] for a in qa["answers"]))
            for qa in p["qas"][:max_q]:
                gold = qa["answers"][0]["text"]
                sent = next((s for s in sents if gold in s), None)
                kind = "num" if re.search(r"\d", gold) else "ent" if gold[:1].isupper() else "other"
                same = [x for x in answers_here if ("num" if re.search(r"\d", x) else "ent" if x[:1].isupper() else "other") == kind]
                others = [x for x in same if x != gold and gold not in x and x not in gold and (not sent or x not in sent)]
                if not sent or not others:
                    continue
                swap = others[sum(map(ord, qa["id"])) % len(others)]
                out.append({"q": qa["question"], "src": ctx, "form": "short", "right": gold, "wrong": swap})
                out.append({"q": qa["question"], "src": ctx, "form": "sentence", "right": sent,
                            "wrong": sent.replace(gold, swap, 1)})
    return out


def verifier(split: str = "test", max_pairs: int = 1200) -> None:
    data = json.loads((SQUAD / "dev-1.1-reconstructed.json").read_text())
    v2 = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    titles = {v2["data"][i]["title"] for i in SPLITS[split]}
    # the calib articles are few: every question there, at most 3 per paragraph on test
    pairs = verifier_pairs(data, titles, max_q=3 if split == "test" else 99)
    random.Random(2).shuffle(pairs)
    pairs = pairs[:max_pairs]
    v = Verifier(reader=get_reader())
    t = time.perf_counter()
    res = {"short": [], "sentence": []}
    res_noq = {"short": [], "sentence": []}
    for p in pairs:
        sc = []
        for ans in (p["right"], p["wrong"]):
            claims, _ = v.verify(ans + " [1]", [p["src"]], question=p["q"])
            sc.append(judged_score(claims))
        res[p["form"]].append(1.0 if sc[0] > sc[1] else 0.5 if sc[0] == sc[1] else 0.0)
        if p["form"] == "sentence":  # without the question: support alone
            sn = [judged_score(v.verify(ans + " [1]", [p["src"]])[0]) for ans in (p["right"], p["wrong"])]
            res_noq["sentence"].append(1.0 if sn[0] > sn[1] else 0.5 if sn[0] == sn[1] else 0.0)
    secs = time.perf_counter() - t
    allv = res["short"] + res["sentence"]
    rec = {"verifier_pairs": len(allv), "right_scores_higher": round(float(np.mean(allv)), 4),
           "short_answer_form": round(float(np.mean(res["short"])), 4),
           "sentence_form": round(float(np.mean(res["sentence"])), 4),
           "sentence_form_without_question": round(float(np.mean(res_noq["sentence"])), 4),
           "split": split, "seconds": round(secs, 1)}
    print(json.dumps(rec))
    if split == "test":
        OUT.mkdir(exist_ok=True)
        (OUT / "verifier_squad_test.json").write_text(json.dumps(rec) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--split", choices=sorted(SPLITS), default="test")
    ap.add_argument("--n", type=int, default=0, help="answerable and unanswerable questions each (0 = all)")
    ap.add_argument("--choose", action="store_true", help="print the threshold that maximises the two rates")
    ap.add_argument("--fit-selection", action="store_true", help="fit the sentence-selection weights first (calib only)")
    ap.add_argument("--skip-answers", action="store_true")
    ap.add_argument("--skip-verifier", action="store_true")
    args = ap.parse_args()
    if not args.skip_verifier:
        verifier(args.split)
    ws = Workspace(get_settings(args.data_dir))
    if args.fit_selection:
        fit_selection(ws, args.split)
        ws.answers.extractive.weights = load_selection_weights()  # the file just written
    if not args.skip_answers:
        answers(ws, args.split, args.n or None, args.choose)


if __name__ == "__main__":
    main()
