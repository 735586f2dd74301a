"""Embedded store at scale: keyword-only and vector-only latency, size on disk, memory,
incremental add/delete, and the same keyword queries on rank-bm25 and bm25s for comparison.

Corpus: SciFact abstracts cut into ~150-word passages (real English), repeated with
sentence shuffling and word dropout until N chunks exist. Vectors are random unit vectors:
vector latency does not depend on what the vectors mean, and embedding 100k passages with
the bundled model would take hours on 2 cores. Queries: the 300 SciFact claims.

    python benchmarks/store_latency.py --sizes 10000 100000 [--engines]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.access import Caller, search_filters  # noqa: E402
from rag_core.db import Database  # noqa: E402
from rag_core.models import Chunk, KnowledgeBase, SearchFilters  # noqa: E402
from rag_core.text.analysis import analyze  # noqa: E402
from rag_core.stores.embedded import EmbeddedStore  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def passages(limit: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    base = []
    with (SHARED / "beir-scifact" / "corpus.jsonl").open() as fh:
        for line in fh:
            words = (json.loads(line)["title"] + ". " + json.loads(line)["text"]).split()
            for i in range(0, len(words), 150):
                if len(words[i : i + 150]) > 30:
                    base.append(" ".join(words[i : i + 150]))
    out = list(base)
    while len(out) < limit:
        src = rng.choice(base).split(". ")
        rng.shuffle(src)
        words = ". ".join(src).split()
        out.append(" ".join(w for w in words if rng.random() > 0.1))
    return out[:limit]


def queries() -> list[str]:
    with (SHARED / "beir-scifact" / "queries.jsonl").open() as fh:
        return [json.loads(l)["text"] for l in fh]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def timed(fn, qs) -> tuple[float, float]:
    lat = []
    for q in qs:
        t = time.perf_counter()
        fn(q)
        lat.append((time.perf_counter() - t) * 1000)
    return pct(lat, 50), pct(lat, 95)


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def bench(n: int, engines: bool, keep: Path | None) -> dict:
    texts = passages(n)
    rng = np.random.default_rng(0)
    tmp = Path(tempfile.mkdtemp(prefix="gw-bench-"))
    db = Database(tmp / "groundwork.db")
    store = EmbeddedStore(db)
    t0 = time.perf_counter()
    per_doc = 10
    for d in range(0, n, per_doc):
        part = texts[d : d + per_doc]
        kb = "kb-a" if (d // per_doc) % 2 == 0 else "kb-b"
        chunks = [
            Chunk(chunk_id=f"{kb}/d{d}#{i}", doc_id=f"d{d}", kb_id=kb, text=t, title=f"doc {d}", source=f"d{d}.txt", ordinal=i)
            for i, t in enumerate(part)
        ]
        v = rng.normal(size=(len(part), 384)).astype(np.float32)
        store.add_chunks(chunks, v / np.linalg.norm(v, axis=1, keepdims=True))
    build_s = time.perf_counter() - t0
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size_mb = sum(f.stat().st_size for f in tmp.iterdir()) / 1e6

    qs = queries()
    qvecs = rng.normal(size=(len(qs), 384)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    everything = SearchFilters()
    one_kb = SearchFilters(kb_ids=["kb-a"])
    # what the access policy hands the store for a caller: the knowledge bases they may see
    kbs = [KnowledgeBase(kb_id="kb-a", name="a"), KnowledgeBase(kb_id="kb-b", name="b", acl_groups=["staff"]),
           KnowledgeBase(kb_id="kb-c", name="c", acl_users=["bob"])]
    access = search_filters(Caller(user="ann", groups=frozenset({"staff"}), tenant=None, admin=False), kbs)
    store.keyword_search(qs[0], 10, everything)  # warm the page cache once
    res = {"chunks": n, "build_s": round(build_s, 1), "disk_mb": round(size_mb, 1)}
    res["keyword_p50_ms"], res["keyword_p95_ms"] = timed(lambda q: store.keyword_search(q, 10, everything), qs)
    res["keyword_kb_filter_p50_ms"], res["keyword_kb_filter_p95_ms"] = timed(lambda q: store.keyword_search(q, 10, one_kb), qs)
    it = iter(range(10**9))
    res["vector_p50_ms"], res["vector_p95_ms"] = timed(lambda q: store.vector_search(qvecs[next(it) % len(qvecs)], 10, everything), qs)
    it = iter(range(10**9))
    res["vector_access_filter_p50_ms"], res["vector_access_filter_p95_ms"] = timed(
        lambda q: store.vector_search(qvecs[next(it) % len(qvecs)], 10, access), qs
    )
    # incremental update: add one 100-chunk document, delete it again
    chunks = [Chunk(chunk_id=f"kb-a/new#{i}", doc_id="new", kb_id="kb-a", text=texts[i], ordinal=i) for i in range(100)]
    v = rng.normal(size=(100, 384)).astype(np.float32)
    t = time.perf_counter()
    store.add_chunks(chunks, v)
    res["add_100_chunks_ms"] = round((time.perf_counter() - t) * 1000, 1)
    t = time.perf_counter()
    store.delete_document("kb-a", "new")
    res["delete_doc_ms"] = round((time.perf_counter() - t) * 1000, 1)
    db.close()
    store = None  # drop the in-memory index before the cold open measures a fresh one
    import gc

    gc.collect()
    # cold open: a new process/app start reads vectors back from SQLite
    t = time.perf_counter()
    db2 = Database(tmp / "groundwork.db")
    EmbeddedStore(db2)
    res["open_s"] = round(time.perf_counter() - t, 2)
    res["rss_mb"] = round(rss_mb(), 0)
    db2.close()

    if engines:
        tok = [analyze(t) for t in texts]
        qtok = [analyze(q) for q in qs]
        from rank_bm25 import BM25Okapi

        t = time.perf_counter()
        bm = BM25Okapi(tok)
        res["rank_bm25_build_s"] = round(time.perf_counter() - t, 1)
        sample = qtok[:: max(1, len(qtok) // 60)]  # rank-bm25 scores every document: sample queries
        res["rank_bm25_p50_ms"], res["rank_bm25_p95_ms"] = timed(lambda q: np.argpartition(-bm.get_scores(q), 10)[:10], sample)
        import bm25s

        t = time.perf_counter()
        r = bm25s.BM25()
        r.index(tok, show_progress=False)
        res["bm25s_build_s"] = round(time.perf_counter() - t, 1)
        res["bm25s_p50_ms"], res["bm25s_p95_ms"] = timed(lambda q: r.retrieve([q], k=10, show_progress=False), qtok)
    for k, v in list(res.items()):
        if isinstance(v, float):
            res[k] = round(v, 2)
    if keep:
        shutil.copytree(tmp, keep / f"store-{n}", dirs_exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--engines", action="store_true", help="also time rank-bm25 and bm25s on the same corpus")
    args = ap.parse_args()
    if not (SHARED / "beir-scifact").exists():
        sys.exit("needs ../shared/data/beir-scifact")
    print(json.dumps({"machine": f"{os.cpu_count()} cores", "python": sys.version.split()[0]}))
    for n in args.sizes:
        print(json.dumps(bench(n, args.engines, None)), flush=True)


if __name__ == "__main__":
    main()
