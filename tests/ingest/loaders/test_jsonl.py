"""JSONL: one document per record."""

from __future__ import annotations

import json

import pytest

from rag_core.errors import LoadError
from rag_core.ingest.loaders import load_file
from tests.ingest.loaders.util import SCIFACT, write


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


@pytest.mark.parametrize(
    ("value", "date"),
    [
        ("2021-06-30", "2021-06-30"),
        ("2021-06-30T23:15:00-07:00", "2021-06-30"),
        (1700000000, "2023-11-14"),
        (1700000000.5, "2023-11-14"),
        (2019, "2019-01-01"),
        ("2019", "2019-01-01"),
        ("not a date", None),
        (None, None),
        ("1850-01-01", None),
    ],
)
def test_jsonl_date_is_normalised(tmp_path, value, date):
    body = json.dumps({"_id": "1", "text": "t", "date": value, "lang": "en"})
    [doc] = load_file(write(tmp_path, "d.jsonl", body))
    assert doc.metadata == ({"lang": "en", "date": date} if date else {"lang": "en"})


def test_jsonl_invalid_line_fails_the_file_with_its_line_number(tmp_path):
    body = '{"_id": "1", "text": "ok"}\n\n{"_id": "2", "text": "broken"\n'
    with pytest.raises(LoadError, match="^line 3: not valid JSON$"):
        load_file(write(tmp_path, "bad.jsonl", body))


def test_jsonl_names_every_broken_line_so_one_round_of_fixes_does_it(tmp_path):
    rows = [json.dumps({"_id": str(i), "text": f"row {i}"}) for i in range(1, 31)]
    for i in (5, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 25):  # twelve broken lines
        rows[i - 1] = rows[i - 1][:-3]
    with pytest.raises(LoadError) as err:
        load_file(write(tmp_path, "bad.jsonl", "\n".join(rows)))
    msg = str(err.value)
    assert msg.startswith("12 lines cannot be read, so nothing of this file was imported: line 5: not valid JSON;")
    assert "line 20: not valid JSON" in msg and "line 21" not in msg and msg.endswith("and 2 more")


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
