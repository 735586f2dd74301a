"""The answer cache on a realistic log: the feedback benchmark's session replayed
(benchmarks/feedback_learning.py: the SQuAD knowledge base, train-side questions).

    python benchmarks/answer_cache.py --data-dir /work/cache/squad [--share 0.2] [--sample 100]

The log, in order, as one simulated team would produce it:
1. "before": a sample of questions (other questions of the rated articles, and unrelated ones);
2. "rate": every taught question asked once and rated from the gold labels (thumbs up when
   the answer cites the gold paragraph, else thumbs down "wrong source"), which teaches retrieval;
3. "after": the same sample asked again;
4. "rated again": the taught questions asked again;
5. "after a change": a document is added to the knowledge base, and the sample is asked again.
Reported: hits per phase, the hit rate over the whole log, and latency of hits and misses.
A hit is expected only where nothing the answer depends on changed: in phase 3 a question is
missed when a rating in phase 2 can reorder its passages; in phase 5 every question must miss.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.answer_quality import KB, SQUAD, build_kb  # noqa: E402
from benchmarks.feedback_learning import questions  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OP = Caller.operator()


def ask(ws, q, log: list, phase: str):
    t = time.perf_counter()
    a = ws.ask([KB], q, caller=OP)
    log.append({"phase": phase, "cached": a.cached, "ms": (time.perf_counter() - t) * 1000})
    return a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True, help="a data folder holding the SQuAD knowledge base (or to build it)")
    ap.add_argument("--share", type=float, default=0.2, help="share of a taught article's questions that are rated")
    ap.add_argument("--sample", type=int, default=100, help="questions per group in the before/after sample")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    log: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in Path(args.data_dir).glob("groundwork.db*"):
            shutil.copy(f, Path(tmp) / f.name)
        ws = Workspace(get_settings(Path(tmp), llm_crag=False))
        try:
            build_kb(ws, data)
            taught, held, unrelated = questions(data, args.seed, args.share)
            rng = random.Random(args.seed)
            sample = rng.sample(held, min(args.sample, len(held))) + rng.sample(unrelated, min(args.sample, len(unrelated)))
            for q, _, _ in sample:
                ask(ws, q, log, "before")
            fb = ws.feedback_for(caller=OP)
            kb_id = ws.get_kb(KB, caller=OP).kb_id
            for q, gold, _ in taught:
                a = ask(ws, q, log, "rate")
                if a.abstained or not a.citations:
                    continue
                qid = fb.log_answer(a, [kb_id])
                good = any(c.doc_id == gold for c in a.citations)
                fb.rate(qid, 1 if good else -1, reason=None if good else "wrong source")
            for q, _, _ in sample:
                ask(ws, q, log, "after")
            for q, _, _ in taught:
                ask(ws, q, log, "rated again")
            extra = Path(tmp) / "notice.md"
            extra.write_text("# Notice\n\nThe library closes early on the first Friday of every month.\n")
            ws.ingest(KB, [extra], caller=OP)
            for q, _, _ in sample:
                ask(ws, q, log, "after a change")
            learnt = ws.db.query_one("SELECT COUNT(*) AS n FROM feedback_signals WHERE active=1")["n"]
        finally:
            ws.close()
    phases = {}
    for ph in ("before", "rate", "after", "rated again", "after a change"):
        rows = [r for r in log if r["phase"] == ph]
        phases[ph] = {"asked": len(rows), "hits": sum(r["cached"] for r in rows)}
    hits = [r["ms"] for r in log if r["cached"]]
    misses = [r["ms"] for r in log if not r["cached"]]
    rec = {"share": args.share, "sample": args.sample, "seed": args.seed, "learnt_records": learnt, "phases": phases,
           "questions_asked": len(log), "hit_rate": round(len(hits) / len(log), 4),
           "repeats": sum(1 for r in log if r["phase"] in ("after", "rated again", "after a change")),
           "hit_rate_on_repeats": round(sum(r["cached"] for r in log if r["phase"] in ("after", "rated again"))
                                        / max(1, sum(r["phase"] in ("after", "rated again") for r in log)), 4),
           "hit_ms_p50": round(statistics.median(hits), 1) if hits else None,
           "hit_ms_p95": round(sorted(hits)[int(0.95 * (len(hits) - 1))], 1) if hits else None,
           "miss_ms_p50": round(statistics.median(misses), 1) if misses else None}
    out = Path(__file__).resolve().parent / "results" / "answer_cache.json"
    out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
