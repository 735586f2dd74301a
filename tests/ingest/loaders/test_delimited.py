"""CSV: records with their header."""

from __future__ import annotations

import pytest

from rag_core.errors import LoadError
from rag_core.ingest.chunker import chunk_document
from rag_core.ingest.loaders import load_file
from tests.ingest.loaders.util import load_one, write


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
