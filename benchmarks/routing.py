"""Route accuracy of the planner (rag_core/generation/planner.py) on questions written before it
was built (benchmarks/data/routing_questions.jsonl, ROUTING_README.md): offline rules, and the
rules plus a local model's JSON decision.

    python benchmarks/routing.py                      # offline rules
    python benchmarks/routing.py --questions routing_questions_b.jsonl   # the second set
    python benchmarks/routing.py --llm 0.5b           # with Qwen2.5-Coder-0.5B (benchmarks/qwen_gguf.py)

A route is right when it is the labelled one; "documents right" also needs the documents the
route reads to be the labelled ones (any order). Nothing here was fitted on these questions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_core.generation.planner import CatalogueEntry, Planner, mentioned  # noqa: E402
from rag_core.retrieval.query import detect_lookup, normalise  # noqa: E402

DATA = Path(__file__).parent / "data"


def catalogue() -> dict[str, list[CatalogueEntry]]:
    cat = json.loads((DATA / "routing_catalogue.json").read_text())["knowledge_bases"]
    return {kb: [CatalogueEntry(kb, f"{kb}/{d['source']}", d["source"], d.get("title", "")) for d in docs]
            for kb, docs in cat.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm", choices=("0.5b", "1.5b"), default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--questions", default="routing_questions.jsonl",
                    help="a question file in benchmarks/data (routing_questions_b.jsonl: the second set, ROUTING_README.md)")
    args = ap.parse_args()
    cat = catalogue()
    rows = [json.loads(line) for line in (DATA / args.questions).read_text().splitlines() if line.strip()]
    llm = None
    if args.llm:
        from langchain_core.output_parsers import StrOutputParser

        from benchmarks.qwen_gguf import gguf
        from rag_core.generation.llm import LocalServerChat
        from rag_core.generation.local_server import ensure_server

        path = gguf(args.llm)
        ensure_server(path, args.threads, 4096)
        llm = LocalServerChat(gguf=str(path), threads=args.threads, ctx=4096, temperature=0.0, timeout=120,
                              retries=0, max_tokens=96) | StrOutputParser()
    planner = Planner(llm=llm)
    out = []
    for r in rows:
        entries = [e for kb in r["kbs"] for e in cat[kb]]
        if r.get("scope"):
            entries = [e for e in entries if e.source in r["scope"]]
        q = normalise(r["question"])
        lookup = detect_lookup(q)
        named = mentioned(lookup, entries) if lookup else []
        t = time.perf_counter()
        route = planner.plan(q, entries, lookup_doc=named[0] if named else None)
        ms = (time.perf_counter() - t) * 1000
        got_docs = sorted(d.source for d in route.documents)
        out.append({"id": r["id"], "language": r.get("language", "en"), "gold": r["route"], "got": route.kind,
                    "by": route.by, "reason": route.reason, "gold_docs": sorted(r.get("documents", [])),
                    "got_docs": got_docs, "ms": round(ms, 1), "question": r["question"]})
    n = len(out)
    right = [o for o in out if o["gold"] == o["got"]]
    docs_right = [o for o in right if o["gold"] == "search" or o["gold_docs"] == o["got_docs"]]
    per_route = {g: {"n": sum(o["gold"] == g for o in out), "route_right": sum(o["gold"] == g == o["got"] for o in out),
                     "documents_right": sum(o["gold"] == g for o in docs_right)} for g in ("search", "document", "compare")}
    per_lang = defaultdict(lambda: [0, 0])
    for o in out:
        per_lang[o["language"]][0] += 1
        per_lang[o["language"]][1] += o["gold"] == o["got"]
    summary = {
        "planner": f"rules + {args.llm}" if args.llm else "offline rules", "questions": n,
        "route_accuracy": round(len(right) / n, 4), "documents_right": round(len(docs_right) / n, 4),
        "per_route": per_route, "per_language": {k: {"n": v[0], "route_right": v[1]} for k, v in per_lang.items()},
        "confusion": {f"{g}->{p}": c for (g, p), c in Counter((o["gold"], o["got"]) for o in out).items()},
        "decided_by": dict(Counter(o["by"] for o in out)),
        "fallbacks": sum("not usable" in o["reason"] or "failed" in o["reason"] for o in out),
        "ms_p50": sorted(o["ms"] for o in out)[n // 2], "ms_max": max(o["ms"] for o in out),
    }
    print(json.dumps(summary, indent=1))
    for o in out:
        if o["gold"] != o["got"] or (o["gold"] != "search" and o["gold_docs"] != o["got_docs"]):
            print(f"  {o['id']} {o['gold']}->{o['got']} {o['got_docs']} (gold {o['gold_docs']}) [{o['by']}] {o['question']}")
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "rows": out}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
