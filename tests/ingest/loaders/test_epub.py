"""EPUB: chapters in spine order."""

from __future__ import annotations

import zipfile

from rag_core.ingest.loaders import load_file


def make_epub(path, meta=""):
    container = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                 '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                 '</rootfiles></container>')
    opf = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
           '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Field Guide to Moths</dc:title>'
           f'{meta}</metadata>'
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


def test_epub_chapters_in_spine_order(tmp_path):
    doc = load_file(make_epub(tmp_path / "moths.epub"))[0]
    assert doc.title == "Field Guide to Moths"
    assert doc.page_count == 2 and doc.pages[0].startswith("# Introduction") and "luna moth" in doc.pages[1]


def test_epub_date_is_dc_date_else_dcterms_modified(tmp_path):
    modified = '<meta property="dcterms:modified">2022-10-11T12:00:00Z</meta>'
    assert "date" not in load_file(make_epub(tmp_path / "a.epub"))[0].metadata
    assert load_file(make_epub(tmp_path / "b.epub", modified))[0].metadata["date"] == "2022-10-11"
    dated = make_epub(tmp_path / "c.epub", "<dc:date>2009</dc:date>" + modified)
    assert load_file(dated)[0].metadata["date"] == "2009-01-01"
