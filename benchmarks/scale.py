"""The embedded store at scale: build N chunks through the product's own store code in a
temporary folder, then open it cold in a fresh process and measure what a user would feel.

    python benchmarks/scale.py --chunks 100000 --json

Prints one JSON object: chunks, rss_mb (the serving process's peak while querying, after a
cold start), disk_mb (snapshot_disk_mb of it the persisted index), build_s (ingest_s, then
close_s: the graphs still pending and the snapshot), cold_start_s, hybrid_p50_ms /
hybrid_p95_ms, vector_*, filtered_hybrid_* and filtered_vector_* (each including the query's
embedding by the real model; filtered: a knowledge base holding 1%), vector_recall_at_10 and
filtered_recall_at_10 (the store's vector search against exact fp32 search over the vectors
in SQLite, computed in the parent so the reference is not in the serving process's RSS), and
what writes do to searches (`write_stall`: 5,000 chunks added while a thread searches, the
longest write-lock hold, and a forced keyword merge).

Data (built here, never shipped): the distinct passages of ../shared/data (SciFact, Vaswani,
SQuAD paragraphs, ~17.8k) are embedded once with the real model and cached outside the repo
(`--cache`, default ~/.cache/groundwork-scale). Chunk i takes passage i mod P, varied by a
title and a recombination of its sentences with a neighbour's (real text for the keyword
side), and a vector derived from the passage's real embedding by a small perturbation
(cosine ≈ 0.9 to it), so neighbourhoods look like real ones. Chunks go to 100 knowledge bases
in turn (one of them is the 1% filter), 100 chunks per document. Queries are real questions
(SciFact claims, Vaswani queries, SQuAD questions) embedded at query time: their vectors are
not in the index.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
KBS = 100
DOC = 100
NOISE = 0.0247  # per-dimension std: cos(perturbed, original) ≈ 1 / sqrt(1 + 384·σ²) ≈ 0.9


def base_passages() -> list[tuple[str, str]]:
    """(title, text) of every distinct passage in ../shared/data."""
    seen, out = set(), []

    def add(title: str, text: str) -> None:
        key = text.strip()
        if key and key not in seen:
            seen.add(key)
            out.append((title.strip(), key))

    with (SHARED / "beir-scifact" / "corpus.jsonl").open() as fh:
        for line in fh:
            r = json.loads(line)
            add(r.get("title", ""), r["text"])
    with (SHARED / "vaswani-npl" / "beir-format" / "corpus.jsonl").open() as fh:
        for line in fh:
            r = json.loads(line)
            add(r.get("title", ""), r["text"])
    squad = json.loads((SHARED / "squad-dev" / "dev-v2.0-reconstructed.json").read_text())
    for art in squad["data"]:
        for p in art["paragraphs"]:
            add(art["title"].replace("_", " "), p["context"])
    return out


def question_texts(n: int) -> list[str]:
    qs = []
    with (SHARED / "beir-scifact" / "queries.jsonl").open() as fh:
        qs += [json.loads(line)["text"] for line in fh]
    with (SHARED / "vaswani-npl" / "beir-format" / "queries.jsonl").open() as fh:
        qs += [json.loads(line)["text"] for line in fh]
    squad = json.loads((SHARED / "squad-dev" / "dev-v2.0-reconstructed.json").read_text())
    qs += [qa["question"] for art in squad["data"] for p in art["paragraphs"] for qa in p["qas"]][::25]
    random.Random(0).shuffle(qs)
    return qs[:n]


def cached_embeddings(cache: Path) -> tuple[list[tuple[str, str]], np.ndarray]:
    cache.mkdir(parents=True, exist_ok=True)
    texts = base_passages()
    f = cache / f"base-{len(texts)}.npy"
    if f.exists():
        return texts, np.load(f)
    from rag_core.config import get_settings
    from rag_core.embeddings import get_embedder

    emb = get_embedder(get_settings(cache / "tmp-data"))
    t = time.perf_counter()
    vecs = np.concatenate([emb.embed_array([f"{a}\n{b}" for a, b in texts[i : i + 256]])
                           for i in range(0, len(texts), 256)]).astype(np.float32)
    np.save(f, vecs)
    print(json.dumps({"embedded_base_passages": len(texts), "seconds": round(time.perf_counter() - t, 1)}),
          file=sys.stderr)
    return texts, vecs


_SENT = re.compile(r"(?<=[.!?])\s+")


def chunk_text(i: int, texts: list[tuple[str, str]]) -> tuple[str, str]:
    """Passage i mod P, varied: a numbered title, and its sentences recombined with a
    neighbour's when the copy is not the first."""
    b = i % len(texts)
    title, text = texts[b]
    copy = i // len(texts)
    if copy:
        mine = _SENT.split(text)
        other = _SENT.split(texts[(b + copy) % len(texts)][1])
        rng = random.Random(i)
        k = max(1, len(mine) - 1)
        text = " ".join(mine[:k] + rng.sample(other, min(1, len(other))))
    return f"{title} (part {copy + 1})" if copy else title, text


