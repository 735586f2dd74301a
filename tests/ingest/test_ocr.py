"""OCR for pages without a text layer: text we know → page image → PDF → OCR → searchable,
cited as OCR, and highlighted on the page image. The OCR engine is the real one (its models
ship in the rapidocr-onnxruntime wheel)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from rag_core.citation_view import render_pdf_page
from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.errors import LoadError
from rag_core.ingest.loaders import load_file
from rag_core.ingest.ocr import OcrLine, reading_order, restore_spaces
from rag_core.workspace import Workspace

def _ocr_available() -> str | None:
    try:
        from rag_core.ingest.ocr import get_engine

        get_engine()
        return None
    except Exception as exc:  # noqa: BLE001
        return str(exc)


OP = Caller.operator()  # the local no-auth user
_WHY = _ocr_available()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=f"OCR engine unavailable: {_WHY} (.ci/run installs libgl1)")

LINES = [
    "Maintenance schedule for the pump",
    "Replace the impeller seal every 1,500 hours.",
    "Check the oil level weekly and top up with SAE 30.",
    "The warranty is void if the casing is opened.",
]


def scanned_pdf(path, lines=LINES, pages=1):
    """A PDF whose pages are only images of text, as a scanner makes them (150 dpi A4)."""
    images = []
    for p in range(pages):
        img = Image.new("RGB", (1240, 1754), "white")
        draw = ImageDraw.Draw(img)
        font = ImageFont.load_default(size=34)
        for i, line in enumerate(lines):
            draw.text((120, 200 + i * 60), line if p == 0 else f"{line} (copy {p})", fill="black", font=font)
        images.append(img)
    images[0].save(path, "PDF", resolution=150, save_all=True, append_images=images[1:])
    return path


def test_restore_spaces_splits_only_runs_of_known_words():
    assert restore_spaces("Checkthe oil level weekly and top upwithSAE30.") == "Check the oil level weekly and top up with SAE30."
    assert restore_spaces("Maintenancescheduleforthepump") == "Maintenance schedule for the pump"
    # real words and unknown names stay whole
    assert restore_spaces("impeller Groundwork Xylqzt") == "impeller Groundwork Xylqzt"


def test_reading_order_rows_then_columns():
    a = OcrLine("right", (300, 100, 400, 120), 1.0)
    b = OcrLine("left", (10, 102, 100, 122), 1.0)
    c = OcrLine("below", (10, 200, 100, 220), 1.0)
    assert [ln.text for ln in reading_order([c, a, b])] == ["left", "right", "below"]


def test_image_only_pdf_is_read_by_ocr(tmp_path):
    f = scanned_pdf(tmp_path / "scan.pdf")
    doc = load_file(f, ocr=True)[0]
    assert doc.metadata["ocr_pages"] == [1]
    text = doc.pages[0].lower()
    for words in ("maintenance schedule", "impeller seal", "1,500 hours", "oil level weekly", "warranty is void"):
        assert words in text, (words, doc.pages[0])
    # with OCR off the file is refused, with the reason and the setting that changes it
    with pytest.raises(LoadError, match="OCR is switched off"):
        load_file(f, ocr=False)


def test_blank_image_pages_give_a_clear_reason(tmp_path):
    f = tmp_path / "blank.pdf"
    Image.new("RGB", (600, 800), "white").save(f, "PDF", resolution=72)
    with pytest.raises(LoadError, match="OCR found no text"):
        load_file(f, ocr=True)


def test_scanned_page_is_searchable_cited_as_ocr_and_highlighted(tmp_path, monkeypatch):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Manuals", caller=OP)
    f = scanned_pdf(tmp_path / "pump-manual.pdf", pages=2)
    rep = ws.ingest("Manuals", [f], caller=OP).reports[0]
    assert rep.status == "ingested", rep.reason
    assert rep.ocr_pages == [1, 2]  # the report says which pages OCR read
    # the viewer's first look at a scanned page uses the lines ingestion read: with the OCR
    # engine gone, the citation is still marked
    import rag_core.ingest.ocr as ocr_mod

    def no_engine():
        raise AssertionError("the page was read by OCR again")

    monkeypatch.setattr(ocr_mod, "get_engine", no_engine)
    hits = ws.search(["Manuals"], "impeller seal", mode="keyword", k=3, caller=OP).results
    assert hits and "impeller seal" in hits[0].chunk.text.lower() and hits[0].chunk.chunk_type == "ocr"
    a = ws.ask(["Manuals"], "How often should the impeller seal be replaced?", caller=OP)
    assert not a.abstained and "1,500 hours" in a.text
    c = a.citations[0]
    assert c.ocr and c.source == "pump-manual.pdf"
    view = ws.cited_page(c, caller=OP)
    assert view.ocr and not view.has_text_layer and view.boxes and view.matched >= 0.8
    # the highlight covers the line that holds the answer (the 2nd text line) and not the
    # warranty line (the 4th), which the answer does not cite
    def covered(line: int) -> bool:
        y = (200 + line * 60 + 17) / 1754 * view.height
        return any(b[1] <= y <= b[3] for b in view.boxes)

    assert covered(1) and not covered(3), (a.text, view.boxes)
    from rag_core.ingest.pipeline import ocr_sidecar

    doc = ws.appdb.get_document(ws.get_kb("Manuals", caller=OP).kb_id, c.doc_id)
    assert ocr_sidecar(Path(doc.stored_path)).exists()
    ws.delete_document("Manuals", c.doc_id, caller=OP)  # what was kept beside the file goes with it
    assert not ocr_sidecar(Path(doc.stored_path)).exists() and not Path(doc.stored_path).exists()
    ws.close()


def test_ocr_off_leaves_the_page_unmarked(tmp_path):
    f = scanned_pdf(tmp_path / "scan.pdf")
    view = render_pdf_page(f, 1, LINES[1], ocr=False)
    assert not view.has_text_layer and not view.ocr and view.boxes == []


def test_a_damaged_page_that_ocr_reads_is_not_reported_as_missing(tmp_path):
    """pypdf cannot extract page 2 (its content stream breaks off), but the text is drawn
    before the break, so PDFium renders it and OCR reads it: no page is missing, so the
    document carries no warning; the page is marked as OCR'd."""
    from tests.ingest.loaders.util import pdf_with_a_broken_page

    pdf = tmp_path / "recovered.pdf"
    pdf.write_bytes(pdf_with_a_broken_page(
        ["The heron nests by the northern lake.", "The kingfisher dives for small fish.", "The otter hunts."],
        broken=2, ocr_readable=True))
    [doc] = load_file(pdf, ocr=True)
    assert doc.metadata["failed_pages"] == [2] and doc.metadata["ocr_pages"] == [2]
    assert "kingfisher" in doc.pages[1].lower()
    assert "ingest_warnings" not in doc.metadata
    [off] = load_file(pdf, ocr=False)  # without OCR the page is missing, and the warning says so
    assert "page 2 " in off.metadata["ingest_warnings"][0]


