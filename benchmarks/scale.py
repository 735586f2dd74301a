"""The embedded store at scale: build N chunks through the product's own store code in a
temporary folder, then open it cold in a fresh process and measure what a user would feel.

    python benchmarks/scale.py --chunks 100000 --json

Prints one JSON object: chunks, rss_mb (the serving process's peak while querying, after a
cold start), disk_mb, build_s, cold_start_s, hybrid_p50_ms / hybrid_p95_ms and
vector_p50_ms / vector_p95_ms (each including the query's embedding by the real model),
vector_recall_at_10 and filtered_recall_at_10 (the store's vector search against exact fp32
search over the same vectors, without and with a knowledge-base filter selecting 1%), and
filtered_hybrid_p95_ms.

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
    build_s = time.perf_counter() - t
    store.close()
    store.db.close()
    return {"build_s": round(build_s, 1)}


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
    lat = {"hybrid": [], "vector": [], "filtered_hybrid": []}
    recall, frecall = [], []
    mi = store._mi  # the exact reference: fp32 vectors held by the store
    exact_mat = None
    if hasattr(mi, "mat") and mi.dim:
        exact_mat = mi.mat[: mi.n]
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
        fgot = store.vector_search(v, 10, one_kb)
        if exact_mat is not None:
            alive = mi.alive[: mi.n]
            s = np.where(alive, exact_mat @ v, -np.inf)
            top = set(mi.row_ids[np.argsort(-s)[:10]].tolist())
            recall.append(len(top & {_row(store, r) for r in got}) / 10)
            mask = alive & (mi.kb[: mi.n] == mi.codes.get("kb7", -1))
            s = np.where(mask, exact_mat @ v, -np.inf)
            ftop = set(mi.row_ids[np.argsort(-s)[:10]].tolist())
            frecall.append(len(ftop & {_row(store, r) for r in fgot}) / 10)

    def pct(xs, p):
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 2)

    return {
        "cold_start_s": round(cold, 2),
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "queries": len(qs),
        **{f"{k}_p50_ms": pct(v, 50) for k, v in lat.items()},
        **{f"{k}_p95_ms": pct(v, 95) for k, v in lat.items()},
        "vector_recall_at_10": round(float(np.mean(recall)), 4) if recall else None,
        "filtered_recall_at_10": round(float(np.mean(frecall)), 4) if frecall else None,
        "vector_index": getattr(store, "vector_index_kind", "exact fp32 mat-vec"),
    }


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
        out = subprocess.run([sys.executable, __file__, "--serve", str(folder), "--queries", str(args.queries)],
                             capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        if out.returncode != 0:
            raise SystemExit(out.stderr[-2000:])
        rec.update(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(rec) if args.json else json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
