"""Weaviate store at 10k / 100k chunks: import throughput and keyword / vector / hybrid
latency p50/p95 (same synthetic corpus and random vectors as store_latency.py).

    WEAVIATE_URL=http://127.0.0.1:8080 WEAVIATE_GRPC_PORT=50051 python benchmarks/weaviate_latency.py --sizes 10000 100000
    python benchmarks/weaviate_latency.py --local single --sizes 100000    # starts its own one-node server
    python benchmarks/weaviate_latency.py --local cluster --sizes 100000   # its own 3-node cluster, RF 3, QUORUM

With --local the server processes are ours, so their memory (RSS after import) and disk are
reported too: the per-chunk costs the README's sizing note is derived from.
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
from rag_core.errors import GroundworkError  # noqa: E402
from rag_core.models import Chunk, SearchFilters  # noqa: E402
from rag_core.stores.weaviate_store import WeaviateStore  # noqa: E402


def bench(n: int, url: str, grpc, replication_factor: int = 1) -> dict:
    store = WeaviateStore(url, grpc_port=grpc, collection=f"Bench{n}", replication_factor=replication_factor)
    rng = np.random.default_rng(0)
    texts = passages(n)
    t = time.perf_counter()
    per_doc = 1000  # big "documents" = big batches: import throughput, not per-file overhead
    refused = 0
    for d in range(0, n, per_doc):
        part = texts[d : d + per_doc]
        kb = "kb-a" if (d // per_doc) % 2 == 0 else "kb-b"
        chunks = [Chunk(chunk_id=f"{kb}/d{d}#{i}", doc_id=f"d{d}", kb_id=kb, text=x, title=f"doc {d}",
                        source=f"d{d}.txt", ordinal=i) for i, x in enumerate(part)]
        v = rng.normal(size=(len(part), 384)).astype(np.float32)
        for attempt in range(4):
            # A refused batch (on 2 shared cores a replica can miss the commit deadline while
            # three HNSW indexes build) is taken out again by add_chunks; the whole batch is
            # then sent again, as an ingest job would retry the document.
            try:
                store.add_chunks(chunks, v / np.linalg.norm(v, axis=1, keepdims=True))
                break
            except GroundworkError:
                if attempt == 3:
                    raise
                refused += 1
                time.sleep(2 ** attempt)
    import_s = time.perf_counter() - t
    qs = queries()
    qv = rng.normal(size=(len(qs), 384)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    f = SearchFilters(kb_ids=["kb-a", "kb-b"])
    res = {"chunks": n, "import_s": round(import_s, 1), "import_chunks_per_s": round(n / import_s, 1),
           "import_batches_refused_and_resent": refused, "objects_after_import": store.count()}
    res["keyword_p50_ms"], res["keyword_p95_ms"] = timed(lambda q: store.keyword_search(q, 10, f), qs)
    res["vector_p50_ms"], res["vector_p95_ms"] = timed(lambda i: store.vector_search(qv[i], 10, f), range(len(qs)))
    res["hybrid_p50_ms"], res["hybrid_p95_ms"] = timed(
        lambda i: store.hybrid_search(qs[i], qv[i], 10, f, alpha=0.5), range(len(qs)))
    for k, v in list(res.items()):
        if isinstance(v, float):
            res[k] = round(v, 2)
    res["_store"] = store
    return res


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(x.split()[1]) / 1024 for x in fh if x.startswith("VmRSS"))


def _du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) / 1e6


def local(kind: str, sizes: list[int]) -> None:
    from rag_core.stores.weaviate_local import start_cluster

    # A one-node "cluster" is the same binary and settings, so the two differ only in size.
    cluster = start_cluster(3 if kind == "cluster" else 1)
    try:
        for n in sizes:
            res = bench(n, cluster.urls, [x.grpc for x in cluster.nodes], replication_factor=len(cluster.nodes))
            store = res.pop("_store")
            time.sleep(5)  # let the nodes flush before memory and disk are read
            rss = [_rss_mb(x.proc.pid) for x in cluster.nodes]
            disk = [_du_mb(x.data) for x in cluster.nodes]
            res.update(nodes=len(cluster.nodes), replication_factor=len(cluster.nodes), consistency="QUORUM",
                       rss_mb_per_node=[round(r) for r in rss], disk_mb_per_node=[round(d) for d in disk],
                       rss_kb_per_chunk_per_copy=round(sum(rss) * 1024 / n / len(cluster.nodes), 2),
                       disk_kb_per_chunk_per_copy=round(sum(disk) * 1000 / n / len(cluster.nodes), 2))
            store.client.collections.delete(store.collection_name)
            store.close()
            print(json.dumps({"setup": kind, **res}), flush=True)
            out = Path(__file__).resolve().parent / "results" / "weaviate_cluster_latency.jsonl"
            with out.open("a") as fh:
                fh.write(json.dumps({"setup": kind, **res}) + "\n")
    finally:
        cluster.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--local", choices=["single", "cluster"], default=None)
    a = ap.parse_args()
    if a.local:
        local(a.local, a.sizes)
        sys.exit(0)
    url, grpc = os.environ["WEAVIATE_URL"], int(os.environ.get("WEAVIATE_GRPC_PORT", "50051"))
    for n in a.sizes:
        r = bench(n, url, grpc)
        s = r.pop("_store")
        s.client.collections.delete(s.collection_name)
        s.close()
        print(json.dumps(r), flush=True)
