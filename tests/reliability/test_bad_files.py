"""A batch of hostile and broken files: each one is ingested correctly or rejected with a
clear reason, nothing crashes or hangs, and the good file in the same batch goes in."""

from __future__ import annotations

import io
import os
import re
import time
import zlib
from pathlib import Path

import pytest

from rag_core.config import get_settings
from rag_core.workspace import Workspace
from tests.helpers import make_pdf
from rag_core.access import Caller

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


def make_bad_files(d: Path) -> list[Path]:
    """The batch: one good file among broken, hostile and unsupported ones (also timed by
    benchmarks/loader_speed.py)."""
    d.mkdir(parents=True, exist_ok=True)
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
    return paths


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    paths = make_bad_files(d)
    ws = Workspace(get_settings(d / "data", ingest_timeout_s=60, ingest_memory_mb=1024))
    ws.create_kb("bad", caller=Caller.operator())
    t = time.perf_counter()
    stats = ws.ingest("bad", paths, caller=Caller.operator())
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
    # the decompression bomb: pypdf stops inflating at its output limit, the page has no
    # text, the file is refused with that reason and nothing of it is indexed
    assert reports["bomb.pdf"].status == "failed" and reports["bomb.pdf"].reason.startswith("no text found")
    assert reports["bomb.pdf"].doc_ids == []
    # 30,000 nested <div>s: read (the converter walks iteratively), its text indexed
    assert reports["nested.html"].status == "ingested" and reports["nested.html"].chunks == 1
    assert ws.search(["bad"], "deep text", k=1, mode="keyword", caller=Caller.operator()).results[0].chunk.source == "nested.html"
    if "imagemagick-images.pdf" in reports:
        assert "no text" in reports["imagemagick-images.pdf"].reason
        assert "password" in reports["libreoffice-writer-password.pdf"].reason
    # (the batch's time is measured by benchmarks/loader_speed.py, not asserted here)


def test_the_good_file_is_searchable_and_nothing_half_indexed(batch):
    ws, reports, _ = batch
    hit = ws.search(["bad"], "heliotrope", k=1, mode="keyword", caller=Caller.operator()).results[0]
    assert hit.chunk.source == "good.md"
    kb = ws.get_kb("bad", caller=Caller.operator())
    assert ws.appdb.list_documents(kb.kb_id, status="indexing") == []
    assert ws.store.health()["ok"]


def test_a_hanging_reader_is_stopped(tmp_path):
    """A reader stuck on a file is killed at the time limit and the next file still goes in.
    The stuck reader is real: CPython's csv.Sniffer backtracks quadratically on this one
    64 KB line (~5 s of CPU here), far past the 1 s limit set for the test."""
    import os

    from rag_core.errors import LoadError
    from rag_core.ingest.isolation import IsolatedLoader

    loader = IsolatedLoader(timeout_s=120, memory_mb=1024)
    ok = tmp_path / "a.txt"
    ok.write_text("hello there, a perfectly fine file")
    assert loader.load(ok, "a.txt", 10)[0].pages == ["hello there, a perfectly fine file"]  # the worker is up
    first = loader._proc.pid
    slow = tmp_path / "slow.csv"
    slow.write_text('"' + 'a,"' * 21845)
    loader.timeout_s = 1.0
    with pytest.raises(LoadError, match="longer than 1 s"):
        loader.load(slow, "slow.csv", 10)
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)  # the stuck worker was killed (and reaped), not left running
    loader.timeout_s = 120
    assert loader.load(ok, "a.txt", 10)[0].pages == ["hello there, a perfectly fine file"]
    assert loader._proc.pid != first  # by a fresh worker
    loader.close()


def test_two_concurrent_uploads_get_their_own_results(tmp_path):
    """Two sessions ingest at the same moment through the one shared isolated reader: each
    file's report and chunks are its own. Without the loader's lock this test does not pass:
    the two threads' requests interleave on the one pipe and a reader waits for an answer the
    other took, until the time limit fails its file (measured: stuck past 60 s, vs 3 s)."""
    from concurrent.futures import ThreadPoolExecutor

    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("A", caller=Caller.operator())
    ws.create_kb("B", caller=Caller.operator())
    files = {}
    for who in ("A", "B"):
        for i in range(6):
            f = tmp_path / f"{who}-{i}.md"
            f.write_text(f"# {who} note {i}\n\n" + f"The {who.lower()}-word is {who}{i}zebra. " * (40 + 30 * i))
            files.setdefault(who, []).append(f)

    def upload(who):
        return ws.ingest(who, files[who], caller=Caller.operator())

    with ThreadPoolExecutor(2) as ex:
        stats = dict(zip(("A", "B"), ex.map(upload, ("A", "B"))))
    for who in ("A", "B"):
        assert [r.file for r in stats[who].reports] == [f.name for f in files[who]]
        assert all(r.status == "ingested" for r in stats[who].reports)
        kb_id = ws.get_kb(who, caller=Caller.operator()).kb_id
        for d in ws.appdb.list_documents(kb_id):
            text = " ".join(c.text for c in ws.store.document_chunks(kb_id, d.doc_id))
            assert d.source.startswith(who) and f"{who}{d.source.split('-')[1][0]}zebra" in text
            assert set(re.findall(r"([AB])\dzebra", text)) == {who}  # nothing of the other session's files
    ws.close()
