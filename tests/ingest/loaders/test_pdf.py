"""PDF: generated files and the py-pdf samples."""

from __future__ import annotations

import random

import pytest

from rag_core.errors import LoadError
from rag_core.ingest.chunker import chunk_document, join_pages
from rag_core.ingest.loaders import (
    clean_pdf_text,
    load_file,
)
from tests.helpers import make_pdf
from tests.ingest.loaders.util import SAMPLE_PDFS, load_one, needs_samples, pdf_with_a_broken_page, write


def test_generated_pdf_pages_and_cleanup(tmp_path):
    pages = [
        "First  page   about an exam-\nple of hyphenation.",
        "Baden-\nWürttemberg stays. Years 2013-\n2014 stay.",
        "Third page.",
    ]
    doc = load_one(write(tmp_path, "report.pdf", make_pdf(pages, title="Quarterly Report")))
    assert doc.title == "Quarterly Report"
    assert doc.mime == "application/pdf"
    assert doc.pages == [
        "First page about an example of hyphenation.",
        "Baden-\nWürttemberg stays. Years 2013-\n2014 stay.",
        "Third page.",
    ]


@pytest.mark.parametrize(
    ("meta", "title"), [("untitled", "my scan"), ("my-scan", "my scan"), ("  ", "my scan"), ("Real Name", "Real Name")]
)
def test_pdf_title_only_when_meaningful(tmp_path, meta, title):
    assert load_one(write(tmp_path, "my-scan.pdf", make_pdf(["text"], title=meta))).title == title


def test_clean_pdf_text():
    raw = "ﬁrst\x00 line\t\twith   gaps \nco-\nop and Co-\nOp\n\n\n\nend"
    assert clean_pdf_text(raw) == "first line with gaps\ncoop and Co-\nOp\n\nend"
    # a compound or an option that already holds a hyphen keeps the one at the line end
    assert clean_pdf_text("use --with-\ninternal-wcwidth, a state-of-the-\nart exam-\nple") == (
        "use --with-\ninternal-wcwidth, a state-of-the-\nart example")


def test_pdf_page_limit(tmp_path):
    path = write(tmp_path, "long.pdf", make_pdf(["a page"] * 3))
    with pytest.raises(LoadError, match="^too many pages: 3 \\(the limit is 2\\)$"):
        load_file(path, max_pages=2)
    assert len(load_one(path, max_pages=3).pages) == 3


def test_pdf_without_text(tmp_path):
    with pytest.raises(LoadError, match="^no text found"):
        load_file(write(tmp_path, "blank.pdf", make_pdf(["", " "])))


def test_a_page_that_fails_to_extract_is_reported_not_swallowed(tmp_path):
    """Page 2's content stream is damaged (pypdf raises on it): the other pages load, and the
    document carries a warning naming page 2 for the ingest report (was: a log.info only)."""
    data = pdf_with_a_broken_page(["First page text is fine.", "Second page.", "Third page text is fine."], broken=2)
    doc = load_one(write(tmp_path, "partly-damaged.pdf", data))
    assert doc.pages[0] == "First page text is fine." and doc.pages[2] == "Third page text is fine."
    assert doc.pages[1] == ""
    assert doc.metadata["failed_pages"] == [2]
    [warning] = doc.metadata["ingest_warnings"]
    assert "page 2 " in warning and "could not be extracted" in warning


def test_a_clean_pdf_has_no_warnings(tmp_path):
    doc = load_one(write(tmp_path, "fine.pdf", pdf_with_a_broken_page(["One page of text.", "Another page."], broken=0)))
    assert doc.pages == ["One page of text.", "Another page."]
    assert "ingest_warnings" not in doc.metadata and "failed_pages" not in doc.metadata


def test_random_bytes_named_pdf(tmp_path):
    with pytest.raises(LoadError, match=r"^not a valid PDF \(file is damaged or not a PDF\)$"):
        load_file(write(tmp_path, "fake.pdf", random.Random(3).randbytes(5000)))


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.9])
def test_truncated_pdf(tmp_path, fraction):
    data = make_pdf(["page one text", "page two text", "page three text"])
    with pytest.raises(LoadError, match=r"^not a valid PDF"):
        load_file(write(tmp_path, "cut.pdf", data[: int(len(data) * fraction)]))


