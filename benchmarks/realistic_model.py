"""A model that answers in its own words, through the real chain: the realistic-model harness.

The scripted OpenAI-compatible server of benchmarks/oracle_llm.py, in `realistic` mode, on
loopback, answers from data written for the project on train-side documents only
(benchmarks/data/paraphrase_harness/: the answer-policy calibration set's 45 documents and
SQuAD 2.0 v2 articles 0–19):

- an answerable question whose gold passage it is shown: a faithful paraphrase (the key fact
  kept, other words, code in backticks), and for a third of them one extra plausible sentence
  no source states, every sentence citing the gold passage;
- a near-miss question: a confident answer from general knowledge, citing the passage it leans on.

The same questions go to the `perfect` mode (the gold sentence word for word) for the ceiling.
Everything else is the product: `Workspace.ask` over one knowledge base holding all the
harness documents, under the defaults (`auto`, uncalibrated) and under `model`.

    python benchmarks/realistic_model.py --data-dir /tmp/gw-realistic [--half fit|check|all] [--limit N]

Reports per half, mode and policy: answerable correct and cited (a gold answer in the answer
and a citation of the gold document), right answers reading Supported >= 0.5, near-miss answers
withheld or shown with every sentence flagged (and any shown with grounding >= 0.5), the
extra sentences read supported while the true sentences beside them are, and for every lost
answer the rule that lost it (`decided_by`). Writes benchmarks/results/realistic_model.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.oracle_llm import Gold, OracleServer, qnorm  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import normalize_answer, percentile  # noqa: E402
from rag_core.generation.calibrate import SET_PATH, load_set  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

DATA = Path(__file__).parent / "data" / "paraphrase_harness"
SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad-dev" / "dev-v2.0-reconstructed.json"
OUT = Path(__file__).parent / "results"
KB = "realistic-harness"
OP = Caller.operator()


def load(half: str) -> tuple[list[dict], list[dict]]:
    """(documents as JSONL records, questions with their gold and harness answers)."""
    docs, qs, _ = load_set(SET_PATH)
    answers = {q["id"]: q["answers"] for q in qs}
    records = [{"_id": d["id"], "title": d["title"], "text": d["text"]} for d in docs]
    squad = json.loads(SQUAD.read_text())["data"]
    for a in range(20):  # train side only (SPLIT.md)
        art = squad[a]
        for p, para in enumerate(art["paragraphs"]):
            records.append({"_id": f"sq{a}-{p}", "title": art["title"].replace("_", " "), "text": para["context"]})
    items = []
    for name in ("calibration_a.jsonl", "calibration_b.jsonl", "squad_calib.jsonl"):
        path = DATA / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if "article" in r:
                h, doc = ("fit" if r["article"] < 10 else "check"), f"sq{r['article']}-{r['paragraph']}"
                para = squad[r["article"]]["paragraphs"][r["paragraph"]]["context"]
                gold_answers = r.get("answers") or []
            else:
                h, doc, para = ("fit" if int(r["doc"][1:]) <= 23 else "check"), r["doc"], ""
                gold_answers = answers.get(r["id"], [])
            if half != "all" and h != half:
                continue
            items.append({**r, "half": h, "doc": doc, "paragraph_text": para, "gold_answers": gold_answers})
    return records, items


def golds(items: list[dict]) -> dict[str, Gold]:
    out = {}
    for it in items:
        if it["answerable"]:
            out[qnorm(it["question"])] = Gold(evidence=[it["evidence"]], answers=it["gold_answers"],
                                              paragraph=it["paragraph_text"], paraphrase=it["paraphrase"],
                                              extra=it.get("extra") or "")
        else:
            out[qnorm(it["question"])] = Gold(confident=it["confident"], cites=it["cites"])
    return out


def judge(it: dict, a) -> dict:
    text = normalize_answer(re.sub(r"\s*\[\d+\]", "", a.text))
    cites = any(c.doc_id == it["doc"] for c in a.citations)
    # right: a gold answer in the text, or the harness's own paraphrase (written to keep the
    # fact, in other words, so the gold string may not be in it verbatim)
    said = normalize_answer(it.get("paraphrase") or "")[:60]
    correct = (it["answerable"] and not a.abstained and cites
               and (any(normalize_answer(x) and normalize_answer(x) in text for x in it["gold_answers"])
                    or (bool(said) and said in text)))
    labels = [c.label for c in a.claims]
    row = {"id": it["id"], "half": it["half"], "answerable": it["answerable"], "abstained": a.abstained,
           "correct": bool(correct), "cites_gold": cites, "grounding": a.grounding_score, "confidence": a.confidence,
           "decided_by": a.decided_by, "labels": labels, "mode": a.mode, "answer": a.text[:300],
           "missing": [getattr(c, "missing", []) for c in a.claims]}
    extra = it.get("extra")
    if it["answerable"] and extra and not a.abstained:
        key = normalize_answer(extra)[:40]
        row["extra_labels"] = [c.label for c in a.claims if normalize_answer(c.text)[:40] == key]
        row["true_labels"] = [c.label for c in a.claims if normalize_answer(c.text)[:40] != key]
    return row


def summary(rows: list[dict]) -> dict:
    ans = [r for r in rows if r["answerable"]]
    near = [r for r in rows if not r["answerable"]]
    right = [r for r in ans if r["correct"]]
    shown_near = [r for r in near if not r["abstained"]]
    extras = [x for r in ans for x in r.get("extra_labels", [])]
    trues = [x for r in ans if r.get("extra_labels") for x in r.get("true_labels", [])]
    return {
        "answerable": len(ans), "near_miss": len(near),
        "answerable_correct": round(len(right) / max(len(ans), 1), 4),
        "right_supported_050": round(sum(r["grounding"] >= 0.5 for r in right) / max(len(right), 1), 4),
        "near_miss_withheld_or_all_flagged": round(sum(r["abstained"] or "supported" not in r["labels"]
                                                       for r in near) / max(len(near), 1), 4),
        "near_miss_shown_grounding_050": sum(r["grounding"] >= 0.5 for r in shown_near),
        "extra_sentences": len(extras), "extra_read_supported": round(extras.count("supported") / max(len(extras), 1), 4),
        "true_beside_extra_supported": round(trues.count("supported") / max(len(trues), 1), 4),
        "lost_by": dict(Counter(r["decided_by"] for r in ans if not r["correct"])),
        "confidence_right_mean": round(sum(r["confidence"] for r in right) / max(len(right), 1), 4),
        "reliability": reliability(rows),
    }


def reliability(rows: list[dict]) -> list[dict]:
    """Per confidence band of what was shown: how many answers, and the share that were right
    (an answerable question answered correctly and cited; a near-miss answer shown is wrong)."""
    shown = [r for r in rows if not r["abstained"]]
    out = []
    for lo, hi in ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.01)):
        band = [r for r in shown if lo <= r["confidence"] < hi]
        if band:
            out.append({"confidence": f"{lo:.1f}-{min(hi, 1.0):.1f}", "shown": len(band),
                        "right": round(sum(r["correct"] for r in band) / len(band), 4)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--half", choices=("fit", "check", "all"), default="all")
    ap.add_argument("--limit", type=int, default=0, help="the first N questions of each half")
    ap.add_argument("--policies", default="auto,model")
    ap.add_argument("--modes", default="perfect,realistic")
    ap.add_argument("--out", default=str(OUT / "realistic_model.json"))
    ap.add_argument("--gguf", default="", help="real local models instead of the scripted ones: 0.5b,1.5b "
                    "(benchmarks/qwen_gguf.py); slow on a CPU, so pair it with --limit")
    ap.add_argument("--verify", action="store_true", help="RAG_LLM_VERIFY: the model judges its answer too")
    args = ap.parse_args()
    records, items = load(args.half)
    if args.limit:
        items = [it for h in ("fit", "check") for it in [x for x in items if x["half"] == h][: args.limit]]
    data = Path(args.data_dir)
    src = data / "harness_documents.jsonl"
    result: dict = {"questions": len(items), "runs": {}}
    modes = [f"gguf-{n}" for n in args.gguf.split(",")] if args.gguf else args.modes.split(",")
    for mode in modes:
        srv = OracleServer(golds(items), mode=mode) if not mode.startswith("gguf-") else None
        try:
            for policy in args.policies.split(","):
                if srv is None:  # a real local model writes the answers (and judges, with --verify)
                    from benchmarks.qwen_gguf import gguf

                    model = dict(llm_gguf=gguf(mode[5:]), llm_threads=2, llm_ctx=4096, llm_timeout=600)
                else:
                    model = dict(openai_base_url=srv.base_url, openai_api_key="harness", llm_model=f"harness-{mode}")
                ws = Workspace(get_settings(data, **model, answer_policy=policy, answer_cache=False,
                                            llm_condense=False, llm_verify=args.verify))
                if not ws.appdb.find_kbs(KB):
                    data.mkdir(parents=True, exist_ok=True)
                    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
                    ws.create_kb(KB, caller=OP)
                    ws.ingest(KB, [src], caller=OP)
                t = time.perf_counter()
                rows, lat = [], []
                for it in items:
                    t1 = time.perf_counter()
                    first, final = None, None
                    for ev in ws.answers.chain.stream(ws.answer_request([KB], it["question"], caller=OP)):
                        if ev.kind == "token" and first is None:
                            first = (time.perf_counter() - t1) * 1000
                        if ev.kind == "answer":
                            final = ev.answer
                    lat.append((time.perf_counter() - t1) * 1000)
                    rows.append({**judge(it, final), "first_token_ms": round(first or lat[-1], 1),
                                 "labels_ms": round(lat[-1], 1)})
                ws.close()
                run = {half: summary([r for r in rows if r["half"] == half]) for half in sorted({r["half"] for r in rows})}
                run["latency_ms_p50"] = round(percentile(lat, 50), 1)
                run["first_token_ms_p50"] = round(percentile([r["first_token_ms"] for r in rows], 50), 1)
                run["labels_ms_p50"] = round(percentile([r["labels_ms"] for r in rows], 50), 1)
                run["minutes"] = round((time.perf_counter() - t) / 60, 2)
                result["runs"][f"{mode}/{policy}"] = run
                print(json.dumps({f"{mode}/{policy}": run}), flush=True)
                (Path(args.out).with_suffix("") .with_name(Path(args.out).stem + f"_{mode}_{policy}_rows.jsonl")
                 ).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        finally:
            if srv is not None:
                srv.stop()
            else:
                from rag_core.generation.local_server import stop_server

                stop_server()
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
