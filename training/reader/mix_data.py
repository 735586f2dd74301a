"""The training mixture for a new reader epoch (issue 25): SQuAD train-side pairs (make_data.py),
SciFact *train* claims as yes/no questions against their abstracts' evidence and topical
sentences, and documentation pairs mined from Debian packages (mine_docs.py), a tenth of whose
questions are held out for calibration and the AUC report.

    python training/reader/make_data.py --out /work/cache/pairs
    python training/reader/mine_docs.py --cache /work/cache/debdocs --out /work/cache/pairs/docs.jsonl
    python training/reader/mix_data.py --squad /work/cache/pairs --docs /work/cache/pairs/docs.jsonl \
        --out /work/cache/mix --squad-n 14000

Writes OUT/train.jsonl, OUT/calib.jsonl (SQuAD calib + held-out docs, for train.py's report)
and OUT/docs_heldout.jsonl (for calibrate.py --docs). Every row's source passes
make_data.assert_not_evaluation.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import domain_pairs  # noqa: E402
from make_data import answers_text, assert_not_evaluation  # noqa: E402

from rag_core.text.sentences import split_sentences  # noqa: E402


def read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.open()]


def heldout(question: str, share: float = 0.1) -> bool:
    """A stable split by question text: the same question is always on the same side."""
    return int(hashlib.sha256(question.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


def scifact_rows(rng: random.Random, context_share: float = 0.0, heldout_share: float = 0.0) -> list[dict]:
    """SciFact train claims as yes/no `answers` rows; claims that `heldout(claim, heldout_share)`
    picks are left out, so calibrate.py can use them as a held-out science domain."""
    rows = []
    for it in domain_pairs.scifact("claims_train.csv"):
        if heldout_share and heldout(it["q"], heldout_share):
            continue
        sents = split_sentences(it["passage"])

        def b(s: str, it=it, sents=sents) -> str:
            return answers_text(it["title"], s, sents, context_share, rng)

        rows.append({"task": "answers", "a": it["q"], "b": b(it["evidence"]), "label": 1, "kind": "scifact/evidence"})
        rows.append({"task": "answers", "a": it["q"], "b": b(it["topical"]), "label": 0, "kind": "scifact/topical"})
        others = [s for s in sents if s not in (it["evidence"], it["topical"]) and len(s.split()) > 5]
        for s in rng.sample(others, min(1, len(others))):
            rows.append({"task": "answers", "a": it["q"], "b": b(s), "label": 0, "kind": "scifact/other_sentence"})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--squad", required=True, type=Path, help="make_data.py's output folder")
    ap.add_argument("--docs", required=True, type=Path, help="mine_docs.py's JSONL")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--squad-n", type=int, default=14000, help="SQuAD train pairs kept (a random sample, all tasks)")
    ap.add_argument("--docs-n", type=int, default=0, help="documentation pairs kept for training (0 = all)")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--context-share", type=float, default=0.0,
                    help="share of SciFact answers rows read with their neighbouring sentences (as make_data.py)")
    ap.add_argument("--scifact-heldout", type=float, default=0.0,
                    help="share of SciFact train claims kept out of training (calibrate.py --scifact-heldout)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    squad = read(args.squad / "train.jsonl")
    squad = rng.sample(squad, min(args.squad_n, len(squad)))
    docs_train, docs_held = [], []
    for r in read(args.docs):
        # document level, as mine_docs.py applies it (an entry's text may mention "-R" options)
        assert_not_evaluation(r.get("kind", "").split("/")[0])
        title, sep, _ = r["b"].partition(" | ")
        if sep:
            assert_not_evaluation(title)
        (docs_held if heldout(r["a"]) else docs_train).append(r)
    if args.docs_n:
        docs_train = rng.sample(docs_train, min(args.docs_n, len(docs_train)))
    train = squad + scifact_rows(rng, args.context_share, args.scifact_heldout) + docs_train
    rng.shuffle(train)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("calib", read(args.squad / "calib.jsonl") + docs_held),
                       ("docs_heldout", docs_held)):
        with (args.out / f"{name}.jsonl").open("w") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    counts = Counter((r["kind"].split("/")[0] if "/" in r["kind"] else "squad", r["task"], r["label"]) for r in train)
    print(json.dumps({"train": len(train), "docs_heldout": len(docs_held),
                      "by_source": {f"{s}/{t}/{y}": n for (s, t, y), n in sorted(counts.items())}}))


if __name__ == "__main__":
    main()