def test_error_messages_are_one_short_line(tmp_path):
    bad = {
        "a.pdf": random.Random(5).randbytes(300),
        "b.docx": b"PK\x03\x04garbage",
        "c.jsonl": b"{oops",
        "d.txt": random.Random(6).randbytes(300),
    }
    for name, data in bad.items():
        with pytest.raises(LoadError) as err:
            load_file(write(tmp_path, name, data))
        message = str(err.value)
        assert "\n" not in message and "Traceback" not in message and len(message) < 120, message


@needs_samples
def test_multicolumn_pdf_keeps_reading_order():
    doc = load_one(SAMPLE_PDFS / "026-latex-multicolumn" / "multicolumn.pdf")
    assert doc.page_count == 3
    first = doc.pages[0]
    # The title is set at display size: a heading; the author line a little larger is not.
    assert first.startswith("# Two-Column Document with Lorem Ipsum\nYour Name\n")
    assert "\n## Abstract\n" in first
    # Column one is read before column two, and the hyphen at "adip-|iscing" is joined.
    assert "Lorem ipsum dolor sit amet, consectetuer adipiscing elit. Ut purus elit" in first
    assert first.index("Nam dui ligula") < first.index("Phasellus adipiscing semper elit")


@pytest.fixture(scope="module")
def geotopo():
    path = SAMPLE_PDFS / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
    if not path.is_file():
        pytest.skip(f"sample PDF not found at {path}")
    return load_one(path)


def test_long_german_pdf(geotopo):
    assert geotopo.page_count == 117
    assert geotopo.title == "Geometrie und Topologie"
    assert "Wintersemester 2013/2014" in geotopo.pages[1]
    assert all("\x00" not in page for page in geotopo.pages)


def test_long_pdf_chunk_pages_are_right(geotopo):
    chunks = chunk_document(geotopo, doc_id="geo", kb_id="kb")
    assert chunks[-1].page_end == 117
    for phrase, page in (("Wintersemester 2013/2014", 2), ("Abbildung 3.5: Situation aus Bemerkung 44", 51)):
        hits = [c for c in chunks if phrase in c.text]
        assert hits and all(c.page_start <= page <= c.page_end for c in hits), phrase
    page_of = []  # page number of every character of the full text, the two-character joins included
    for number, page in enumerate(geotopo.pages, start=1):
        page_of += [number] * (len(page) + 2)
    for chunk in chunks:
        assert chunk.text in join_pages(geotopo.pages[chunk.page_start - 1 : chunk.page_end]) or chunk.chunk_type == "table"
        assert (chunk.page_start, chunk.page_end) == (page_of[chunk.char_start], page_of[chunk.char_end - 1])


@needs_samples
def test_encrypted_pdf():
    path = SAMPLE_PDFS / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"
    # Real behaviour: this file has a user password, so the empty password does not open it.
    with pytest.raises(LoadError, match="^encrypted PDF: a password is required$"):
        load_file(path)
    with pytest.raises(LoadError, match="^encrypted PDF: the password is wrong$"):
        load_file(path, password="guess")
    for password in ("openpassword", "permissionpassword"):
        doc = load_one(path, password=password)
        assert doc.pages[0].startswith("Lorem ipsum dolor sit amet")


@needs_samples
def test_pdf_with_unreadable_page_tree():
    with pytest.raises(LoadError, match=r"^not a valid PDF \(file is damaged or not a PDF\)$"):
        load_file(SAMPLE_PDFS / "017-unreadable-meta-data" / "unreadablemetadata.pdf")


@needs_samples
@pytest.mark.parametrize("name", ["imagemagick-images.pdf", "imagemagick-lzw.pdf"])
def test_image_only_pdf(name):
    # imagemagick-images.pdf holds the stray word "Background" on 4 of 6 image pages:
    # still a scan, so it is refused rather than indexed as "Background".
    with pytest.raises(LoadError, match=r"^no text found \(the PDF has only images; OCR is switched off: RAG_OCR\)$"):
        load_file(SAMPLE_PDFS / "007-imagemagick-images" / name)


