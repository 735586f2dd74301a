from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path

import docx
import pytest

from rag_core.errors import LoadError, UnsupportedFileType
from rag_core.ingest.chunker import chunk_document
from rag_core.ingest.loaders import (
    SUPPORTED_EXTENSIONS,
    clean_pdf_text,
    load_file,
    title_from_filename,
)
from tests.helpers import make_pdf

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
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


# ----------------------------------------------------------------------------- general


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("rajiv-pant-biography.md", "rajiv pant biography"),
        ("Annual_Report.2023.pdf", "Annual Report 2023"),
        ("notes.txt", "notes"),
        ("a  -_b.csv", "a b"),
    ],
)
def test_title_from_filename(name, title):
    assert title_from_filename(name) == title


def test_supported_extensions():
    assert SUPPORTED_EXTENSIONS == frozenset(
        {".pdf", ".txt", ".md", ".markdown", ".html", ".htm", ".docx", ".csv", ".jsonl", ".pptx", ".xlsx", ".epub"}
    )


def test_unknown_extension_is_refused_with_the_supported_list(tmp_path):
    path = write(tmp_path, "data.xyz", "some text")
    with pytest.raises(UnsupportedFileType) as err:
        load_file(path)
    message = str(err.value)
    assert message.startswith("unsupported file type '.xyz'")
    assert ".pdf" in message and ".jsonl" in message
    assert isinstance(err.value, LoadError)  # callers may catch LoadError only


@pytest.mark.parametrize("name", ["empty.txt", "empty.pdf", "empty.docx", "empty.jsonl", "empty.csv", "empty.html"])
def test_zero_byte_file_of_any_type_is_empty(tmp_path, name):
    with pytest.raises(LoadError, match="^file is empty$"):
        load_file(write(tmp_path, name, b""))


def test_missing_file(tmp_path):
    with pytest.raises(LoadError, match="file not found"):
        load_file(tmp_path / "nope.txt")


def test_extension_is_case_insensitive_and_source_is_display_name(tmp_path):
    path = write(tmp_path, "UPLOAD.TXT", "hello there")
    doc = load_one(path, display_name="My Notes.txt")
    assert doc.source == "My Notes.txt"
    assert doc.title == "My Notes"
    assert doc.mime == "text/plain"


def test_display_name_supplies_the_extension_of_a_temporary_file(tmp_path):
    path = write(tmp_path, "upload-3f9a.tmp", "# Real Title\n\nbody")
    doc = load_one(path, display_name="guide.md")
    assert doc.mime == "text/markdown"
    assert doc.title == "Real Title"


# ----------------------------------------------------------------------------- text


def test_txt_utf8_with_bom_and_crlf(tmp_path):
    path = write(tmp_path, "notes.txt", b"\xef\xbb\xbfFirst line\r\nSecond line\r\n")
    doc = load_one(path)
    assert doc.pages == ["First line\nSecond line\n"]
    assert doc.title == "notes"
    assert doc.source == "notes.txt"


def test_txt_utf16_with_bom(tmp_path):
    path = write(tmp_path, "win.txt", "Grüße aus Köln".encode("utf-16"))
    assert load_one(path).pages == ["Grüße aus Köln"]


def test_txt_in_cp1252_is_decoded(tmp_path):
    path = write(tmp_path, "legacy.txt", "Café “quoted” – naïve".encode("cp1252"))
    assert load_one(path).pages == ["Café “quoted” – naïve"]


def test_binary_named_txt_is_refused(tmp_path):
    data = random.Random(7).randbytes(4096)
    with pytest.raises(LoadError, match="^not valid UTF-8 text$"):
        load_file(write(tmp_path, "image.txt", data))


def test_valid_utf8_but_binary_is_refused(tmp_path):
    data = ("\x00\x01\x02abc" * 200).encode("utf-8")
    with pytest.raises(LoadError, match="binary"):
        load_file(write(tmp_path, "blob.txt", data))


def test_whitespace_only_text_is_empty(tmp_path):
    with pytest.raises(LoadError, match="^file is empty$"):
        load_file(write(tmp_path, "blank.txt", "  \n\t\n  "))


def test_markdown_kept_as_is_with_title_from_first_h1_outside_code(tmp_path):
    text = "Intro line\n\n```bash\n# not a heading\n```\n\n## Sub first\n\n# The Title\n\nBody *text*.\n"
    doc = load_one(write(tmp_path, "readme.markdown", text))
    assert doc.pages == [text]
    assert doc.title == "The Title"
    assert doc.mime == "text/markdown"


def test_markdown_without_h1_takes_title_from_file_name(tmp_path):
    doc = load_one(write(tmp_path, "rajiv-pant-biography.md", "## Early life\n\nBorn somewhere."))
    assert doc.title == "rajiv pant biography"


# ----------------------------------------------------------------------------- HTML

