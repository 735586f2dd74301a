"""The compact source form against the tagged one, for a local model, in one run (issue 52,
part 4): each question is asked twice through the product's chain on the same llama.cpp
server, once per form, the form asked first alternating, so both sides share the machine's
state of the moment (runs an hour apart differed by 15% in the server's own tokens/s).

    python benchmarks/compact_sources_ab.py --data-dir COPY_OF_SQUAD_KB --model 0.5b --n 10 --split calib

Per form: first token p50/p95 (the first streamed text), the new prompt tokens the server
read per request and its seconds (its own log), and answerable correct and cited /
unanswerable withheld (as benchmarks/llm_mode.py scores them). The answer cache is off, so
the second asking is answered afresh; llama.cpp's prompt cache holds only the shared prefix
(the system prompt and "<retrieved_context>"), the same for both forms.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.answer_quality import KB, SQUAD, build_kb, norm, questions  # noqa: E402
from benchmarks.llm_mode import _PROMPT_EVAL, _log_size  # noqa: E402
from benchmarks.qwen_gguf import gguf  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import percentile  # noqa: E402
from rag_core.generation.local_server import running  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"


def server_reads(model_path, start: int) -> tuple[list[tuple[float, int]], int]:
    srv = running(model_path)
    with open(srv.log_path, "rb") as fh:
        fh.seek(start)
        text = fh.read().decode("utf-8", "replace")
    return [(float(ms), int(n)) for ms, n in _PROMPT_EVAL.findall(text)], srv.log_path.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--model", choices=["0.5b", "1.5b"], default="0.5b")
    ap.add_argument("--n", type=int, default=10, help="answerable and unanswerable questions each")
    ap.add_argument("--split", choices=["test", "calib"], default="calib")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    model_path = gguf(args.model)
    settings = get_settings(args.data_dir, llm_gguf=model_path, llm_threads=2, llm_timeout=300, answer_cache=False)
    ws = Workspace(settings)
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    build_kb(ws, data)
    answerable, impossible = questions(data, args.split, args.n)
    op = Caller.operator()
    chain = ws.answers.chain
    chain.invoke(ws.answer_request([KB], "What is the capital of France?", caller=op))  # start and warm the server
    at = _log_size(model_path)
    rows = []
    items = [("answerable", x) for x in answerable] + [("impossible", x) for x in impossible]
    for i, (label, (qid, q, gold_doc, golds)) in enumerate(items):
        for compact in ((True, False) if i % 2 == 0 else (False, True)):
            settings.llm_compact_sources = compact
            t0, first, answer = time.perf_counter(), None, None
            for ev in chain.stream(ws.answer_request([KB], q, caller=op)):
                if ev.kind == "token" and first is None:
                    first = time.perf_counter()
                elif ev.kind == "answer":
                    answer = ev.answer
            reads, at = server_reads(model_path, at)
            a = answer
            ok = bool(golds) and any(norm(g) in norm(a.text) for g in golds) and any(c.doc_id == gold_doc for c in a.citations)
            rows.append({"id": qid, "label": label, "form": "compact" if compact else "tagged",
                         "ttft_s": round(first - t0, 3) if first and a.mode == "llm" else None,
                         "abstained": a.abstained, "correct": ok, "reads": reads})
            print(json.dumps({k: rows[-1][k] for k in ("label", "form", "ttft_s", "correct", "reads")}), flush=True)
    out = {"model": args.model, "split": args.split, "questions": len(items), "context_budget_tokens": settings.context_budget,
           "command": " ".join(sys.argv)}
    for form in ("tagged", "compact"):
        rs = [r for r in rows if r["form"] == form]
        ttft = [r["ttft_s"] for r in rs if r["ttft_s"] is not None]
        first_reads = [r["reads"][0] for r in rs if r["reads"]]  # the answer's own prompt (its first request)
        A, U = [r for r in rs if r["label"] == "answerable"], [r for r in rs if r["label"] == "impossible"]
        out[form] = {"ttft_s_p50": round(percentile(ttft, 50), 2) if ttft else None,
                     "ttft_s_p95": round(percentile(ttft, 95), 2) if ttft else None,
                     "answers_written": len(ttft),
                     "prompt_tokens_read_p50": percentile([n for _, n in first_reads], 50) if first_reads else None,
                     "prompt_read_s_p50": round(percentile([ms / 1000 for ms, _ in first_reads], 50), 2) if first_reads else None,
                     "answerable_correct_and_cited": round(sum(r["correct"] for r in A) / max(len(A), 1), 4),
                     "unanswerable_withheld": round(sum(r["abstained"] for r in U) / max(len(U), 1), 4)}
    both = [(a, b) for a, b in zip(rows[0::2], rows[1::2])]
    out["same_correctness"] = sum(a["correct"] == b["correct"] for a, b in both)
    out["pairs"] = len(both)
    OUT.mkdir(exist_ok=True)
    stem = args.out or f"compact_sources_ab_{args.model.replace('.', '')}_{args.split}"
    (OUT / f"{stem}.json").write_text(json.dumps(out, indent=1) + "\n")
    with (OUT / f"{stem}_rows.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    print(json.dumps(out, indent=1))
    ws.close()


if __name__ == "__main__":
    main()
