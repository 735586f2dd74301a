"""The answer policy with real local models: each Qwen2.5-Coder GGUF (benchmarks/qwen_gguf.py)
calibrated (`Workspace.calibrate_answer_policy`, the shipped calibration set, train side), then
asked a test set once with no reader veto, and every policy replayed on the signals recorded:

- `conservative`: the reader's evidence ≥ answer_threshold before generation and the written
  answer's P(answers) ≥ llm_answer_threshold after it (the shipped gates);
- `calibrated`: the lines the calibration stored for this model;
- `model`: no reader line (the model's verdict and support verification only).

Replaying is exact: under every policy the chain runs the same steps until a line vetoes, and
the fixed rules (the model declined, no supported sentence, nothing retrieved) are recorded in
the run. Time to first token and total time per answer come from the stream.

    python benchmarks/policy_models.py --model 0.5b --data-dir /tmp/gw-oracle-manuals \
        --set manuals --pdfs /tmp/manuals/usr --every 3 --calibrate-limit 60
    python benchmarks/policy_models.py --model 0.5b --data-dir /tmp/gw-oracle-squad --set squad --n 20 \
        --calibrate-limit 60

The data folder is shared with benchmarks/perfect_reader.py (the same knowledge bases). Writes
benchmarks/results/policy_models_<model>_<set>.json and _rows.jsonl.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.perfect_reader import correct, manual_items, squad_items  # noqa: E402
from benchmarks.qwen_gguf import gguf  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import percentile  # noqa: E402
from rag_core.generation.calibrate import Replay  # noqa: E402
from rag_core.generation.policy_choice import policy_for  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"


def replay(rows: list[dict], evidence_min: float, written_min: float) -> dict:
    """One policy's figures on the recorded rows (the calibration's own replay rule)."""
    correct, declined = Replay(rows).at(evidence_min, written_min)
    A = sum(r["answerable"] for r in rows)
    return {"evidence_min": evidence_min, "written_min": written_min,
            "answerable_correct": round(correct, 4), "answerable_correct_n": round(correct * A),
            "unanswerable_abstained": round(declined, 4), "unanswerable_abstained_n": round(declined * (len(rows) - A))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=("0.5b", "1.5b"), required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--set", choices=("manuals", "squad"), required=True)
    ap.add_argument("--pdfs")
    ap.add_argument("--n", type=int, default=20, help="squad: answerable and unanswerable questions each")
    ap.add_argument("--every", type=int, default=1, help="keep every K-th question of each kind (all programs)")
    ap.add_argument("--calibrate-limit", type=int, default=None, help="calibration set questions (default: all 270)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=200, help="the answer's token budget (as benchmarks/llm_mode.py)")
    args = ap.parse_args()
    args.limit = 0
    op = Caller.operator()
    settings = get_settings(args.data_dir, llm_gguf=gguf(args.model), llm_threads=args.threads, llm_timeout=600,
                            llm_retries=0, llm_max_tokens=args.max_tokens)
    ws = Workspace(settings)
    t = time.perf_counter()
    run = ws.calibrate_answer_policy(caller=op, limit=args.calibrate_limit,
                                     progress=lambda d, n, e: print(f"calibration {d}/{n}", file=sys.stderr, flush=True))
    calibration = {"questions": run.rows, "minutes": round((time.perf_counter() - t) / 60, 2), "params": run.params,
                   "figures": run.figures}
    print(json.dumps({"calibration": calibration}), flush=True)
    cal = policy_for(settings).params
    kb, items = (squad_items if args.set == "squad" else manual_items)(args, ws)
    if args.every > 1:
        items = [it for lab in ("answerable", "near_miss", "unanswerable")
                 for i, it in enumerate([x for x in items if x["label"] == lab]) if i % args.every == 0]
    # the test run: no reader line, so every signal is measured once and each policy is replayed
    free = Workspace(settings.model_copy(update={"answer_policy": "model", "answer_threshold": 0.0}))
    free.ask([kb], "warm-up question", caller=op)
    rows = []
    for it in items:
        t0 = time.perf_counter()
        first = None
        a = None
        for ev in free.answers.chain.stream(free.answer_request([kb], it["question"], caller=op)):
            if ev.kind == "token" and first is None:
                first = time.perf_counter()
            if ev.kind == "answer":
                a = ev.answer
        total = (time.perf_counter() - t0) * 1000
        ok = correct(args.set, it, a)[0] if it["label"] == "answerable" else False
        rows.append({"id": it["id"], "label": it["label"], "answerable": it["label"] == "answerable",
                     "correct": ok, "abstained": a.abstained,
                     "decided_by": a.decided_by, "evidence": a.signals.get("evidence"), "answers": a.signals.get("answers"),
                     "mode": a.mode, "signals": a.signals, "ttft_ms": round((first - t0) * 1000, 1) if first else None,
                     "total_ms": round(total, 1), "answer": a.text[:240]})
        print(json.dumps(rows[-1]), flush=True)
    ttft = [r["ttft_ms"] for r in rows if r["ttft_ms"] is not None]
    tot = [r["total_ms"] for r in rows]
    summary = {
        "model": args.model, "set": args.set, "questions": len(rows), "every": args.every,
        "calibration": calibration,
        "policies": {
            "conservative": replay(rows, settings.answer_threshold, settings.llm_answer_threshold),
            "calibrated": replay(rows, cal.evidence_min, cal.written_min),
            "model": replay(rows, 0.0, 0.0),
        },
        "ttft_ms_p50_p95": [round(percentile(ttft, 50), 1), round(percentile(ttft, 95), 1)] if ttft else None,
        "total_ms_p50_p95": [round(percentile(tot, 50), 1), round(percentile(tot, 95), 1)],
        "decided_by_unvetoed": {k: sum(r["decided_by"] == k for r in rows) for k in {r["decided_by"] for r in rows}},
    }
    OUT.mkdir(exist_ok=True)
    stem = f"policy_models_{args.model.replace('.', '')}_{args.set}"
    (OUT / f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n")
    with (OUT / f"{stem}_rows.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=2))
    free.close()
    ws.close()


if __name__ == "__main__":
    main()