PAGE = """<!doctype html><html><head><title>Guide Page</title>
<style>.x{color:red}</style><script>var secret = "SCRIPTTEXT";</script></head>
<body><h1>Main <b>Title</b></h1>
<p>Intro with <a href="#">a link</a> and <code>x=1</code>.<br>Second line.</p>
<!-- COMMENTTEXT -->
<ul><li>First item</li><li>Second <i>item</i><ul><li>Nested</li></ul></li></ul>
<h2>Data</h2>
<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann | B</td><td>30</td></tr></table>
<pre><code>def f():
    return 1
</code></pre>
<noscript>NOSCRIPTTEXT</noscript><template><p>TEMPLATETEXT</p></template><svg><text>SVGTEXT</text></svg>
<div hidden>HIDDENTEXT</div><div>Last <span>words</span></div></body></html>"""


def test_html_is_converted_to_light_markdown(tmp_path):
    doc = load_one(write(tmp_path, "page.html", PAGE))
    text = doc.pages[0]
    assert doc.title == "Guide Page"
    assert doc.mime == "text/html"
    for junk in ("SCRIPTTEXT", "color:red", "COMMENTTEXT", "NOSCRIPTTEXT", "TEMPLATETEXT", "SVGTEXT", "HIDDENTEXT"):
        assert junk not in text
    assert "# Main Title\n\nIntro with a link and `x=1`.\nSecond line.\n\n" in text
    assert "- First item\n- Second item\n  - Nested" in text
    assert "## Data\n\n| Name | Age |\n| --- | --- |\n| Ann \\| B | 30 |" in text
    assert "```\ndef f():\n    return 1\n```" in text
    assert text.endswith("Last words")


def test_html_title_falls_back_to_h1_then_file_name(tmp_path):
    assert load_one(write(tmp_path, "a.htm", "<h1>Only Heading</h1><p>x</p>")).title == "Only Heading"
    assert load_one(write(tmp_path, "plain-page.html", "<p>just text</p>")).title == "plain page"


def test_html_honours_meta_charset(tmp_path):
    html = '<html><head><meta charset="windows-1252"></head><body><p>Café</p></body></html>'
    assert load_one(write(tmp_path, "c.html", html.encode("cp1252"))).pages == ["Café"]


def test_deeply_nested_html_does_not_crash(tmp_path):
    depth = 20000
    html = "<div>" * depth + "<p>deep text</p>" + "</div>" * depth
    doc = load_one(write(tmp_path, "deep.html", html))
    assert doc.pages == ["deep text"]


def test_html_without_text_is_refused(tmp_path):
    with pytest.raises(LoadError, match="no text found"):
        load_file(write(tmp_path, "empty.html", "<html><head><script>x()</script></head><body> </body></html>"))


# ----------------------------------------------------------------------------- DOCX


