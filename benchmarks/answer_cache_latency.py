"""How long an answer-cache hit takes, on the SQuAD knowledge base (a copy of the data folder):
20 train-side questions asked, then asked again (all hits), without and then with learnt
feedback records in the knowledge base (a hit then embeds the question once, to find the
records that can reach it: feedback_signals.reaching).

    python benchmarks/answer_cache_latency.py --data-dir /tmp/gwq
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
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OP = Caller.operator()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    args = ap.parse_args()
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())["data"]
    qs = [qa["question"] for p in data[1]["paragraphs"][:10] for qa in p["qas"][:2]]  # train side
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for f in Path(args.data_dir).glob("groundwork.db*"):
            shutil.copy(f, Path(tmp) / f.name)
        ws = Workspace(get_settings(Path(tmp), llm_crag=False))
        try:
            def timed(tag):
                ms = []
                for q in qs:
                    t = time.perf_counter()
                    a = ws.ask([KB], q, caller=OP)
                    ms.append((time.perf_counter() - t) * 1000)
                    out.setdefault(tag + "_cached", []).append(a.cached)
                out[tag] = {"median_ms": round(statistics.median(ms), 1), "max_ms": round(max(ms), 1)}
            timed("miss")
            timed("hit, no learnt records")
            log, kb = ws.feedback_for(caller=OP), ws.get_kb(KB, caller=OP).kb_id
            for q in qs[:5]:  # ratings of other phrasings: records exist, the answers stay cached
                a = ws.ask([KB], q + " please", caller=OP)
                log.rate(log.log_answer(a, [kb]), 1)
            for q in qs:
                ws.ask([KB], q, caller=OP)
            timed("hit, with learnt records")
        finally:
            ws.close()
    res = {k: v for k, v in out.items() if not k.endswith("_cached")}
    res["hits"] = {k: sum(v) for k, v in out.items() if k.endswith("_cached")}
    Path(__file__).resolve().parent.joinpath("results", "answer_cache_latency.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
