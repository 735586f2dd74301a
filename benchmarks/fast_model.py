"""Time to the first token of an answer, with and without a fast model for the small steps.

    python benchmarks/fast_model.py --data-dir /work/cache/squad [--n 8]

Follow-up questions (benchmarks/followups.py's train-side conversations over the SQuAD
knowledge base) need a condensing call before retrieval; each is asked once per setup on
local Qwen2.5-Coder models (benchmarks/qwen_gguf.py), and the stream is stopped at its first
token. Setups:
- "before": the 1.5B answer model does every step, the condensing call with the answer's
  output budget (1024 tokens), no planner: how every LLM step ran before the fast model;
- "one model": the 1.5B model, small steps with the short output budget (RAG_LLM_FAST_MODEL unset);
- "fast 0.5B": RAG_LLM_FAST_GGUF = the 0.5B file, served beside the 1.5B answer model.
And for reference the 0.5B model alone. Reported: median and p90 time to the first token, and
the time of the condensing step. Two threads per server, on a 2-core machine: the two
servers never run at once (the steps are sequential), so neither slows the other.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.answer_quality import KB, SQUAD  # noqa: E402
from benchmarks.followups import examples  # noqa: E402
from benchmarks.qwen_gguf import gguf  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OP = Caller.operator()


def run(data_dir: Path, items: list[dict], **settings) -> dict:
    ws = Workspace(get_settings(data_dir, llm_threads=2, llm_ctx=4096, llm_timeout=600, llm_crag=False,
                                answer_cache=False, **settings))
    rows = []
    try:
        # warm: the servers start and load their models outside the measure
        list(ws.answers.chain.stream(ws.answer_request([KB], "What is the capital of France?", caller=OP)))
        for it in items:
            history = [("user", it["q1"]), ("assistant", it["a1"])]
            req = ws.answer_request([KB], it["followup"], history=history, caller=OP)
            t0 = time.perf_counter()
            first = None
            standalone = ""
            stream = ws.answers.chain.stream(req)
            for ev in stream:
                if ev.kind == "token":
                    first = (time.perf_counter() - t0) * 1000
                    break
                if ev.kind == "answer":  # answered (or withheld) without a token
                    first = (time.perf_counter() - t0) * 1000
                    standalone = ev.answer.standalone_question
                    break
            stream.close()
            rows.append({"followup": it["followup"], "ttft_ms": round(first or 0, 1), "standalone": standalone})
    finally:
        ws.close()
    from rag_core.generation.local_server import stop_server

    stop_server()
    ttft = sorted(r["ttft_ms"] for r in rows)
    return {"questions": len(rows), "ttft_ms_median": round(statistics.median(ttft), 1),
            "ttft_ms_p90": round(ttft[int(0.9 * (len(ttft) - 1))], 1), "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True, help="a data folder holding the SQuAD knowledge base")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--setups", default="", help="comma-separated setup names' first words to run (default: all)")
    ap.add_argument("--out", default="fast_model_ttft", help="the results' file stem")
    args = ap.parse_args()
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    items = examples(data, args.n, seed=1)
    small, big = gguf("0.5b"), gguf("1.5b")
    setups = {
        "before (1.5B does every step, full budget, no planner)":
            {"llm_gguf": big, "llm_planner": "rules", "llm_fast_max_tokens": 1024},
        "one model (1.5B, short budget for small steps)": {"llm_gguf": big},
        "fast 0.5B beside the 1.5B answer model": {"llm_gguf": big, "llm_fast_gguf": small},
        "0.5B alone": {"llm_gguf": small},
    }
    wanted = [w.strip() for w in args.setups.split(",") if w.strip()]
    setups = {k: v for k, v in setups.items() if not wanted or any(k.startswith(w) for w in wanted)}
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for f in Path(args.data_dir).glob("groundwork.db*"):
            shutil.copy(f, Path(tmp) / f.name)
        for name, s in setups.items():
            out[name] = run(Path(tmp), items, **s)
            print(name, json.dumps({k: v for k, v in out[name].items() if k != "rows"}), flush=True)
    path = Path(__file__).resolve().parent / "results" / f"{args.out}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
