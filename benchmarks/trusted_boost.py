"""Does the trusted-document boost hurt retrieval? (issue 53, part 4; rag_core/retrieval/trust.py)

    python benchmarks/trusted_boost.py [--boosts 0,0.05,0.1,0.2,0.3]

The worst case for a boost: trust that has nothing to do with relevance.
- SciFact (BEIR, test queries, 300): a random tenth of the 5,183 abstracts is marked trusted
  (seed 53); nDCG@10 and recall@10 of hybrid search at each boost.
- The manuals (benchmarks/data/manual_questions_v2.jsonl, its 56 answerable questions over
  eight PDF manuals of five programs in one knowledge base): each manual in turn is the one
  trusted document; gold-page hit@10 (a passage of the right manual on a gold page in the
  first 10) at each boost, averaged over the eight choices, and its worst choice.
A boost of 0 is the product without trust marks. Reported, not fitted: BOOST is a judgement,
and this measures what it costs when owners mark documents at random.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import doc_ranking, evaluate_run, load_beir  # noqa: E402
from rag_core.retrieval import trust  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OP = Caller.operator()
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def scifact(ws, folder: Path, boosts: list[float]) -> dict:
    data = load_beir(folder)
    try:
        kb = ws.get_kb("scifact", caller=OP)
    except Exception:
        kb = ws.create_kb("scifact", caller=OP)
    if ws.kb_counts(kb.kb_id, caller=OP)[0] == 0:
        ws.ingest(kb.kb_id, [data.corpus], caller=OP)
    docs = sorted(d.doc_id for d in ws.appdb.list_documents(kb.kb_id))
    marked = set(random.Random(53).sample(docs, len(docs) // 10))
    for d in docs:
        ws.appdb.set_document_trust(kb.kb_id, d, "trusted" if d in marked else "normal")
    out = {"documents": len(docs), "trusted": len(marked), "queries": len(data.queries)}
    for b in boosts:
        trust.BOOST = b
        run = {qid: doc_ranking(ws.search([kb.kb_id], q, k=100, caller=OP).results, 100)
               for qid, q in data.queries.items()}
        m = evaluate_run(run, data.qrels)
        share = sum(r in marked for ranked in run.values() for r in ranked[:10]) / max(1, sum(min(10, len(r)) for r in run.values()))
        out[f"boost {b}"] = {"ndcg@10": round(m["ndcg_at_10"], 4), "recall@10": round(m["recall_at_10"], 4),
                             "trusted share of top 10": round(share, 3)}
        print("scifact", b, out[f"boost {b}"], flush=True)
    return out


def manuals(ws, boosts: list[float]) -> dict:
    qs = [q for q in map(json.loads, (Path(__file__).resolve().parent / "data" / "manual_questions_v2.jsonl")
                         .read_text().splitlines()) if q["answerable"]]
    kb = ws.list_kbs(caller=OP)[0]
    docs = ws.appdb.list_documents(kb.kb_id)

    def hit(q, results) -> bool:
        return any(r.chunk.source.endswith(q["manual"]) and any(p in q["pages"] for p in range(r.chunk.page_start, r.chunk.page_end + 1))
                   for r in results[:10])

    out = {"questions": len(qs), "documents": len(docs)}
    for b in boosts:
        trust.BOOST = b
        rates = {}
        for d in docs if b > 0 else docs[:1]:
            for other in docs:
                ws.appdb.set_document_trust(kb.kb_id, other.doc_id, "trusted" if other.doc_id == d.doc_id else "normal")
            rates[d.source] = sum(hit(q, ws.search([kb.kb_id], q["question"], k=10, caller=OP).results) for q in qs) / len(qs)
        out[f"boost {b}"] = {"hit@10 mean": round(sum(rates.values()) / len(rates), 4),
                             "hit@10 worst": round(min(rates.values()), 4),
                             "worst when trusted": min(rates, key=rates.get) if b > 0 else ""}
        print("manuals", b, out[f"boost {b}"], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--boosts", default="0,0.05,0.1,0.2,0.3")
    ap.add_argument("--scifact", default=str(SHARED / "beir-scifact"))
    ap.add_argument("--scifact-data", default=str(Path.home() / ".cache" / "groundwork-trust-scifact"),
                    help="a data folder kept between runs (the corpus is indexed once)")
    ap.add_argument("--manuals-data", default="/tmp/gw-manuals-v2",
                    help="the data folder benchmarks/manual_questions.py --set v2 built (copied, never changed)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "trusted_boost.json"))
    args = ap.parse_args()
    boosts = [float(x) for x in args.boosts.split(",")]
    report = {}
    ws = Workspace(get_settings(Path(args.scifact_data), answer_cache=False))
    try:
        report["scifact"] = scifact(ws, Path(args.scifact), boosts)
    finally:
        ws.close()
    if Path(args.manuals_data).is_dir():
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(args.manuals_data, Path(tmp) / "data")
            ws = Workspace(get_settings(Path(tmp) / "data", answer_cache=False))
            try:
                report["manuals"] = manuals(ws, boosts)
            finally:
                ws.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
