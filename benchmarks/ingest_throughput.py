"""Ingestion throughput: SciFact corpus.jsonl (5,183 records) and the PDF sample set.

Prints records/s, pages/s, chunks/s and the share of time spent embedding. Uses a fresh
data folder unless --data-dir is given (a folder that already holds the embeddings makes
the run measure the cache instead of the model: the number is then printed as such).

    python benchmarks/ingest_throughput.py [--data-dir DIR] [--only scifact|pdfs]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402
from rag_core.access import Caller

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def run(ws: Workspace, kb_name: str, paths: list[Path]) -> dict:
    kb = next(iter(ws.appdb.find_kbs(kb_name)), None) or ws.create_kb(kb_name, caller=Caller.operator())
    t = time.perf_counter()
    stats = ws.ingestor.ingest(kb, paths)
    total = time.perf_counter() - t
    return {
        "kb": kb_name,
        "files": stats.files,
        "failed": [f"{r.file}: {r.reason}" for r in stats.reports if r.status == "failed"],
        "documents": stats.documents,
        "pages": stats.pages,
        "chunks": stats.chunks,
        "chunks_embedded": stats.embedded,
        "seconds": round(total, 1),
        "documents_per_s": round(stats.documents / total, 1),
        "pages_per_s": round(stats.pages / total, 1),
        "chunks_per_s": round(stats.chunks / total, 1),
        "embedding_share": round(stats.seconds_embed / total, 3) if total else 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--only", choices=["scifact", "pdfs"], default=None)
    ap.add_argument("--limit", type=int, default=None, help="only the first N SciFact records (e.g. 1500)")
    args = ap.parse_args()
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="gw-ingest-"))
    ws = Workspace(get_settings(data_dir))
    _ = ws.embedder  # load the model before timing
    from benchmarks.embedding_ceiling import matmul_peak

    peak = matmul_peak()
    print(json.dumps({"machine": f"{os.cpu_count()} cores", "fp32_matmul_peak_gflops": round(peak),
                      "data_dir": str(data_dir),
                      "chunk_size": ws.settings.chunk_size, "chunk_overlap": ws.settings.chunk_overlap}))
    if args.only in (None, "pdfs"):
        print(json.dumps(run(ws, "pdf-samples", [SHARED / "pdfs-py-pdf-sample-files"])), flush=True)
    if args.only in (None, "scifact"):
        # same knowledge-base name that `eval beir` uses, so an evaluation can reuse this index
        corpus = SHARED / "beir-scifact" / "corpus.jsonl"
        if args.limit:
            corpus = data_dir / f"scifact-first-{args.limit}.jsonl"
            with (SHARED / "beir-scifact" / "corpus.jsonl").open() as f:
                corpus.write_text("".join(line for _, line in zip(range(args.limit), f)))
        r = run(ws, "beir-beir-scifact", [corpus])
        r["chunks_per_s_per_gflops_of_peak"] = round(r["chunks_per_s"] / peak, 4)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
