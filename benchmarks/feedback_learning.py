"""Does feedback improve answers? A simulated user on the SQuAD train side.

    python benchmarks/feedback_learning.py --data-dir /work/cache/squad [--share 0.5] [--json]

The knowledge base is every SQuAD 2.0 dev paragraph (answer_quality.py builds it; the data
folder is copied to a temporary one first, so the feedback given here is not left behind).
Only train-side articles (v2.0 positions 0–19, SPLIT.md) give questions:
- the "taught" articles (even positions): `--share` of each article's answerable questions
  are asked and rated from the gold labels, as a careful user would: thumbs up when the
  answer cites the gold paragraph, else thumbs down "wrong source";
- the other questions of those articles ("same articles, other questions") and every
  question of the odd-position articles ("unrelated") are never rated: they are measured
  before and after; so are the rated questions themselves, asked again ("rated again":
  a repeat, by the same or another user).
Reported per group: P@5 (share of the top 5 passages that come from the gold paragraph; a
long paragraph may be two chunks, so it can pass 0.2) and hit@1 over every question of the
group, and correct answers (the answer contains a gold answer and cites the gold paragraph;
abstentions count as not correct) over a fixed sample of `--answers` questions.
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
from benchmarks.answer_quality import KB, SQUAD, build_kb, norm  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.retrieval.feedback_signals import BOUND, SIM_MIN  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OP = Caller.operator()


def questions(data: dict, seed: int, share: float):
    taught, held, unrelated = [], [], []
    rng = random.Random(seed)
    for ai in range(20):  # train side only
        art = data["data"][ai]
        items = [(qa["question"], f"{ai}-{pi}", [a["text"] for a in qa["answers"]])
                 for pi, p in enumerate(art["paragraphs"]) for qa in p["qas"] if not qa.get("is_impossible")]
        if ai % 2:
            unrelated += items
            continue
        rng.shuffle(items)
        cut = int(len(items) * share)
        taught += items[:cut]
        held += items[cut:]
    return taught, held, unrelated


def measure(ws: Workspace, items, answer_sample: int, seed: int, mode: str) -> dict:
    """Retrieval over every question of the group; answers over a fixed sample of it (the
    chain costs ~0.4 s a question on 2 cores)."""
    p5 = hit1 = 0
    for q, gold, _ in items:
        r = ws.search([KB], q, caller=OP, mode=mode).results  # the chain's own retrieval (MMR, budget)
        docs = [x.chunk.doc_id for x in r[:5]]
        p5 += sum(d == gold for d in docs) / 5
        hit1 += bool(docs) and docs[0] == gold
    n = max(len(items), 1)
    out = {"questions": len(items), "p_at_5": round(p5 / n, 4), "hit_at_1": round(hit1 / n, 4)}
    if answer_sample:
        sample = random.Random(seed).sample(items, min(answer_sample, len(items)))
        correct = 0
        for q, gold, golds in sample:
            a = ws.ask([KB], q, caller=OP)
            correct += (not a.abstained and any(norm(g) in norm(a.text) for g in golds)
                        and any(c.doc_id == gold for c in a.citations))
        out.update(answered_sample=len(sample), correct=round(correct / max(len(sample), 1), 4))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True, help="a data folder holding the SQuAD knowledge base (or to build it)")
    ap.add_argument("--share", type=float, default=0.5, help="share of a taught article's questions that are rated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--answers", type=int, default=200, help="questions per group whose answers are checked")
    ap.add_argument("--mode", choices=["hybrid", "keyword", "vector"], default="hybrid",
                    help="retrieval mode measured (answers always use the knowledge base's settings)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(args.data_dir)
        for f in src.glob("groundwork.db*"):
            shutil.copy(f, Path(tmp) / f.name)
        ws = Workspace(get_settings(Path(tmp), llm_crag=False))
        try:
            build_kb(ws, data)
            taught, held, unrelated = questions(data, args.seed, args.share)
            def both() -> dict:
                return {"same_articles": measure(ws, held, args.answers, args.seed, args.mode),
                        "unrelated": measure(ws, unrelated, args.answers, args.seed, args.mode),
                        # the rated questions asked again (by anyone): what a record is sure to reach
                        "rated_again": measure(ws, taught, 0, args.seed, args.mode)}

            before = both()
            fb = ws.feedback_for(caller=OP)
            ups = downs = 0
            for q, gold, _ in taught:
                a = ws.ask([KB], q, caller=OP)
                if a.abstained or not a.citations:
                    continue  # nothing cited: nothing a user could rate about passages
                qid = fb.log_answer(a, [ws.get_kb(KB, caller=OP).kb_id])
                if any(c.doc_id == gold for c in a.citations):
                    fb.rate(qid, 1)
                    ups += 1
                else:
                    fb.rate(qid, -1, reason="wrong source")
                    downs += 1
            after = both()
        finally:
            ws.close()
    rec = {"share": args.share, "seed": args.seed, "mode": args.mode, "sim_min": SIM_MIN, "bound": BOUND, "rated_questions": len(taught), "thumbs_up": ups,
           "thumbs_down": downs, "before": before, "after": after,
           "delta": {g: {k: round(after[g][k] - before[g][k], 4) for k in before[g]
                         if k not in ("questions", "answered_sample")}
                     for g in before}}
    out = Path(__file__).resolve().parent / "results" / f"feedback_learning_{args.mode}.json"
    out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps(rec) if args.json else json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
