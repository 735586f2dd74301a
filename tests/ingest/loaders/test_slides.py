"""PPTX: slides as pages, titles, bullets, tables, speaker notes; cited by slide."""

from __future__ import annotations

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.ingest.chunker import chunk_document
from rag_core.ingest.loaders import load_file
from rag_core.workspace import Workspace
from tests.ingest.loaders.test_spreadsheet import make_xlsx

OP = Caller.operator()  # the local no-auth user


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


def test_pptx_slides_are_pages_with_titles_bullets_tables_and_notes(tmp_path):
    doc = load_file(make_pptx(tmp_path / "q3.pptx"))[0]
    assert doc.page_count == 2 and doc.title == "Quarterly results"
    assert doc.pages[0].startswith("# Quarterly results")
    assert "- Revenue grew 12 percent" in doc.pages[0] and "  - Driven by the northern region" in doc.pages[0]
    assert "| Support | 7 |" in doc.pages[1] and "Speaker notes: Mention the office move in April." in doc.pages[1]
    chunks = chunk_document(doc, doc_id="d", kb_id="k")
    hiring = next(c for c in chunks if "Support" in c.text)
    assert hiring.page_start == 2 and "Hiring plan" in hiring.section


def test_slide_and_sheet_are_cited(tmp_path):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Office", caller=OP)
    ws.ingest("Office", [make_pptx(tmp_path / "q3.pptx"), make_xlsx(tmp_path / "stock.xlsx")], caller=OP)
    a = ws.ask(["Office"], "By how much did revenue grow?", caller=OP)
    assert not a.abstained and "12 percent" in a.text
    assert (a.citations[0].source, a.citations[0].page) == ("q3.pptx", 1)
    hit = ws.search(["Office"], "support new hires", k=1, caller=OP).results[0].chunk
    assert (hit.source, hit.page_start) == ("q3.pptx", 2)  # the slide number
    b = ws.ask(["Office"], "Which country is Acme Fasteners in?", caller=OP)
    assert "Norway" in b.text and b.citations[0].source == "stock.xlsx"
    assert b.citations[0].section.startswith("Suppliers")
    ws.close()


def test_pptx_date_from_core_properties(tmp_path):
    from datetime import datetime

    from pptx import Presentation

    path = make_pptx(tmp_path / "q3.pptx")
    prs = Presentation(str(path))
    prs.core_properties.modified = datetime(2022, 3, 4, 5, 6)
    prs.save(path)
    assert load_file(path)[0].metadata["date"] == "2022-03-04"