def make_docx(path: Path, *, core_title: str | None = None) -> Path:
    document = docx.Document()
    if core_title:
        document.core_properties.title = core_title
    document.add_heading("Project Report", level=1)
    document.add_paragraph("Opening paragraph.")
    document.add_paragraph("first bullet", style="List Bullet")
    document.add_paragraph("second bullet", style="List Number")
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([["Name", "Score", "Team"], ["Ann", "9", "Red"], ["Bob", "7", "Blue"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    merged = table.cell(2, 1).merge(table.cell(2, 2))
    merged.text = "merged"
    document.add_heading("Details", level=2)
    document.add_paragraph("After the table.")
    document.save(path)
    return path


def test_docx_headings_lists_and_tables_in_body_order(tmp_path):
    doc = load_one(make_docx(tmp_path / "report.docx"))
    assert doc.title == "Project Report"
    assert doc.pages == [
        "# Project Report\n\n"
        "Opening paragraph.\n\n"
        "- first bullet\n- second bullet\n\n"
        "| Name | Score | Team |\n| --- | --- | --- |\n| Ann | 9 | Red |\n| Bob | merged |\n\n"
        "## Details\n\n"
        "After the table."
    ]


def test_docx_core_title_wins(tmp_path):
    assert load_one(make_docx(tmp_path / "r.docx", core_title="Official Name")).title == "Official Name"


def test_corrupt_docx(tmp_path):
    with pytest.raises(LoadError, match="^not a valid DOCX file"):
        load_file(write(tmp_path, "bad.docx", random.Random(1).randbytes(2000)))
    other_zip = tmp_path / "zip.docx"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("hello.txt", "not a word document")
    with pytest.raises(LoadError, match="^not a valid DOCX file"):
        load_file(other_zip)


# ----------------------------------------------------------------------------- CSV


def test_csv_rows_become_records_with_ragged_rows(tmp_path):
    text = "name,age,city\nAnn,30,Paris\nBob,25\nCid,40,Rome,extra\n,,\n"
    doc = load_one(write(tmp_path, "people.csv", text))
    assert doc.metadata["rows"] == 3
    assert doc.mime == "text/csv"
    assert doc.title == "people"
    assert doc.pages == [
        "name: Ann\nage: 30\ncity: Paris\n\n"
        "name: Bob\nage: 25\ncity:\n\n"
        "name: Cid\nage: 40\ncity: Rome\ncolumn 4: extra"
    ]


def test_csv_dialect_is_sniffed(tmp_path):
    text = 'product;price;note\n"Widget; large";9,50;"multi\nline"\nGadget;3,00;ok\n'
    doc = load_one(write(tmp_path, "prices.csv", text))
    assert doc.pages[0].split("\n\n")[0] == "product: Widget; large\nprice: 9,50\nnote: multi line"


def test_csv_with_only_a_header(tmp_path):
    with pytest.raises(LoadError, match="only a header"):
        load_file(write(tmp_path, "h.csv", "a,b,c\n"))


def test_csv_rows_are_chunked_whole(tmp_path):
    rows = "\n".join(f"{i},name{i},{'word ' * 20}" for i in range(60))
    doc = load_one(write(tmp_path, "t.csv", "id,name,notes\n" + rows))
    chunks = chunk_document(doc, doc_id="d", kb_id="k", chunk_size=500, chunk_overlap=0)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.text.startswith("id: ") and chunk.text.rstrip().endswith("word")


# ----------------------------------------------------------------------------- JSONL


def test_jsonl_one_document_per_record(tmp_path):
    lines = [
        {"_id": "a1", "title": "First", "text": "Alpha text.", "year": 2020},
        {"id": 7, "title": "Second", "text": "Beta text."},
        {"id": "n", "text": "No title."},
        {"id": "only-title", "title": "Just a title", "text": ""},
    ]
    body = "\n".join(json.dumps(x) for x in lines[:2]) + "\n\n" + "\n".join(json.dumps(x) for x in lines[2:]) + "\n"
    docs = load_file(write(tmp_path, "corpus.jsonl", body), display_name="c.jsonl")
    assert [d.doc_id for d in docs] == ["a1", "7", "n", "only-title"]
    assert [d.title for d in docs] == ["First", "Second", "", "Just a title"]
    assert [d.pages for d in docs] == [["Alpha text."], ["Beta text."], ["No title."], ["Just a title"]]
    assert {d.source for d in docs} == {"c.jsonl"}
    assert docs[0].metadata == {"year": 2020}


def test_jsonl_invalid_line_fails_the_file_with_its_line_number(tmp_path):
    body = '{"_id": "1", "text": "ok"}\n\n{"_id": "2", "text": "broken"\n'
    with pytest.raises(LoadError, match="^line 3: not valid JSON$"):
        load_file(write(tmp_path, "bad.jsonl", body))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('["a", "list"]', "line 2: expected a JSON object"),
        ('{"_id": "2", "title": "no text"}', 'line 2: no "text" field'),
        ('{"_id": "1", "text": "again"}', "line 2: duplicate id '1' (first on line 1)"),
    ],
)
def test_jsonl_schema_errors(tmp_path, line, reason):
    body = '{"_id": "1", "text": "ok"}\n' + line + "\n"
    with pytest.raises(LoadError) as err:
        load_file(write(tmp_path, "bad.jsonl", body))
    assert str(err.value) == reason


@pytest.mark.skipif(not SCIFACT.is_file(), reason=f"SciFact corpus not found at {SCIFACT}")
def test_jsonl_scifact_corpus():
    docs = load_file(SCIFACT)  # its speed: benchmarks/loader_speed.py
    assert len(docs) == 5183
    assert len({d.doc_id for d in docs}) == 5183
    assert docs[0].doc_id == "4983" and docs[0].title.startswith("Microstructural development")


# ----------------------------------------------------------------------------- PDF (generated)


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


def test_pdf_page_limit(tmp_path):
    path = write(tmp_path, "long.pdf", make_pdf(["a page"] * 3))
    with pytest.raises(LoadError, match="^too many pages: 3 \\(the limit is 2\\)$"):
        load_file(path, max_pages=2)
    assert len(load_one(path, max_pages=3).pages) == 3


def test_pdf_without_text(tmp_path):
    with pytest.raises(LoadError, match="^no text found"):
        load_file(write(tmp_path, "blank.pdf", make_pdf(["", " "])))


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


# ----------------------------------------------------------------------------- PDF (real samples)


@needs_samples
def test_multicolumn_pdf_keeps_reading_order():
    doc = load_one(SAMPLE_PDFS / "026-latex-multicolumn" / "multicolumn.pdf")
    assert doc.page_count == 3
    first = doc.pages[0]
    assert first.startswith("Two-Column Document with Lorem Ipsum")
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
    page_of = []  # page number of every character of the full text, "\n\n" joins included
    for number, page in enumerate(geotopo.pages, start=1):
        page_of += [number] * (len(page) + 2)
    for chunk in chunks:
        assert chunk.text in "\n\n".join(geotopo.pages[chunk.page_start - 1 : chunk.page_end]) or chunk.chunk_type == "table"
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
