"""The shipped int8 reader back to trainable fp32 weights, so a new epoch can start from what
ships (the fp32 run folders are not kept in the repo: only the int8 file is).

    .venv-train/bin/python training/reader/warm_start.py --out /work/cache/shipped    # then train.py --init /work/cache/shipped/final

Every quantised MatMul's weight is dequantised per output channel ((q - zero_point) × scale)
and named after the bias its Add node reads (`…query.bias` → `…query.weight`, transposed to
torch's [out, in]); the int8 word-embedding rows are multiplied back by their scales. The
result is checked against the int8 file on real pairs (correlation of the logits ≥ 0.99)
before it is written: dequantisation noise is what fine-tuning starts from, not a new model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

sys.path.insert(0, str(Path(__file__).parent))
from onnx_graph import bias_after, load_graph  # noqa: E402
from train import base_model_dir, encode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "rag_core" / "reader" / "model" / "reader-int8.onnx"


def weights_from_onnx(path: Path) -> dict[str, np.ndarray]:
    g, init, consumers = load_graph(path)
    out: dict[str, np.ndarray] = {}
    for name, arr in init.items():
        if name.endswith(("LayerNorm.weight", "LayerNorm.bias", ".bias", "position_embeddings.weight",
                          "token_type_embeddings.weight")) and name.startswith("model."):
            out[name[len("model."):]] = arr.astype(np.float32)
    out["bert.embeddings.word_embeddings.weight"] = (
        init["model.bert.embeddings.word_embeddings.q"].astype(np.float32)
        * init["model.bert.embeddings.word_embeddings.scale"].astype(np.float32))
    for n in g.node:
        if n.op_type != "MatMulInteger":
            continue
        wq, wzp = n.input[1], n.input[3]
        base = wq[: -len("_quantized")]
        w = (init[wq].astype(np.float32) - init[wzp].astype(np.float32)[None, :]) * init[base + "_scale"][None, :]
        bias = bias_after(n.output[0], consumers, init, hops=6)  # Cast → Mul → Add
        if bias is None:
            raise SystemExit(f"no bias found after {wq}: the graph is not the one export.py writes")
        out[bias[len("model."):-len(".bias")] + ".weight"] = w.T.copy()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default=str(MODEL))
    args = ap.parse_args()
    state = weights_from_onnx(Path(args.model))
    model = AutoModelForSequenceClassification.from_pretrained(base_model_dir(), num_labels=1)
    own = model.state_dict()
    missing = [k for k in own if k not in state and "position_ids" not in k]
    if missing:
        raise SystemExit(f"weights not found in the ONNX file: {missing[:5]}")
    model.load_state_dict({k: torch.from_numpy(state[k]) if k in state else v for k, v in own.items()})
    model.eval()
    tok = AutoTokenizer.from_pretrained(base_model_dir())
    rows = [{"task": "answers", "a": "When was Harvard founded?", "b": "Harvard | Harvard was founded in 1636."},
            {"task": "answers", "a": "When was Harvard founded?", "b": "Harvard | Harvard holds two million volumes."},
            {"task": "supports", "a": "Harvard was founded in 1636.", "b": "The college was founded in 1636 by vote."},
            {"task": "supports", "a": "Harvard was founded in 1850.", "b": "The college was founded in 1636 by vote."},
            {"task": "answers", "a": "How do I quit R?", "b": "R | Use q() to end the R session."},
            {"task": "answers", "a": "How do I quit R?", "b": "R | R is a language for statistical computing."},
            {"task": "relevant", "a": "volcano eruptions", "b": "Geo | Magma rises and erupts through vents."},
            {"task": "relevant", "a": "volcano eruptions", "b": "Tax | Income tax is due in April."}]
    with torch.no_grad():
        ref = model(**encode(tok, rows)).logits[:, 0].numpy()
    import onnxruntime as ort

    sess = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    e = encode(tok, rows)
    got = sess.run(None, {k: e[k].numpy() for k in ("input_ids", "attention_mask", "token_type_ids")})[0]
    corr = float(np.corrcoef(got, ref)[0, 1])
    print(json.dumps({"corr_int8_vs_restored": round(corr, 5), "max_abs_diff": round(float(np.abs(got - ref).max()), 4)}))
    if corr < 0.99:
        raise SystemExit("restored weights disagree with the int8 file: not writing them")
    dest = Path(args.out) / "final"
    model.save_pretrained(dest)
    tok.save_pretrained(dest)
    print(json.dumps({"saved": str(dest)}))


if __name__ == "__main__":
    main()
