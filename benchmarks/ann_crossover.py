"""Exact fp32 mat-vec against one HNSW-SQ8 graph (the embedded store's two vector paths) by
collection size: per-query latency, build time, recall@10 after rescoring. Says where the
store's SEAL_ROWS sits (rows kept exact before a graph is built).

    python benchmarks/ann_crossover.py [--cache ~/.cache/groundwork-scale] > benchmarks/results/ann_crossover.json

Vectors: real passage embeddings from benchmarks/scale.py's cache, perturbed per copy as
there; queries: other passages' embeddings, perturbed more (not in the index).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.stores import vector_index as vx  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "groundwork-scale"))
    args = ap.parse_args()
    base = np.load(sorted(Path(args.cache).glob("base-*.npy"))[0])
    rng = np.random.default_rng(0)
    qs = base[rng.choice(len(base), 100)] + rng.normal(scale=0.05, size=(100, base.shape[1]))
    qs = (qs / np.linalg.norm(qs, axis=1, keepdims=True)).astype(np.float32)
    vx.EXACT_FILTERED = 0  # always the graph here (the store scans small filtered sets exactly)
    out = []
    for n in (2_000, 5_000, 10_000, 20_000, 50_000, 160_000):
        x = base[np.arange(n) % len(base)] + rng.normal(scale=0.0247, size=(n, base.shape[1]))
        x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
        t = time.perf_counter()
        for q in qs:
            np.argpartition(-(x @ q), 10)[:10]
        exact_ms = (time.perf_counter() - t) / len(qs) * 1000
        t = time.perf_counter()
        vi = vx.VectorIndex(x.shape[1])
        seg = vx.Segment(0, n, 0, x.astype(np.float16))
        seg.graph = vx.build_graph(seg.vec16)
        vi.segments, vi.n = [seg], n
        build_s = time.perf_counter() - t
        mask = np.ones(n, dtype=bool)
        t = time.perf_counter()
        got = [vi.search(q, 10, mask)[0] for q in qs]
        ann_ms = (time.perf_counter() - t) / len(qs) * 1000
        recall = np.mean([len(set(g.tolist()) & set(np.argsort(-(x @ q))[:10].tolist())) / 10 for g, q in zip(got, qs)])
        out.append({"rows": n, "exact_ms": round(exact_ms, 3), "hnsw_ms": round(ann_ms, 3),
                    "hnsw_build_s": round(build_s, 2), "hnsw_recall_at_10": round(float(recall), 4)})
        print(json.dumps(out[-1]), file=sys.stderr)
    print(json.dumps({"machine_cores": __import__("os").cpu_count(), "seal_rows": vx.SEAL_ROWS, "sizes": out}, indent=1))


if __name__ == "__main__":
    main()
