"""Which passage an offline answer leads with: the reader's best sentence's passage (today), or
a blend of the reader's best P(answers) in each passage with the passage's retrieval rank.

Train side only: the shipped answer-policy calibration set (rag_core/generation/calibration,
its 135 answerable questions, each with its gold document and answer strings), in the folder a
`calibrate` run ingested it into. For every question the real retrieval and the real reader run
once; each rule then picks the lead passage, and the passage shown (passage.passage_for, in
the document's text around the chunk as the chain reads it) is checked for a gold answer string
of the gold document. A weight fitted here is what the product ships; the manuals benchmark
(benchmarks/manual_questions.py --set v2) reports it out of sample.

    python benchmarks/lead_passage.py --data-dir /tmp/gwcal_full/answer_policies/set
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import normalize_answer  # noqa: E402
from rag_core.generation.calibrate import KB_NAME, load_set  # noqa: E402
from rag_core.generation.passage import passage_for  # noqa: E402
from rag_core.stores.adjacent import neighbours, widened  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "lead_passage.json"
WEIGHTS = [round(x, 2) for x in np.arange(0.0, 1.0001, 0.05)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True, help="a calibration folder holding the ingested set")
    args = ap.parse_args()
    op = Caller.operator()
    ws = Workspace(get_settings(args.data_dir))
    _, qs, sha = load_set()
    ex = ws.answers.extractive
    rows = []
    for q in [x for x in qs if x["answerable"]]:
        sources = ws.search([KB_NAME], q["question"], caller=op).results
        ev = ex.read(q["question"], sources)
        if not ev.cands:
            rows.append({"id": q["id"], "passages": []})
            continue
        best: dict[int, tuple[float, int, str]] = {}
        for (si, k, s), p in zip(ev.cands, ev.probs):
            if si not in best or p > best[si][0]:
                best[si] = (float(p), k, s)
        golds = [normalize_answer(a) for a in q["answers"] if normalize_answer(a)]
        passages = []
        for si, (p, k, s) in best.items():
            ch = sources[si].chunk
            wide = widened(ch, *neighbours(ws.store, ch)).text
            shown, _ = passage_for(ch.text, k, s, context=wide)
            ok = ch.doc_id == q["doc"] and any(g in normalize_answer(shown or s) for g in golds)
            passages.append({"rank": si, "p": p, "ok": ok})
        rows.append({"id": q["id"], "passages": passages})
    ws.close()

    def lead(passages, w):
        return max(passages, key=lambda x: ((1 - w) * x["p"] + w / (1 + x["rank"]), -x["rank"]))

    table = {}
    for w in WEIGHTS:
        hits = sum(lead(r["passages"], w)["ok"] for r in rows if r["passages"])
        table[str(w)] = round(hits / len(rows), 4)
    best_w = max(WEIGHTS, key=lambda w: (table[str(w)], -w))
    summary = {"set_sha256": sha, "answerable": len(rows), "answering_passage_first_by_weight": table,
               "today_weight_0": table["0.0"], "best_weight": best_w, "best": table[str(best_w)],
               "any_passage_answers": round(sum(any(x["ok"] for x in r["passages"]) for r in rows) / len(rows), 4)}
    OUT.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