def build(n: int, folder: Path, cache: Path) -> dict:
    from rag_core.db import Database
    from rag_core.models import Chunk
    from rag_core.stores.embedded import EmbeddedStore

    texts, base = cached_embeddings(cache)
    rng = np.random.default_rng(0)
    store = EmbeddedStore(Database(folder / "groundwork.db"))
    t = time.perf_counter()
    for d in range(0, n, DOC):
        ids = range(d, min(n, d + DOC))
        kb = f"kb{(d // DOC) % KBS}"
        chunks = []
        for i in ids:
            title, text = chunk_text(i, texts)
            chunks.append(Chunk(chunk_id=f"{kb}/d{d}#{i - d}", doc_id=f"d{d}", kb_id=kb, text=text, title=title,
                                source=f"d{d}.txt", ordinal=i - d))
        v = base[[i % len(texts) for i in ids]] + rng.normal(scale=NOISE, size=(len(chunks), base.shape[1]))
        store.add_chunks(chunks, (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32))
    ingest_s = time.perf_counter() - t
    store.close()  # the graphs still pending, and the snapshot the next open maps
    build_s = time.perf_counter() - t
    store.db.close()
    return {"build_s": round(build_s, 1), "ingest_s": round(ingest_s, 1), "close_s": round(build_s - ingest_s, 1)}


