"""False alarms of the conflict check (grounding/conflicts.py) on SQuAD, where paragraphs do
not contradict each other: every flagged answer is a false alarm.

    python benchmarks/conflicts.py --data-dir /work/cache/squad --split test --n 300 [--json]

The knowledge base is every SQuAD 2.0 dev paragraph, one document each (answer_quality.py
builds it): paragraphs of one article state many different numbers, dates and names about
related things, the hard case for a conflict check. Questions: N answerable ones of the
split (seed 0; `calib` = train-side articles 17–19, where the thresholds were checked;
`test` = the 15 held-out articles, for the report). Target: ≤ 2% of answers flagged.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.answer_quality import KB, SQUAD, build_kb, questions  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--split", choices=["calib", "test"], default="test")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    ws = Workspace(get_settings(Path(args.data_dir), llm_crag=False))
    try:
        build_kb(ws, data)
        answerable, _ = questions(data, args.split, args.n)
        answered = flagged = 0
        examples = []
        for _, q, _, _ in answerable:
            a = ws.ask([KB], q, caller=Caller.operator())
            if a.abstained:
                continue
            answered += 1
            if a.conflicts:
                flagged += 1
                if len(examples) < 10:
                    examples.append({"question": q, "conflicts": a.conflicts})
    finally:
        ws.close()
    rec = {"split": args.split, "questions": len(answerable), "answered": answered, "flagged": flagged,
           "false_alarm_rate": round(flagged / max(answered, 1), 4), "examples": examples}
    OUT.mkdir(exist_ok=True)
    (OUT / f"conflicts_squad_{args.split}.json").write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps(rec) if args.json else json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
