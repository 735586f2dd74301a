"""PPTX, XLSX and EPUB: built here with their own writers (python-pptx, openpyxl, a zip),
loaded, chunked, and cited with the right slide, sheet and rows."""

from __future__ import annotations

import zipfile

import pytest

from rag_core.config import get_settings
from rag_core.errors import LoadError
from rag_core.ingest.chunker import chunk_document
from rag_core.ingest.loaders import SUPPORTED_EXTENSIONS, load_file
from rag_core.workspace import Workspace


def make_pptx(path):
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[1])
    s1.shapes.title.text = "Quarterly results"
    body = s1.placeholders[1].text_frame
    body.text = "Revenue grew 12 percent"
    p = body.add_paragraph()
    p.text = "Driven by the northern region"
    p.level = 1
    s2 = prs.slides.add_slide(prs.slide_layouts[5])
    s2.shapes.title.text = "Hiring plan"
    table = s2.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (r, c), v in {(0, 0): "Team", (0, 1): "New hires", (1, 0): "Support", (1, 1): "7"}.items():
        table.cell(r, c).text = v
    s2.notes_slide.notes_text_frame.text = "Mention the office move in April."
    prs.save(path)
    return path


def make_xlsx(path, rows=120):
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Inventory"
    ws.append(["Part", "Bin", "Quantity"])
    for i in range(rows):
        ws.append([f"bolt-{i}", f"B{i % 9}", i * 3])
    other = wb.create_sheet("Suppliers")
    other.append(["Supplier", "Country"])
    other.append(["Acme Fasteners", "Norway"])
    wb.save(path)
    return path


def make_epub(path):
    container = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                 '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                 '</rootfiles></container>')
    opf = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
           '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Field Guide to Moths</dc:title></metadata>'
           '<manifest><item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/>'
           '<item id="c2" href="ch2.xhtml" media-type="application/xhtml+xml"/></manifest>'
           '<spine><itemref idref="c2"/><itemref idref="c1"/></spine></package>')
    ch = '<html><body><h1>{}</h1><p>{}</p></body></html>'
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", container)
        z.writestr("OEBPS/content.opf", opf)
        z.writestr("OEBPS/ch1.xhtml", ch.format("Night flyers", "The luna moth has no mouth and lives a week."))
        z.writestr("OEBPS/ch2.xhtml", ch.format("Introduction", "Moths outnumber butterflies ten to one."))
    return path


def test_new_formats_are_supported():
    assert {".pptx", ".xlsx", ".epub"} <= SUPPORTED_EXTENSIONS


def test_pptx_slides_are_pages_with_titles_bullets_tables_and_notes(tmp_path):
    doc = load_file(make_pptx(tmp_path / "q3.pptx"))[0]
    assert doc.page_count == 2 and doc.title == "Quarterly results"
    assert doc.pages[0].startswith("# Quarterly results")
    assert "- Revenue grew 12 percent" in doc.pages[0] and "  - Driven by the northern region" in doc.pages[0]
    assert "| Support | 7 |" in doc.pages[1] and "Speaker notes: Mention the office move in April." in doc.pages[1]
    chunks = chunk_document(doc, doc_id="d", kb_id="k")
    hiring = next(c for c in chunks if "Support" in c.text)
    assert hiring.page_start == 2 and "Hiring plan" in hiring.section


def test_xlsx_rows_carry_their_header_sheet_and_row_range(tmp_path):
    doc = load_file(make_xlsx(tmp_path / "stock.xlsx"))[0]
    assert doc.page_count == 2 and doc.metadata["rows"] == 121
    chunks = chunk_document(doc, doc_id="d", kb_id="k", chunk_size=600, chunk_overlap=0)
    c = next(c for c in chunks if "bolt-100\n" in c.text + "\n")
    assert "Part: bolt-100" in c.text and "Quantity: 300" in c.text  # the header goes with every row
    assert c.section.startswith("Inventory") and "Rows" in c.section
    lo, hi = (int(x) for x in c.section.rsplit("Rows ", 1)[1].split("–"))
    assert lo <= 102 <= hi  # bolt-100 is spreadsheet row 102 (header in row 1)
    sup = next(c for c in chunks if "Acme" in c.text)
    assert sup.page_start == 2 and "Country: Norway" in sup.text


def test_epub_chapters_in_spine_order(tmp_path):
    doc = load_file(make_epub(tmp_path / "moths.epub"))[0]
    assert doc.title == "Field Guide to Moths"
    assert doc.page_count == 2 and doc.pages[0].startswith("# Introduction") and "luna moth" in doc.pages[1]


def test_broken_files_of_the_new_formats_get_a_reason(tmp_path):
    for name in ("bad.pptx", "bad.xlsx", "bad.epub"):
        f = tmp_path / name
        f.write_bytes(b"PK\x03\x04 not really a zip")
        with pytest.raises(LoadError, match="not a valid"):
            load_file(f)


def test_slide_and_sheet_are_cited(tmp_path):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Office")
    ws.ingest("Office", [make_pptx(tmp_path / "q3.pptx"), make_xlsx(tmp_path / "stock.xlsx")])
    a = ws.ask(["Office"], "By how much did revenue grow?")
    assert not a.abstained and "12 percent" in a.text
    assert (a.citations[0].source, a.citations[0].page) == ("q3.pptx", 1)
    hit = ws.search(["Office"], "support new hires", k=1).results[0].chunk
    assert (hit.source, hit.page_start) == ("q3.pptx", 2)  # the slide number
    b = ws.ask(["Office"], "Which country is Acme Fasteners in?")
    assert "Norway" in b.text and b.citations[0].source == "stock.xlsx"
    assert b.citations[0].section.startswith("Suppliers")
    ws.close()
