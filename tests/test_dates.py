"""Document dates end to end: stated in real files (PDF /ModDate written with pypdf, DOCX core
properties written with python-docx), else the upload day, else set by hand; filtered inside
the store by chat, CLI and API callers; carried by every citation; and a knowledge base's
recency preference putting the newer of two editions first. Real workspace, store, models."""

from __future__ import annotations

import io
import json
import sqlite3
import time
from dataclasses import replace

import pytest

from rag_core.access import Caller, PermissionDenied
from rag_core.config import get_settings
from rag_core.errors import InputError, NotFound
from rag_core.models import upload_day
from rag_core.workspace import Workspace
from tests.helpers import make_pdf

OP = Caller.operator()
ANN = Caller.of("ann")
BOB = Caller.of("bob")


def dated_pdf(text: str, mod: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([text]))))
    w.add_metadata({"/ModDate": mod, "/CreationDate": "D:20010101000000Z"})
    out = io.BytesIO()
    w.write(out)
    return out.getvalue()


# The 2023 edition mentions the topic more often, so by relevance alone it ranks first.
OLD = ("Travel policy, 2023 edition. Travel expenses: the daily travel allowance for travel abroad is 40 euros. "
       "Travel must be booked through the travel desk.")
NEW = ("Travel policy, 2025 edition. The daily travel allowance for travel abroad is 55 euros. "
       "Trips must be booked through the booking portal.")


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("dates")
    w = Workspace(get_settings(root / "data", llm_crag=False))
    w.create_kb("policies", caller=ANN, acl_users=["ann"])
    (root / "old.pdf").write_bytes(dated_pdf(OLD, "D:20230301120000Z"))
    (root / "new.pdf").write_bytes(dated_pdf(NEW, "D:20250301120000Z"))
    import docx

    d = docx.Document()
    d.add_paragraph("The canteen opens at 8 o'clock and closes at 15 o'clock on weekdays.")
    d.core_properties.modified = __import__("datetime").datetime(2024, 5, 17, 9, 0)
    d.save(root / "canteen.docx")
    (root / "notes.md").write_text("# Notes\n\nThe parking garage is closed on Sundays.\n")
    w.ingest("policies", [root / n for n in ("old.pdf", "new.pdf", "canteen.docx", "notes.md")], caller=ANN)
    w.root = root
    yield w
    w.close()


def by_source(ws, caller=ANN):
    return {d.source: d for d in ws.list_documents("policies", caller=caller)}


def test_dates_come_from_file_metadata_else_the_upload_day(ws):
    docs = by_source(ws)
    assert (docs["old.pdf"].date, docs["old.pdf"].date_source) == ("2023-03-01", "metadata")  # ModDate over CreationDate
    assert (docs["new.pdf"].date, docs["new.pdf"].date_source) == ("2025-03-01", "metadata")
    assert (docs["canteen.docx"].date, docs["canteen.docx"].date_source) == ("2024-05-17", "metadata")
    assert (docs["notes.md"].date, docs["notes.md"].date_source) == (upload_day(time.time()), "upload")


def test_date_filters_run_in_search_and_answers_and_citations_carry_the_date(ws):
    newer = ws.search(["policies"], "daily travel allowance abroad", k=5, caller=ANN, after="2024-01-01")
    assert newer.results and {r.chunk.source for r in newer.results} <= {"new.pdf", "canteen.docx", "notes.md"}
    older = ws.search(["policies"], "daily travel allowance abroad", k=5, caller=ANN, before="2023-12-31")
    assert {r.chunk.source for r in older.results} == {"old.pdf"}
    a = ws.ask(["policies"], "What is the daily travel allowance abroad?", caller=ANN, before="2023-12-31")
    assert not a.abstained and "40" in a.text
    assert {c.date for c in a.citations} == {"2023-03-01"}
    a = ws.ask(["policies"], "What is the daily travel allowance abroad?", caller=ANN, after="2025-01-01",
               before="2025-12-31")
    assert not a.abstained and "55" in a.text and {c.date for c in a.citations} == {"2025-03-01"}
    with pytest.raises(InputError, match="empty"):
        ws.search(["policies"], "travel", caller=ANN, after="2025-01-01", before="2024-01-01")
    with pytest.raises(InputError, match="YYYY-MM-DD"):
        ws.search(["policies"], "travel", caller=ANN, after="last week")


