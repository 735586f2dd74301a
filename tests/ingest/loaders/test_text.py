"""TXT and Markdown: encodings, binary detection, titles."""

from __future__ import annotations

import random

import pytest

from rag_core.errors import LoadError
from rag_core.ingest.loaders import load_file
from tests.ingest.loaders.util import load_one, write


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
