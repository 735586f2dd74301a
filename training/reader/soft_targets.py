"""Soft targets for a new reader epoch that must not forget what ships (issue 25).

    python training/reader/soft_targets.py --mix /work/cache/mix --out /work/cache/mix-lwf --alpha 0.5

Every earlier documentation epoch lost Wikipedia evidence-first (0.847 -> 0.827) while it learned
the manuals: plain fine-tuning on the mixture drifts away from the SQuAD judgement. This writes
the mixture again with each make_data.py row's label (SQuAD, and SciFact for `supports`/`relevant`) replaced by
``alpha * hard label + (1 - alpha) * sigmoid(shipped reader's raw logit)`` ("learning without
forgetting", Li & Hoiem 2016: the old task's rows are fitted to the old model's own outputs),
so the epoch is pulled back to the shipped reader on Wikipedia and learns documentation and
science from their hard labels. The teacher is the int8 file that ships, read with the runtime
(onnxruntime), so the targets are what users get today. The new rows (SciFact claims as yes/no
`answers`, documentation) keep their hard labels; calib.jsonl and docs_heldout.jsonl are copied unchanged (hard labels, for
the report and calibration).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from rag_core.reader import Reader  # noqa: E402


def is_old_task(row: dict) -> bool:
    """Rows from make_data.py, the data the shipped reader was trained on (SQuAD train side, and
    SciFact train claims for `supports` and `relevant`), carry kinds with no source prefix;
    mix_data.py's new rows are `scifact/...` (claims as yes/no `answers`) and `<source>/...`
    (documentation)."""
    return "/" not in row.get("kind", "")


def soften(rows: list[dict], logits: np.ndarray, alpha: float) -> list[dict]:
    out = []
    for r, z in zip(rows, logits):
        p = 1.0 / (1.0 + np.exp(-float(z)))
        out.append({**r, "label": round(alpha * float(r["label"]) + (1 - alpha) * p, 5), "hard": r["label"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mix", required=True, type=Path, help="mix_data.py's output folder")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--alpha", type=float, default=0.5, help="weight of the hard label on make_data.py rows")
    args = ap.parse_args()
    rows = [json.loads(x) for x in (args.mix / "train.jsonl").open()]
    reader = Reader()
    old_idx = [i for i, r in enumerate(rows) if is_old_task(r)]
    t0 = time.time()
    by_task: dict[str, list[int]] = {}
    for i in old_idx:
        by_task.setdefault(rows[i]["task"], []).append(i)
    for task, idx in by_task.items():
        lg = reader.logits(task, [rows[i]["a"] for i in idx], [rows[i]["b"] for i in idx])
        for i, r in zip(idx, soften([rows[i] for i in idx], lg, args.alpha)):
            rows[i] = r
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "train.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    for name in ("calib.jsonl", "docs_heldout.jsonl"):
        shutil.copy(args.mix / name, args.out / name)
    soft = np.array([rows[i]["label"] for i in old_idx])
    hard = np.array([rows[i]["hard"] for i in old_idx])
    print(json.dumps({"rows": len(rows), "softened": len(old_idx), "seconds": round(time.time() - t0, 1),
                      "mean_target_pos": round(float(soft[hard == 1].mean()), 4),
                      "mean_target_neg": round(float(soft[hard == 0].mean()), 4)}))


if __name__ == "__main__":
    main()
