"""The citation viewer's core: the passage found on the PDF page, boxes where its words are,
pages rendered once, neighbours without overlap, and access checked before anything is read."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from rag_core.citation_view import (
    HIGHLIGHT_EDGE, PageCache, align, best_page, highlight_in_context, merge_boxes, render_pdf_page,
)
from rag_core.config import get_settings
from rag_core.errors import NotFound
from rag_core.models import Chunk
from rag_core.workspace import Workspace
from tests.helpers import make_pdf
from rag_core.access import Caller

PAGE1 = "Lighthouses of the north coast\nThe keeper climbs 114 steps each evening\nto light the lamp at dusk."
PAGE2 = "Tides and weather\nSpring tides reach 6 metres in March.\nFog horns sound every 30 seconds in fog."


@pytest.fixture
def pdf(tmp_path):
    f = tmp_path / "coast.pdf"
    f.write_bytes(make_pdf([PAGE1, PAGE2]))
    return f


def edge_bbox(png: bytes):
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    ys, xs = np.nonzero((img == np.array(HIGHLIGHT_EDGE[:3])).all(axis=2))
    return (xs.min(), ys.min(), xs.max(), ys.max()) if len(xs) else None


def test_align_tolerates_the_two_extractors_differences():
    page = "The keeper climbs 114\r\nsteps each evening to light the lamp-\r\nat dusk. Other text here."
    ranges, share = align(page, "The keeper climbs 114 steps each evening to light the lamp at dusk.")
    assert share == 1.0
    covered = "".join(page[a:b] for a, b in ranges)
    assert "keeper" in covered and "dusk." in covered and "Other" not in covered
    # PDFium returns ligatures as drawn, pypdf as letters: they still match, offsets stay right
    lig = "The \ufb01nal \ufb02ow rate is 12 litres."
    (a, b), = align(lig, "The final flow rate is 12 litres.")[0]
    assert lig[a:b] == lig and align(lig, "The final flow rate")[1] == 1.0
    # two common words in a row are chance, not the passage
    assert align("of the sea and of the land", "history of the world")[0] == []


def test_page_image_highlights_exactly_the_passage(pdf):
    view = render_pdf_page(pdf, 1, "The keeper climbs 114 steps each evening to light the lamp at dusk.")
    assert (view.page, view.pages, view.matched) == (1, 2, 1.0)
    assert len(view.boxes) == 2  # one box per line of the passage, not per glyph
    box = edge_bbox(view.png)
    assert box is not None
    # the title line (first text line, above the passage) is not highlighted
    title_only = render_pdf_page(pdf, 1, "Lighthouses of the north coast")
    tbox = edge_bbox(title_only.png)
    assert tbox[1] < box[1] - 15, "the passage's highlight starts a line below the title's"
    assert box[2] - box[0] < view.width * 0.9


def test_passage_not_on_the_page_draws_nothing(pdf):
    view = render_pdf_page(pdf, 2, "The keeper climbs 114 steps each evening")
    assert view.boxes == [] and edge_bbox(view.png) is None and view.has_text_layer
    with pytest.raises(Exception, match="outside"):
        render_pdf_page(pdf, 3, "x")


def test_best_page_finds_the_page_holding_the_passage(pdf):
    assert best_page(pdf, 1, 2, "Fog horns sound every 30 seconds in fog.") == 2
    assert best_page(pdf, 1, 2, "The keeper climbs 114 steps") == 1


def test_page_cache_renders_once_and_notices_a_replaced_file(pdf):
    cache = PageCache(max_items=2)
    a = cache.get(pdf, 1, "Spring tides")
    assert cache.get(pdf, 1, "Spring tides") is a and (cache.hits, cache.misses) == (1, 1)
    cache.get(pdf, 2, "x")
    cache.get(pdf, 1, "y")  # evicts the oldest
    assert len(cache._items) == 2
    pdf.write_bytes(make_pdf([PAGE2]))  # same path, new content
    assert cache.get(pdf, 1, "Spring tides").pages == 1


def test_merge_boxes_joins_glyphs_on_a_line_only():
    glyphs = [(10, 100, 18, 112), (19, 102, 27, 112), (28, 100, 36, 112), (10, 130, 18, 142)]
    assert merge_boxes(glyphs) == [(10, 100, 36, 112), (10, 130, 18, 142)]
    far = [(10, 100, 18, 112), (300, 100, 308, 112)]  # two columns on one line stay apart
    assert len(merge_boxes(far)) == 2


def test_context_cuts_chunk_overlap_and_marks_the_snippet():
    doc = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota."
    prev = Chunk("k/d#0", "d", "k", doc[0:24], char_start=0, char_end=24)
    cur = Chunk("k/d#1", "d", "k", doc[18:37], char_start=18, char_end=37)
    nxt = Chunk("k/d#2", "d", "k", doc[30:], char_start=30, char_end=len(doc))
    segs = highlight_in_context(prev, cur, nxt, "Delta epsilon zeta.")
    assert "".join(t for t, _ in segs) == doc  # nothing repeated, nothing lost
    assert [t for t, hit in segs if hit] == ["Delta epsilon zeta."]
    # a snippet that is not verbatim marks the whole passage
    assert [t for t, hit in highlight_in_context(None, cur, None, "something else") if hit] == [cur.text]


def test_workspace_serves_pages_and_originals_only_to_allowed_users(tmp_path, pdf):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Coast", caller=Caller.operator())
    ws.create_kb("Private", acl_users=["ann"], caller=Caller.operator())
    ws.ingest("Coast", [pdf], caller=Caller.operator())
    ws.ingest("Private", [pdf], caller=Caller.operator())
    a = ws.ask(["Coast"], "How many steps does the keeper climb?", caller=Caller.operator())
    c = a.citations[0]
    view = ws.cited_page(c, caller=Caller.operator())
    assert view.page == 1 and view.boxes and view.matched > 0.5
    assert ws.original_bytes(c.kb_id, c.doc_id, caller=Caller.operator()) == pdf.read_bytes()

    ann, bob = Caller(user="ann"), Caller(user="bob")
    b = ws.ask(["Private"], "How many steps does the keeper climb?", caller=ann)
    p = b.citations[0]
    assert ws.cited_page(p, caller=ann).boxes
    for fn in (lambda: ws.cited_page(p, caller=bob), lambda: ws.original_bytes(p.kb_id, p.doc_id, caller=bob),
               lambda: ws.cited_context(p, caller=bob)):
        with pytest.raises(NotFound):
            fn()
    # a deleted document cannot be opened from an old citation
    ws.delete_document("Coast", c.doc_id, caller=Caller.operator())
    with pytest.raises(NotFound):
        ws.original_bytes(c.kb_id, c.doc_id, caller=Caller.operator())
    ws.close()


def test_non_pdf_sources_show_the_passage_in_its_text(tmp_path):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Notes", caller=Caller.operator())
    f = tmp_path / "notes.md"
    f.write_text("# Bees\n\nA hive holds about 50,000 bees in summer.\n\n# Wasps\n\nWasps build paper nests.\n")
    ws.ingest("Notes", [f], caller=Caller.operator())
    a = ws.ask(["Notes"], "How many bees live in a hive?", caller=Caller.operator())
    c = a.citations[0]
    assert ws.cited_page(c, caller=Caller.operator()) is None  # no pages to render
    segs = ws.cited_context(c, caller=Caller.operator())
    assert any(hit and "50,000 bees" in t for t, hit in segs)
    ws.close()


def test_the_band_shows_the_highlighted_lines_first(pdf):
    """The viewer shows the full-width band around the cited lines above the whole page: it
    holds every highlight box, and is much shorter than the page."""
    from rag_core.citation_view import highlight_band

    view = render_pdf_page(pdf, 2, "Spring tides reach 6 metres in March.")
    band = Image.open(io.BytesIO(highlight_band(view)))
    assert band.width == view.width and band.height < view.height / 2
    fx0, fy0, fx1, fy1 = edge_bbox(view.png)
    bx0, by0, bx1, by1 = edge_bbox(highlight_band(view))
    assert (bx0, bx1, by1 - by0) == (fx0, fx1, fy1 - fy0)  # the whole highlight, uncut, is in the band
    assert highlight_band(render_pdf_page(pdf, 1, "Spring tides reach 6 metres in March.")) is None


def test_the_viewer_opens_the_page_the_citation_names(tmp_path):
    """Issue 50: a "p. 9" citation opened page 10. A passage crossing a page break is cited for
    the page of the words that cite it; the viewer opens that page."""
    from dataclasses import replace

    from tests.helpers import make_pdf

    pdf = tmp_path / "keeper.pdf"
    pdf.write_bytes(make_pdf(["The lighthouse keeper lives on the rock all year.",
                              "The keeper climbs 217 steps to the lamp every evening."]))
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Coast", caller=Caller.operator())
    ws.ingest("Coast", [pdf], caller=Caller.operator())
    a = ws.ask(["Coast"], "How many steps does the keeper climb?", caller=Caller.operator())
    c = a.citations[0]
    assert ws.cited_page(c, caller=Caller.operator()).page == c.page
    chunk = ws.store.get_chunks([c.chunk_id])[0]
    if chunk.page_end > chunk.page_start:  # the passage crosses the break: either page may be named
        for named in (chunk.page_start, chunk.page_end):
            assert ws.cited_page(replace(c, page=named), caller=Caller.operator()).page == named
    ws.close()
