"""Choosing a loader: extensions, display names, empty and missing files."""

from __future__ import annotations

import pytest

from rag_core.errors import LoadError, UnsupportedFileType
from rag_core.ingest.loaders import (
    SUPPORTED_EXTENSIONS,
    load_file,
    title_from_filename,
)
from tests.ingest.loaders.util import load_one, write


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
        {".pdf", ".txt", ".md", ".markdown", ".html", ".htm", ".docx", ".csv", ".jsonl", ".pptx", ".xlsx", ".epub",
         # source code (issue 53)
         ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".java", ".c", ".h", ".cpp", ".cc",
         ".cxx", ".hpp", ".cs", ".rs", ".rb", ".php", ".sh", ".bash", ".sql"}
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


def test_new_formats_are_supported():
    assert {".pptx", ".xlsx", ".epub"} <= SUPPORTED_EXTENSIONS


def test_broken_files_of_the_new_formats_get_a_reason(tmp_path):
    for name in ("bad.pptx", "bad.xlsx", "bad.epub"):
        f = tmp_path / name
        f.write_bytes(b"PK\x03\x04 not really a zip")
        with pytest.raises(LoadError, match="not a valid"):
            load_file(f)
