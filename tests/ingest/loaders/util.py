"""Shared by the loader tests: sample locations and small helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.ingest.loaders import load_file
from tests.helpers import pdf_file

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


def pdf_with_a_broken_page(pages: list[str], broken: int, ocr_readable: bool = False) -> bytes:
    """A PDF with one page per string whose page `broken` (1-based) has a damaged content
    stream, on which pypdf's text extraction raises (PdfStreamError). By default it is
    LZW-compressed data that is not LZW: the page renders blank, so OCR cannot read it
    either. With `ocr_readable` the text is drawn and then the stream breaks off (an
    unterminated string and array): PDFium still renders the text. Other pages are fine."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    kids = []
    for number, text in enumerate(pages, start=1):
        stream, extra = b"BT /F1 11 Tf 56 790 Td (" + text.encode("latin-1") + b") Tj ET", b""
        if number == broken and ocr_readable:
            stream = b"BT /F1 11 Tf 56 790 Td [(" + text.encode("latin-1") + b") 5 (b)] TJ ( Tj ET (( ] >> <<"
        elif number == broken:
            stream, extra = b"\xff" * 40, b"/Filter /LZWDecode "
        objects.append(b"<< /Length %d %s>>\nstream\n" % (len(stream), extra) + stream + b"\nendstream")
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 3 0 R >> >> >>" % len(objects))
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    return pdf_file(objects, root=1)
