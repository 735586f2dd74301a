"""AUC of a reader file on held-out pairs, per task and per source (train side only): the rule
that decides whether a new epoch is kept compares this for the shipped and the candidate file.

    python training/reader/heldout_auc.py --pairs /work/cache/mix/calib.jsonl [--model FILE.onnx]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate import auc  # noqa: E402
from rag_core.reader import META_FILE, MODEL_FILE, Reader, file_sha256  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True, type=Path)
    ap.add_argument("--model", type=Path, default=MODEL_FILE)
    args = ap.parse_args()
    meta = Path("/tmp/heldout_auc_meta.json")
    meta.write_text(json.dumps({"sha256": file_sha256(args.model), "calibration": {}}))
    reader = Reader(model_file=args.model, meta_file=meta if args.model != MODEL_FILE else META_FILE)
    rows = [json.loads(x) for x in args.pairs.open()]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        src = r["kind"].split("/")[0] if "/" in r["kind"] else "squad"
        groups[f"{r['task']}"].append(i)
        groups[f"{r['task']}/{src}"].append(i)
    out = {}
    for task in ("answers", "supports"):
        idx = [i for i, r in enumerate(rows) if r["task"] == task]
        lg = reader.logits(task, [rows[i]["a"] for i in idx], [rows[i]["b"] for i in idx])
        score = dict(zip(idx, lg))
        for name, members in groups.items():
            if not name.startswith(task):
                continue
            y = np.array([rows[i]["label"] for i in members])
            s = np.array([score[i] for i in members])
            if 0 < y.sum() < len(y):
                out[name] = round(auc(s[y == 1], s[y == 0]), 4)
    print(json.dumps({"model": str(args.model), **out}))


if __name__ == "__main__":
    main()