def test_ocr_without_room_under_the_memory_cap_says_so_not_no_text(tmp_path):
    """The issue's app-only failure: under the reader's address-space cap the OCR engine ran
    out of memory, the error was swallowed per page, and the file was refused as having "no
    text". A fresh reader whose cap is too small for OCR (1,000 MB; it needs ~1.4 GB) now
    names the cap."""
    from rag_core.ingest.isolation import IsolatedLoader

    loader = IsolatedLoader(memory_mb=1000)
    try:
        with pytest.raises(LoadError, match="needs more than the 1000 MB memory limit"):
            loader.load(scanned_pdf(tmp_path / "scan.pdf"), "scan.pdf", 100, ocr=True)
    finally:
        loader.close()


def test_a_scan_after_a_large_file_is_retried_in_a_fresh_reader(tmp_path, caplog):
    """One reader process serves many files. After a 250,000-record JSONL its heap leaves no
    room for OCR under a 1,500 MB cap (a fresh one has room): the scan is retried once in a
    fresh process and read, instead of failing."""
    import json
    import logging

    from rag_core.ingest.isolation import IsolatedLoader

    big = tmp_path / "big.jsonl"
    big.write_text("\n".join(json.dumps({"_id": str(i), "text": f"record {i} " + "word " * 200})
                             for i in range(250_000)))
    loader = IsolatedLoader(memory_mb=1500)
    try:
        assert len(loader.load(big, "big.jsonl", 1_000_000)) == 250_000
        first = loader.pid
        with caplog.at_level(logging.WARNING, logger="rag_core.ingest.isolation"):
            docs = loader.load(scanned_pdf(tmp_path / "scan.pdf"), "scan.pdf", 100, ocr=True)
        assert "1,500 hours" in docs[0].pages[0]
        assert loader.pid != first and "retrying in a fresh reader process" in caplog.text
    finally:
        loader.close()
