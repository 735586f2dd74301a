"""DOCX: headings, lists, tables in body order."""

from __future__ import annotations

import random
import re
import zipfile
from datetime import datetime
from pathlib import Path

import docx
import pytest

from rag_core.errors import LoadError
from rag_core.ingest.loaders import load_file
from tests.ingest.loaders.util import load_one, write


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


def test_docx_date_is_the_modified_core_property(tmp_path):
    path = make_docx(tmp_path / "dated.docx")
    document = docx.Document(str(path))
    document.core_properties.created = datetime(2019, 4, 5, 6, 7, 8)
    document.core_properties.modified = datetime(2024, 11, 30, 23, 59)
    document.save(path)
    assert load_one(path).metadata["date"] == "2024-11-30"


def test_docx_without_core_properties_has_no_date(tmp_path):
    """python-docx would make up core properties dated now; the file states no date."""
    src = make_docx(tmp_path / "src.docx")
    path = tmp_path / "bare.docx"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename == "_rels/.rels":
                data = re.sub(rb'<Relationship [^>]*core-properties"[^>]*/>', b"", data)
            if item.filename != "docProps/core.xml":
                zout.writestr(item, data)
    doc = load_one(path)
    assert doc.title == "Project Report" and "date" not in doc.metadata