@needs_samples
def test_pdf_with_little_text_and_no_images_still_loads():
    doc = load_one(SAMPLE_PDFS / "024-annotations" / "annotated_pdf.pdf")
    assert doc.title == "Annotated PDF"
    assert doc.pages[0].strip()


def test_running_headers_footers_and_page_numbers_are_removed(tmp_path):
    """A real PDF with a running head on every page (alternating, as facing pages have it), a
    footer with the page number, and a line that merely recurs at a page top twice in ten
    pages: the heads and feet go, the content stays."""
    from rag_core.ingest.loaders import load_file

    pages = []
    for n in range(1, 11):
        head = f"Chapter 2: Plotting data {n}" if n % 2 else f"{n} The Plotting Guide"
        if n == 10:
            head = "Chapter 3: Index 10"  # a one-page chapter: its head recurs only as a template
        body = "Example" if n in (3, 8) else f"Step {'ABCDEFGHIJ'[n - 1]}"
        pages.append(f"{head}\n{body}\nPage {n} explains step {n} of drawing a chart with plot().\n"
                     f"The axis range is set with xlim on page {n}.\n" + ("42\n" if n == 5 else "") + f"- {n} -")
    f = tmp_path / "guide.pdf"
    f.write_bytes(make_pdf(pages))
    doc = load_file(f)[0]
    text = "\n".join(doc.pages)
    assert "Chapter 2: Plotting data" not in text and "The Plotting Guide" not in text and "Chapter 3" not in text
    assert doc.pages[4].splitlines()[-1] == "42"  # a lone number that does not keep step with the pages stays
    assert "- 3 -" not in text
    assert all(f"Page {n} explains step {n}" in doc.pages[n - 1] for n in range(1, 11))  # page numbers exact
    assert doc.pages[2].splitlines()[0] == "Example" and doc.pages[0].splitlines()[0] == "Step A"


def _pdf_with_info(tmp_path, info: dict, xmp: bytes | None = None):
    from io import BytesIO

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(BytesIO(make_pdf(["Some text on a page."]))))
    writer.add_metadata(info)
    if xmp is not None:
        writer.xmp_metadata = xmp
    out = BytesIO()
    writer.write(out)
    return write(tmp_path, "dated.pdf", out.getvalue())


@pytest.mark.parametrize(
    ("info", "date"),
    [
        ({"/ModDate": "D:20250301120000Z", "/CreationDate": "D:20230101093000+01'00'"}, "2025-03-01"),
        ({"/CreationDate": "D:20230101093000+01'00'"}, "2023-01-01"),
        ({"/ModDate": "last tuesday", "/CreationDate": "D:2022"}, "2022-01-01"),  # a bad date is skipped
        ({"/ModDate": "20240615"}, "2024-06-15"),  # without "D:"
    ],
)
def test_pdf_date_from_info(tmp_path, info, date):
    assert load_one(_pdf_with_info(tmp_path, info)).metadata["date"] == date


@pytest.mark.parametrize("info", [{"/ModDate": "garbage", "/CreationDate": "D:99999999"}, {"/Producer": "x"}])
def test_pdf_without_a_usable_date(tmp_path, info):
    assert "date" not in load_one(_pdf_with_info(tmp_path, info)).metadata


def test_pdf_date_falls_back_to_xmp(tmp_path):
    xmp = (b'<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
           b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
           b'<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">'
           b"<xmp:ModifyDate>2021-07-08T10:00:00+02:00</xmp:ModifyDate></rdf:Description>"
           b'</rdf:RDF></x:xmpmeta><?xpacket end="w"?>')
    assert load_one(_pdf_with_info(tmp_path, {"/ModDate": "junk"}, xmp)).metadata["date"] == "2021-07-08"


