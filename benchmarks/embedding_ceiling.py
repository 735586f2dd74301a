"""How close the bundled embedder gets to this machine's ceiling.

Measures, in one run:
- the machine's matmul peak: numpy fp32 2048×2048 matmul on all cores (best of 5);
- the embedder on SciFact abstracts (title + text, as ingested), for several batch token
  budgets: texts/s, the model FLOPs it does per second, and that as a share of the peak;
- tokenizer cost and padding waste.

MiniLM-L6 FLOPs per text of L tokens (d = 384, FFN 1536, 6 layers; multiply-add = 2):
6 × (8·L·d² + 4·L·d·1536 + 4·L²·d), i.e. ≈ 2.9 GFLOP at L = 128 and ≈ 6.0 at L = 256.

    python benchmarks/embedding_ceiling.py [--n 400]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CORPUS = REPO.parent / "shared" / "data" / "beir-scifact" / "corpus.jsonl"
D, FF, LAYERS = 384, 1536, 6


def flops(L: int) -> float:
    return LAYERS * (8 * L * D * D + 4 * L * D * FF + 4 * L * L * D)


def matmul_peak(n: int = 2048, reps: int = 5) -> float:
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    a @ b
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400, help="abstracts to embed per setting")
    args = ap.parse_args()
    from rag_core.embeddings import MiniLMEmbeddings

    texts = []
    with CORPUS.open() as f:
        for line in f:
            d = json.loads(line)
            texts.append(f"{d.get('title', '')}\n{d['text']}")
            if len(texts) >= args.n:
                break
    peak = matmul_peak()
    m = MiniLMEmbeddings(max_tokens=256)
    t = time.perf_counter()
    enc = m.tokenizer.encode_batch(texts)
    tok_s = time.perf_counter() - t
    lengths = [len(e.ids) for e in enc]
    work = sum(flops(L) for L in lengths)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; numpy fp32 matmul peak {peak:.0f} GFLOP/s")
    print(f"texts: {len(texts)} SciFact abstracts, {np.mean(lengths):.0f} tokens on average "
          f"({np.mean(np.array(lengths) >= 256):.0%} truncated at 256); model work {work / len(texts) / 1e9:.2f} "
          f"GFLOP per text; tokenizer {tok_s / len(texts) * 1000:.2f} ms per text")
    print(f"fp32 ceiling at this peak: {peak * 1e9 / (work / len(texts)):.0f} texts/s")
    for budget in (256, 512, 1024, 4096):
        m.batch_tokens = budget
        batches = m.batches(lengths)
        padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
        m.embed_array(texts[:16])
        t = time.perf_counter()
        m.embed_array(texts)
        dt = time.perf_counter() - t
        rate = len(texts) / dt
        print(f"budget {budget:>5} tokens/batch: {rate:5.1f} texts/s, {work / dt / 1e9:5.0f} GFLOP/s = "
              f"{work / dt / 1e9 / peak:.0%} of the fp32 peak; padding waste {padded / sum(lengths) - 1:.1%}; "
              f"{rate / peak:.3f} texts/s per GFLOP/s of peak")


if __name__ == "__main__":
    main()
