"""Weaviate store at 10k / 100k chunks: import throughput and keyword / vector / hybrid
latency p50/p95 (same synthetic corpus and random vectors as store_latency.py), against a
running server.

    WEAVIATE_URL=http://127.0.0.1:8080 WEAVIATE_GRPC_PORT=50051 python benchmarks/weaviate_latency.py --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.store_latency import passages, queries, timed  # noqa: E402
from rag_core.models import Chunk, SearchFilters  # noqa: E402
from rag_core.stores.weaviate_store import WeaviateStore  # noqa: E402


def bench(n: int, url: str, grpc: int) -> dict:
    store = WeaviateStore(url, grpc_port=grpc, collection=f"Bench{n}")
    rng = np.random.default_rng(0)
    texts = passages(n)
    t = time.perf_counter()
    per_doc = 1000  # big "documents" = big batches: import throughput, not per-file overhead
    for d in range(0, n, per_doc):
        part = texts[d : d + per_doc]
        kb = "kb-a" if (d // per_doc) % 2 == 0 else "kb-b"
        chunks = [Chunk(chunk_id=f"{kb}/d{d}#{i}", doc_id=f"d{d}", kb_id=kb, text=x, title=f"doc {d}",
                        source=f"d{d}.txt", ordinal=i) for i, x in enumerate(part)]
        v = rng.normal(size=(len(part), 384)).astype(np.float32)
        store.add_chunks(chunks, v / np.linalg.norm(v, axis=1, keepdims=True))
    import_s = time.perf_counter() - t
    qs = queries()
    qv = rng.normal(size=(len(qs), 384)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    f = SearchFilters(kb_ids=["kb-a", "kb-b"])
    res = {"chunks": n, "import_s": round(import_s, 1), "import_chunks_per_s": round(n / import_s, 1)}
    res["keyword_p50_ms"], res["keyword_p95_ms"] = timed(lambda q: store.keyword_search(q, 10, f), qs)
    res["vector_p50_ms"], res["vector_p95_ms"] = timed(lambda i: store.vector_search(qv[i], 10, f), range(len(qs)))
    res["hybrid_p50_ms"], res["hybrid_p95_ms"] = timed(
        lambda i: store.hybrid_search(qs[i], qv[i], 10, f, alpha=0.5), range(len(qs)))
    for k, v in list(res.items()):
        if isinstance(v, float):
            res[k] = round(v, 2)
    store.client.collections.delete(store.collection_name)
    store.close()
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    a = ap.parse_args()
    url, grpc = os.environ["WEAVIATE_URL"], int(os.environ.get("WEAVIATE_GRPC_PORT", "50051"))
    for n in a.sizes:
        print(json.dumps(bench(n, url, grpc)), flush=True)