def test_a_manual_page_keeps_its_structure(tmp_path):
    """A real PDF written for this test, as a manual is set: a running head and a page-number
    foot on every page, a heading in a larger bold font, a code example in Courier introduced
    by a sentence, a word hyphenated at a line end, a bullet list, a sentence that runs over the
    page break, and a function name in Courier wrapped alone onto a line inside a sentence.
    The chunks hold none of the debris, the code block whole and fenced, the list as a list,
    and the heading as the chunk's section."""
    from rag_core.ingest.loaders import load_file

    head = "Plotting Guide 2.1"
    pages = [
        f"{head}\n[h]Reading data\nData is read from a text file. To read a CSV file, use:\n"
        "[code]data <- read.csv(\"file.csv\",\n[code]                 header = TRUE)\n"
        "The argument header says whether the first line holds the col-\numn names. The\n"
        "[code]summary()\nfunction describes every column.\n"
        "Three functions draw:\n\u2022 plot() draws the points\n\u2022 lines() joins them\n\u2022 text() labels them\n"
        "The result of reading is a data frame that holds\n1",
        f"{head}\nevery column of the file as a vector.\n[h]Saving plots\nA plot is saved by opening a device first:\n"
        "[code]png(\"plot.png\")\n[code]plot(data)\n[code]dev.off()\nThe file is written when the device clo-\n2",
        f"{head}\nses and flushes.\n[h]Colours\nColours are named or given as numbers.\n3",
        f"{head}\n[h]Index\nplot, lines, text, png.\n4",
    ]
    f = tmp_path / "guide.pdf"
    f.write_bytes(make_pdf(pages))
    doc = load_file(f)[0]
    chunks = chunk_document(doc, doc_id="d", kb_id="k", chunk_size=400, chunk_overlap=0)
    text = "\n".join(c.text for c in chunks)
    assert head not in text and not any(line.strip() in {"1", "2", "3", "4"} for line in text.splitlines())
    code = '```\ndata <- read.csv("file.csv",\nheader = TRUE)\n```'
    assert sum(code in c.text for c in chunks) == 1  # intact, fenced, in one chunk
    assert any('```\npng("plot.png")\nplot(data)\ndev.off()\n```' in c.text for c in chunks)
    assert "holds the column names." in text  # the hyphen joined
    assert "The\nsummary()\nfunction describes every column." in text  # inline code stays in its sentence
    assert "- plot() draws the points\n- lines() joins them\n- text() labels them" in text
    assert "\u2022" not in text
    reading = next(c for c in chunks if "read.csv" in c.text)
    assert reading.section == "Reading data" and reading.page_start == 1
    saving = next(c for c in chunks if "dev.off()" in c.text)
    assert saving.section == "Saving plots" and saving.page_start == 2
    # The sentence over the page break is one sentence of one chunk.
    assert any("a data frame that holds\n every column of the file as a vector." in c.text for c in chunks)
    # A word hyphenated over the page break is made whole on the page where it starts.
    assert doc.pages[1].endswith("The file is written when the device closes") and doc.pages[2].startswith("and flushes.")
    assert [line for p in doc.pages for line in p.splitlines() if line.startswith("#")] == [
        "# Reading data", "# Saving plots", "# Colours", "# Index"]


def test_slide_navigation_repeated_on_every_slide_is_removed(tmp_path):
    """A deck whose every slide carries a small navigation sidebar (not only at the page
    edges, where running heads are looked for) and a small slide number: the furniture goes,
    the slide's own text stays, and so does a small footnote that appears once."""
    from rag_core.ingest.loaders import load_file

    nav = ["Outline", "Introduction", "Methods", "Results"]
    slides = []
    for n in range(1, 7):
        body = [f"Slide {n} shows result number {n} of the survey."]
        if n == 4:
            body.append("[small]Source: the 2023 survey of 400 plots.")
        slides.append("\n".join([f"[small]{x}" for x in nav[:2]] + body + [f"[small]{x}" for x in nav[2:]]
                                + [f"[small]{n}/6"]))
    f = tmp_path / "deck.pdf"
    f.write_bytes(make_pdf(slides))
    doc = load_file(f)[0]
    for n, page in enumerate(doc.pages, start=1):
        assert page.splitlines()[0] == f"Slide {n} shows result number {n} of the survey."
        assert not set(page.splitlines()) & set(nav) and f"{n}/6" not in page
    assert "Source: the 2023 survey of 400 plots." in doc.pages[3]
