"""Retrieval latency per stage at 10k and 100k chunks: query embedding (real model),
keyword, vector, fusion, rerank, total; p50/p95 over the 300 SciFact claims; and memory.

The corpus is store_latency.py's (real SciFact text, repeated and perturbed to size; random
stored vectors, because latency does not depend on what they mean).

    python benchmarks/retrieval_latency.py --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.store_latency import passages, pct, queries, rss_mb  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.db import Database  # noqa: E402
from rag_core.embeddings import get_embedder  # noqa: E402
from rag_core.models import Chunk, RetrievalSettings, SearchFilters  # noqa: E402
from rag_core.retrieval.pipeline import RetrievalPipeline  # noqa: E402
from rag_core.retrieval.rerank import FeatureReranker  # noqa: E402
from rag_core.stores.embedded import EmbeddedStore  # noqa: E402


def build(n: int, folder: Path) -> EmbeddedStore:
    store = EmbeddedStore(Database(folder / "groundwork.db"))
    rng = np.random.default_rng(0)
    texts = passages(n)
    for d in range(0, n, 10):
        part = texts[d : d + 10]
        kb = "kb-a" if (d // 10) % 2 == 0 else "kb-b"
        chunks = [Chunk(chunk_id=f"{kb}/d{d}#{i}", doc_id=f"d{d}", kb_id=kb, text=t, title=f"doc {d}",
                        source=f"d{d}.txt", ordinal=i) for i, t in enumerate(part)]
        v = rng.normal(size=(len(part), 384)).astype(np.float32)
        store.add_chunks(chunks, v / np.linalg.norm(v, axis=1, keepdims=True))
    return store


def bench(n: int) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="gw-rl-"))
    build(n, tmp)
    store = EmbeddedStore(Database(tmp / "groundwork.db"))  # fresh open, as the app would
    emb = get_embedder(get_settings())
    pipe = RetrievalPipeline(store, emb, FeatureReranker(idf=store.idf))
    qs = queries()
    filters = SearchFilters(kb_ids=["kb-a", "kb-b"])
    out = []
    for rerank in (False, True):
        settings = RetrievalSettings(top_k=10, rerank=rerank, mmr_lambda=1.0, context_tokens=0)
        pipe.run(qs[0], filters, settings)  # warm-up
        stages: dict[str, list[float]] = {}
        for q in qs:
            r = pipe.run(q, filters, settings)
            for k, v in r.timings_ms.items():
                stages.setdefault(k, []).append(v)
        row = {"chunks": n, "rerank": rerank, "queries": len(qs)}
        for k, v in stages.items():
            row[f"{k}_p50_ms"] = round(pct(v, 50), 2)
            row[f"{k}_p95_ms"] = round(pct(v, 95), 2)
        without_embed = [t - e for t, e in zip(stages["total"], stages.get("embed", [0] * len(qs)))]
        row["total_without_embed_p50_ms"] = round(pct(without_embed, 50), 2)
        row["total_without_embed_p95_ms"] = round(pct(without_embed, 95), 2)
        row["rss_mb"] = round(rss_mb())
        out.append(row)
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    args = ap.parse_args()
    print(json.dumps({"machine": f"{os.cpu_count()} cores", "note": "hybrid alpha 0.5, top_k 10, rerank depth 30"}))
    for n in args.sizes:
        for row in bench(n):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