def test_recency_preference_puts_the_newer_edition_first_and_is_off_by_default(ws):
    """Two editions of one policy, worded alike: with a half-life the newer comes first, and
    swapping their dates swaps the order (the dates decide, not wording); off by default."""
    root = ws.root
    body = "Remote work policy. Employees may work from home up to {} days per week with approval."
    (root / "remote-a.pdf").write_bytes(dated_pdf(body.format("two"), "D:20230110120000Z"))
    (root / "remote-b.pdf").write_bytes(dated_pdf(body.format("three"), "D:20250110120000Z"))
    ws.create_kb("editions", caller=ANN)
    ws.ingest("editions", [root / "remote-a.pdf", root / "remote-b.pdf"], caller=ANN)
    q = "How many days per week may employees work from home?"
    off = ws.search(["editions"], q, k=2, caller=ANN).results
    assert len(off) == 2 and all("recency" not in r.scores for r in off)
    kb = ws.get_kb("editions", caller=ANN)
    ws.update_kb("editions", caller=ANN, retrieval=replace(kb.retrieval, recency_half_life_days=365.0))
    ranked = ws.search(["editions"], q, k=2, caller=ANN).results
    assert [r.chunk.source for r in ranked] == ["remote-b.pdf", "remote-a.pdf"]
    assert ranked[0].scores["recency"] > ranked[1].scores["recency"]
    docs = {d.source: d.doc_id for d in ws.list_documents("editions", caller=ANN)}
    ws.set_document_date("editions", docs["remote-a.pdf"], "2026-01-10", caller=ANN)
    ranked = ws.search(["editions"], q, k=2, caller=ANN).results
    assert [r.chunk.source for r in ranked] == ["remote-a.pdf", "remote-b.pdf"]


def test_owner_edits_a_date_and_filters_follow_at_once(ws):
    notes = by_source(ws)["notes.md"]
    with pytest.raises(PermissionDenied):  # a reader may not change it
        ws.set_document_date("policies", notes.doc_id, "2019-01-01", caller=_reader(ws))
    with pytest.raises(NotFound):  # a hidden knowledge base reads like a missing one
        ws.set_document_date("policies", notes.doc_id, "2019-01-01", caller=BOB)
    with pytest.raises(InputError):
        ws.set_document_date("policies", notes.doc_id, "31/12/2019", caller=ANN)
    doc = ws.set_document_date("policies", notes.doc_id, "2019-07-01", caller=ANN)
    assert (doc.date, doc.date_source) == ("2019-07-01", "set")
    assert by_source(ws)["notes.md"].date == "2019-07-01"
    hits = ws.search(["policies"], "parking garage Sundays", k=3, caller=ANN, before="2019-12-31")
    assert [r.chunk.source for r in hits.results] == ["notes.md"]


def _reader(ws):
    """A reader of the knowledge base who is not an owner."""
    ws.update_kb("policies", caller=ANN, acl_users=["ann", "rita"])
    return Caller.of("rita")


def test_cli_ingest_date_and_ask_search_after_before(tmp_path):
    from tests.test_cli import run

    data = tmp_path / "data"
    run(data, "kb", "create", "memos")
    (tmp_path / "memo.txt").write_text("The office move happens on the first of March.")
    rep = json.loads(run(data, "ingest", "--kb", "memos", "--date", "2022-02-14", str(tmp_path / "memo.txt"),
                         "--json").stdout)
    doc_id = rep["files_report"][0]["doc_ids"][0]
    line = json.loads(run(data, "ask", "--kb", "memos", "When does the office move happen?", "--json").stdout)
    assert line["citations"] and line["citations"][0]["date"] == "2022-02-14"
    none = run(data, "search", "--kb", "memos", "--query", "office move", "--after", "2023-01-01", "--json")
    assert json.loads(none.stdout)["results"] == []
    some = run(data, "search", "--kb", "memos", "--query", "office move", "--before", "2022-12-31", "--json")
    assert [r["doc_id"] for r in json.loads(some.stdout)["results"]] == [doc_id]
    run(data, "date", "--kb", "memos", doc_id, "2024-01-02")
    moved = run(data, "search", "--kb", "memos", "--query", "office move", "--after", "2023-01-01", "--json")
    assert [r["doc_id"] for r in json.loads(moved.stdout)["results"]] == [doc_id]
    bad = run(data, "ask", "--kb", "memos", "office?", "--after", "soon", ok=False)
    assert bad.returncode != 0 and "YYYY-MM-DD" in bad.stderr


def test_data_folder_from_before_dates_is_backfilled_with_upload_days(tmp_path):
    """An older folder: no doc_date column values, chunks without a day. On open, every
    document is dated by its upload day and date filters find its chunks."""
    settings = get_settings(tmp_path / "data", llm_crag=False)
    w = Workspace(settings)
    w.create_kb("old", caller=OP)
    (tmp_path / "a.md").write_text("# A\n\nThe boiler is serviced every October.\n")
    w.ingest("old", [tmp_path / "a.md"], caller=OP, embed=False)
    w.close()
    con = sqlite3.connect(settings.db_path)  # make it look like a folder from before dates
    con.execute("UPDATE documents SET doc_date=NULL, date_source=NULL, created_at=?",
                (time.mktime((2021, 6, 5, 12, 0, 0, 0, 0, -1)),))
    con.execute("UPDATE chunks SET doc_day=0")
    con.execute("DELETE FROM meta WHERE key='doc_dates'")
    con.commit()
    con.close()
    w = Workspace(settings)
    try:
        assert w.list_documents("old", caller=OP)[0].date == "2021-06-05"
        hits = w.search(["old"], "boiler serviced", k=3, mode="keyword", caller=OP, after="2021-06-01",
                        before="2021-06-30")
        assert hits.results and hits.results[0].chunk.date == "2021-06-05"
    finally:
        w.close()
