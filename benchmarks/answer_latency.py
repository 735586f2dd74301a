"""Time from question to first streamed token and to the full verified answer, through the
same streaming call the chat page uses, on an indexed knowledge base (default: the SciFact
one that `eval beir` / ingest_throughput.py builds). Works unchanged in LLM mode when
OPENAI_BASE_URL / OPENAI_API_KEY are set.

    python benchmarks/answer_latency.py --data-dir /tmp/gw-eval [--kb beir-beir-scifact] [--n 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import percentile  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402
from rag_core.access import Caller

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--kb", default="beir-beir-scifact")
    ap.add_argument("--n", type=int, default=100)
    args = ap.parse_args()
    t = time.perf_counter()
    ws = Workspace(get_settings(args.data_dir))
    _ = ws.answers  # model, index and chain ready, as after the app's first render
    load_s = time.perf_counter() - t
    qs = [json.loads(l)["text"] for l in (SHARED / "beir-scifact" / "queries.jsonl").open()][: args.n]
    first, full, abstained = [], [], 0
    ws.ask([args.kb], qs[0], caller=Caller.operator())  # warm-up
    for q in qs:
        req = ws.answer_request([args.kb], q, caller=Caller.operator())
        t = time.perf_counter()
        got_first = None
        for ev in ws.answers.stream(req):
            if ev["type"] == "token" and got_first is None:
                got_first = time.perf_counter() - t
            if ev["type"] == "answer":
                abstained += ev["answer"].abstained
        full.append((time.perf_counter() - t) * 1000)
        first.append((got_first or 0) * 1000)
    print(json.dumps({
        "kb": args.kb, "mode": ws.answers.mode, "questions": len(qs), "workspace_load_s": round(load_s, 2),
        "first_token_ms_p50": round(percentile(first, 50), 1), "first_token_ms_p95": round(percentile(first, 95), 1),
        "full_answer_ms_p50": round(percentile(full, 50), 1), "full_answer_ms_p95": round(percentile(full, 95), 1),
        "abstained": abstained,
    }))


if __name__ == "__main__":
    main()
