"""Loader and chunker speed, and the bad-files batch: the wall-clock numbers that used to be
asserted inside tests (where a loaded machine made them flaky) are measured here instead.

    python benchmarks/loader_speed.py
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from rag_core.access import Caller

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SCIFACT = REPO.parent / "shared" / "data" / "beir-scifact" / "corpus.jsonl"


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    from rag_core.ingest.chunker import chunk_document
    from rag_core.ingest.loaders import load_file
    from rag_core.models import LoadedDocument

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}")
    if SCIFACT.exists():
        docs, s = timed(lambda: load_file(SCIFACT))
        print(f"SciFact corpus.jsonl: {len(docs)} records loaded in {s:.2f} s ({len(docs) / s:,.0f} records/s)")

    sent = " ".join(f"Sentence number {i} talks about topic {i} in some detail." for i in range(42))
    section = "\n\n".join(["## Heading", sent[:700], "- item one\n- item two", sent, "| a | b |\n| 1 | 2 |"])
    text = "\n\n".join([section] * 1000)
    doc = LoadedDocument(source="big.md", title="Big", mime="text/markdown",
                         pages=[text[i : i + 40_000] for i in range(0, len(text), 40_000)])
    chunks, s = timed(lambda: chunk_document(doc, doc_id="d", kb_id="k"))
    print(f"chunker: {len(text) / 1e6:.1f} MB → {len(chunks)} chunks in {s:.2f} s ({len(chunks) / s:,.0f} chunks/s, "
          f"{len(text) / 1e6 / s:.1f} MB/s)")

    # the bad-files batch of tests/reliability/test_bad_files.py, timed
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace
    from tests.reliability.test_bad_files import make_bad_files

    d = Path(tempfile.mkdtemp())
    paths = make_bad_files(d / "files")
    ws = Workspace(get_settings(d / "data", ingest_timeout_s=60, ingest_memory_mb=1024))
    ws.create_kb("bad", caller=Caller.operator())
    stats, s = timed(lambda: ws.ingest("bad", paths, caller=Caller.operator()))
    print(f"bad-files batch: {len(paths)} files in {s:.1f} s "
          f"({sum(r.status == 'failed' for r in stats.reports)} refused with a reason)")
    ws.close()


if __name__ == "__main__":
    main()
