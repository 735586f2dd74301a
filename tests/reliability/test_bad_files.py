"""A batch of hostile and broken files: each one is ingested correctly or rejected with a
clear reason, nothing crashes or hangs, and the good file in the same batch goes in."""

from __future__ import annotations

import io
import os
import time
import zlib
from pathlib import Path

import pytest

from rag_core.config import get_settings
from rag_core.workspace import Workspace
from tests.helpers import make_pdf

SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "pdfs-py-pdf-sample-files"


def bomb_pdf() -> bytes:
    """A valid PDF whose one page's content stream inflates to ~400 MB of spaces."""
    raw = zlib.compress(b" " * (400 * 1024 * 1024), 9)
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length " + str(len(raw)).encode() + b" /Filter /FlateDecode >>\nstream\n" + raw + b"\nendstream",
    ]
    out = io.BytesIO(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    files = {
        "good.md": "# Good\n\nThe reliable document mentions the word heliotrope.\n".encode(),
        "zero.pdf": b"",
        "truncated.pdf": make_pdf(["Some text that would be there."])[:200],
        "random.pdf": os.urandom(50_000),
        "text-named.pdf": b"just a text file pretending to be a PDF\n" * 10,
        "bomb.pdf": bomb_pdf(),
        "invalid-utf8.txt": b"\xff\xfe\xfa\x80\x81" * 200 + b"\x00\x01\x02" * 100,
        "ragged.csv": b"name,age,city\nann,31,Oslo\nbob\ncid,40,Rome,extra,more\n",
        "nested.html": b"<div>" * 30000 + b"deep text" + b"</div>" * 30000,
        "empty.docx": b"PK\x03\x04 not really a docx",
    }
    paths = []
    for name, data in files.items():
        p = d / name
        p.write_bytes(data)
        paths.append(p)
    huge = d / "huge.pdf"
    with huge.open("wb") as fh:  # sparse: over the 200 MB limit without writing 200 MB
        fh.truncate(201 * 1000 * 1000)
    paths.append(huge)
    if SAMPLES.exists():
        paths += [SAMPLES / "007-imagemagick-images" / "imagemagick-images.pdf",
                  SAMPLES / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"]
    ws = Workspace(get_settings(d / "data", ingest_timeout_s=60, ingest_memory_mb=1024))
    ws.create_kb("bad")
    t = time.perf_counter()
    stats = ws.ingest("bad", paths)
    return ws, {r.file: r for r in stats.reports}, time.perf_counter() - t


def test_every_file_has_an_outcome_and_a_reason(batch):
    ws, reports, seconds = batch
    print("\n" + "\n".join(f"{r.file:35s} {r.status:9s} {r.reason}" for r in reports.values()))
    print(f"batch took {seconds:.1f} s")
    assert reports["good.md"].status == "ingested"
    for name in ("zero.pdf", "truncated.pdf", "random.pdf", "text-named.pdf", "invalid-utf8.txt", "empty.docx", "huge.pdf"):
        r = reports[name]
        assert r.status == "failed" and r.reason and "Traceback" not in r.reason, name
    assert "limit" in reports["huge.pdf"].reason
    assert reports["ragged.csv"].status == "ingested"
    # the bomb and the deep nesting may be read or refused, but never crash the batch
    for name in ("bomb.pdf", "nested.html"):
        assert reports[name].status in ("ingested", "failed") and (reports[name].status == "ingested" or reports[name].reason)
    if "imagemagick-images.pdf" in reports:
        assert "no text" in reports["imagemagick-images.pdf"].reason
        assert "password" in reports["libreoffice-writer-password.pdf"].reason
    assert seconds < 240


def test_the_good_file_is_searchable_and_nothing_half_indexed(batch):
    ws, reports, _ = batch
    hit = ws.search(["bad"], "heliotrope", k=1, mode="keyword").results[0]
    assert hit.chunk.source == "good.md"
    kb = ws.get_kb("bad")
    assert ws.appdb.list_documents(kb.kb_id, status="indexing") == []
    assert ws.store.health()["ok"]


def test_a_hanging_reader_is_stopped(tmp_path):
    """The worker is killed at the time limit and the next file still goes in."""
    from rag_core.ingest.isolation import IsolatedLoader
    from rag_core.errors import LoadError

    slow = IsolatedLoader(timeout_s=0.01, memory_mb=1024)
    f = tmp_path / "a.txt"
    f.write_text("hello there, a perfectly fine file")
    with pytest.raises(LoadError, match="longer than"):
        slow.load(f, "a.txt", 10)  # the worker cannot even start in 10 ms
    slow.timeout_s = 60
    assert slow.load(f, "a.txt", 10)[0].pages == ["hello there, a perfectly fine file"]
    slow.close()
