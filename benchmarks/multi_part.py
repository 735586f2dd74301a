"""Two-part questions (issue 53, part 1): each part answered and cited, or the missing part named.

    python benchmarks/multi_part.py --data-dir /tmp/gw-squad [--split test] [--n 60]

The knowledge base is SQuAD v2.0 dev's 1,204 paragraphs (as benchmarks/answer_quality.py builds
it: JSONL records, doc_id "<article>-<paragraph>"). Two questions of different articles of one
side of the split (SPLIT.md: `calib` = train-side articles 17–19, `test` = 20–34) are joined into
one ("Q1 and q2?"), of two kinds:
- both answerable: correct when the answer holds a gold answer of each part AND cites each
  part's gold paragraph;
- one answerable, one the documents do not answer (a SQuAD v2 unanswerable question): correct
  when the answerable part is answered and cited and the other is named as not answered.
The same joined questions are asked with the splitting off (RAG_MULTI_PART=false: the product
before this issue), scored the same way (the missing part can then only be named by chance).
Reports both-parts-correct rates, per kind, with and without, and the latency p50.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import normalize_answer as norm, percentile  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad-dev" / "dev-v2.0-reconstructed.json"
SPLITS = {"calib": range(17, 20), "test": range(20, 35)}
KB = "squad-v2-dev"
OP = Caller.operator()


def questions(split: str):
    data = json.loads(SQUAD.read_text())["data"]
    answerable, unanswerable = [], []
    for ai in SPLITS[split]:
        for pi, p in enumerate(data[ai]["paragraphs"]):
            for qa in p["qas"]:
                q = " ".join(qa["question"].split()).rstrip("?").strip()
                if len(q.split()) < 4 or " and " in q.lower():
                    continue  # a question that is already two, or too short to stand as a part
                rec = {"article": ai, "question": q, "doc": f"{ai}-{pi}",
                       "golds": [a["text"] for a in qa["answers"]]}
                (unanswerable if qa.get("is_impossible") else answerable).append(rec)
    return answerable, unanswerable


def join(a: dict, b: dict) -> str:
    second = b["question"][0].lower() + b["question"][1:] if not b["question"][:2].isupper() else b["question"]
    return f"{a['question']} and {second}?"


def part_ok(answer, rec) -> bool:
    text = norm(answer.text)
    return any(norm(g) in text for g in rec["golds"]) and any(c.doc_id == rec["doc"] for c in answer.citations)


def named_missing(answer, rec) -> bool:
    """The answer names this part as not answered (generation/parts.py records each part)."""
    q = norm(rec["question"])
    return any(p.get("abstained") and norm(p["question"]) == q for p in answer.signals.get("parts", []))


def run(ws, pairs, label: str) -> dict:
    out = {}
    lat = []
    for kind in ("both answerable", "one unanswerable"):
        got = [p for p in pairs if p[0] == kind]
        ok = parts_seen = 0
        for _, a, b, a_first in got:
            ans = ws.ask([KB], join(a, b) if a_first else join(b, a), caller=OP, no_cache=True)
            lat.append(ans.timings_ms.get("total", 0.0))
            parts_seen += len(ans.signals.get("parts", [])) == 2
            if kind == "both answerable":
                ok += part_ok(ans, a) and part_ok(ans, b)
            else:
                ok += part_ok(ans, a) and named_missing(ans, b)
        out[kind] = {"pairs": len(got), "correct": round(ok / max(len(got), 1), 3), "split in two": parts_seen}
        print(label, kind, out[kind], flush=True)
    out["latency_ms_p50"] = round(percentile(lat, 50), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True, help="a data folder holding the squad-v2-dev knowledge base")
    ap.add_argument("--split", choices=list(SPLITS), default="test")
    ap.add_argument("--n", type=int, default=60, help="pairs of each kind")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "multi_part.json"))
    args = ap.parse_args()
    answerable, unanswerable = questions(args.split)
    rng = random.Random(53)
    pairs = []
    while len([p for p in pairs if p[0] == "both answerable"]) < args.n:
        a, b = rng.sample(answerable, 2)
        if a["article"] != b["article"]:
            pairs.append(("both answerable", a, b, True))
    while len([p for p in pairs if p[0] == "one unanswerable"]) < args.n:
        a, b = rng.choice(answerable), rng.choice(unanswerable)
        if a["article"] != b["article"]:
            pairs.append(("one unanswerable", a, b, rng.random() < 0.5))  # the missing part first or second
    report = {"split": args.split, "pairs per kind": args.n}
    for label, on in (("split", True), ("not split (before)", False)):
        ws = Workspace(get_settings(Path(args.data_dir), answer_cache=False, multi_part=on, query_log="off"))
        try:
            report[label] = run(ws, pairs, label)
        finally:
            ws.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
