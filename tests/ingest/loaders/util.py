"""Shared by the loader tests: sample locations and small helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.ingest.loaders import load_file

SHARED_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
SAMPLE_PDFS = SHARED_DATA / "pdfs-py-pdf-sample-files"
SCIFACT = SHARED_DATA / "beir-scifact" / "corpus.jsonl"
needs_samples = pytest.mark.skipif(not SAMPLE_PDFS.is_dir(), reason=f"sample PDFs not found at {SAMPLE_PDFS}")


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def load_one(path: Path, **kwargs):
    docs = load_file(path, **kwargs)
    assert len(docs) == 1
    return docs[0]