def serve(folder: Path, n_queries: int) -> dict:
    """Runs in a fresh process: cold start, then queries; peak RSS of this process."""
    from rag_core.config import get_settings
    from rag_core.db import Database
    from rag_core.embeddings import get_embedder
    from rag_core.models import SearchFilters
    from rag_core.stores.embedded import EmbeddedStore

    emb = get_embedder(get_settings(folder))
    emb.embed_array(["warm up"])
    qs = question_texts(n_queries)
    t = time.perf_counter()
    store = EmbeddedStore(Database(folder / "groundwork.db"))
    cold = time.perf_counter() - t
    everything, one_kb = SearchFilters(), SearchFilters(kb_ids=["kb7"])
    lat = {"hybrid": [], "vector": [], "filtered_hybrid": [], "filtered_vector": []}
    qvecs, got_ids = [], []
    for q in qs:
        t = time.perf_counter()
        v = emb.embed_array([q])[0]
        store.hybrid_search(q, v, 10, everything)
        lat["hybrid"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        v = emb.embed_array([q])[0]
        got = store.vector_search(v, 10, everything)
        lat["vector"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        v = emb.embed_array([q])[0]
        store.hybrid_search(q, v, 10, one_kb)
        lat["filtered_hybrid"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        v = emb.embed_array([q])[0]
        fgot = store.vector_search(v, 10, one_kb)
        lat["filtered_vector"].append((time.perf_counter() - t) * 1000)
        qvecs.append(v)
        got_ids.append(([_row(store, r) for r in got], [_row(store, r) for r in fgot]))
    rss = peak_rss_mb()
    stall = write_stall(store, emb, qs, folder)
    # the exact reference is computed by the parent, so its fp32 vectors are not in this RSS
    np.save(folder / "queries.npy", np.stack(qvecs))
    (folder / "got.json").write_text(json.dumps(got_ids))

    def pct(xs, p):
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 2)

    return {
        "cold_start_s": round(cold, 2),
        "snapshot_loaded": store.snapshot_loaded,
        "rss_mb": round(rss),
        "queries": len(qs),
        **{f"{k}_p50_ms": pct(v, 50) for k, v in lat.items()},
        **{f"{k}_p95_ms": pct(v, 95) for k, v in lat.items()},
        "vector_index": getattr(store, "vector_index_kind", "exact fp32 mat-vec"),
        **stall,
    }


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM). Not ru_maxrss: Linux carries that across
    fork and exec, so a child of the (large) building process would report its parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_stall(store, emb, qs: list[str], folder: Path) -> dict:
    """Searches while documents are added (after the RSS above was taken): their latency and
    the longest any write held searches off. The keyword merge threshold is dropped to one posting
    for this phase, so the maintenance thread merges the delta into the main segment again
    and again while the ingest runs (each merge O(postings), seconds at 1M, built off the
    lock): the worst a merge can do to searches is in these figures."""
    from rag_core.models import Chunk, SearchFilters
    from rag_core.stores.memindex import MemIndex

    MemIndex.merge_threshold = lambda self: 1
    MemIndex.inline_merge_factor = 10**9  # ...and all of them on the maintenance thread
    merges_before = store._mi.layout

    texts, base = cached_embeddings(Path(os.environ.get("GW_SCALE_CACHE", Path.home() / ".cache" / "groundwork-scale")))
    store._sync_lock.longest_write_ms = 0.0
    stop, lat = threading.Event(), []
    vecs = [emb.embed_array([q])[0] for q in qs[:50]]

    def searcher() -> None:
        i = 0
        while not stop.is_set():
            t = time.perf_counter()
            store.hybrid_search(qs[i % 50], vecs[i % 50], 10, SearchFilters())
            lat.append((time.perf_counter() - t) * 1000)
            i += 1

    th = threading.Thread(target=searcher)
    th.start()
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    added = 0
    run = os.urandom(4).hex()  # a rerun on a kept folder adds new documents, not the same ids
    for d in range(50):
        chunks = [Chunk(chunk_id=f"new/{run}-d{d}#{i}", doc_id=f"new{run}-{d}", kb_id="kb-new", text=chunk_text(d * 100 + i, texts)[1],
                        ordinal=i) for i in range(100)]
        v = base[rng.integers(0, len(base), 100)] + rng.normal(scale=NOISE, size=(100, base.shape[1]))
        store.add_chunks(chunks, (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32))
        added += 100
    ingest_s = time.perf_counter() - t0
    store.wait_maintenance()
    stop.set()
    th.join()
    lat.sort()
    return {
        "during_ingest_chunks_per_s": round(added / ingest_s),
        "during_ingest_search_p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 1) if lat else None,
        "during_ingest_search_max_ms": round(lat[-1], 1) if lat else None,
        "longest_write_hold_ms": round(store._sync_lock.longest_write_ms, 1),
        "keyword_merges_during_ingest": store._mi.layout - merges_before,
        "longest_merge_build_ms": round(store.longest_merge_build_ms, 1),
    }


def exact_recall(folder: Path) -> dict:
    """Recall@10 of the store's vector search against exact fp32 search over the vectors in
    SQLite (streamed in blocks: the reference never holds them all)."""
    import sqlite3

    q = np.load(folder / "queries.npy")
    got = json.loads((folder / "got.json").read_text())
    k = 10
    best = {name: (np.full((len(q), k), -np.inf), np.zeros((len(q), k), dtype=np.int64)) for name in ("all", "kb7")}
    conn = sqlite3.connect(str(folder / "groundwork.db"))
    # the rows write_stall added after the queries are not part of the reference
    cur = conn.execute("SELECT id, kb_id, vector FROM chunks WHERE kb_id != 'kb-new' ORDER BY id")
    while rows := cur.fetchmany(50_000):
        ids = np.array([r[0] for r in rows])
        vecs = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        s = vecs @ q.T  # (rows, queries)
        kb7 = np.array([r[1] == "kb7" for r in rows])
        for name, sel in (("all", np.ones(len(rows), dtype=bool)), ("kb7", kb7)):
            if not sel.any():
                continue
            sc, rid = best[name]
            cand_s = np.concatenate([sc, s[sel].T], axis=1)
            cand_i = np.concatenate([rid, np.broadcast_to(ids[sel], (len(q), int(sel.sum())))], axis=1)
            top = np.argsort(-cand_s, axis=1)[:, :k]
            best[name] = (np.take_along_axis(cand_s, top, 1), np.take_along_axis(cand_i, top, 1))
    conn.close()
    rec = {name: float(np.mean([len(set(best[name][1][i].tolist()) & set(g[j])) / k for i, g in enumerate(got)]))
           for j, name in enumerate(("all", "kb7"))}
    return {"vector_recall_at_10": round(rec["all"], 4), "filtered_recall_at_10": round(rec["kb7"], 4)}


def _row(store, r) -> int:
    return int(store.db.query_one("SELECT id FROM chunks WHERE chunk_id=?", (r.chunk.chunk_id,))[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "groundwork-scale"))
    ap.add_argument("--keep", default=None, help="build here and keep it (default: a temporary folder)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", default=None, help=argparse.SUPPRESS)  # internal: the cold process
    args = ap.parse_args()
    if args.serve:
        print(json.dumps(serve(Path(args.serve), args.queries)))
        return
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gw-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        rec = {"chunks": args.chunks, "machine": f"{os.uname().machine}, {os.cpu_count()} cores"}
        rec.update(build(args.chunks, folder, Path(args.cache)))
        rec["disk_mb"] = round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20)
        snap = [f for f in folder.rglob("*") if f.is_file() and f.parent.name.endswith("-index")]
        rec["snapshot_disk_mb"] = round(sum(f.stat().st_size for f in snap) / 2**20)
        out = subprocess.run([sys.executable, __file__, "--serve", str(folder), "--queries", str(args.queries)],
                             capture_output=True, text=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT), "GW_SCALE_CACHE": args.cache})
        if out.returncode != 0:
            raise SystemExit(out.stderr[-2000:])
        rec.update(json.loads(out.stdout.strip().splitlines()[-1]))
        rec.update(exact_recall(folder))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(rec) if args.json else json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
