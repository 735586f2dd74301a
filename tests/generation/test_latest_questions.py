"""Time-aware questions (issue 53): "the latest" switches recency on for that question and the
answer says so; a cited source superseded by a newer version of the same document, or older
than the knowledge base's limit, is flagged on its citation. Real workspace, store, reader."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.generation.aging import document_key
from rag_core.generation.planner import CatalogueEntry
from rag_core.workspace import Workspace
from tests.test_dates import dated_pdf

OP = Caller.operator()
# Two editions worded alike: which comes first is for the dates to decide.
OLD = "Remote work policy. Employees may work from home up to two days per week with approval."
NEW = "Remote work policy. Employees may work from home up to three days per week with approval."


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("latest")
    w = Workspace(get_settings(root / "data", llm_crag=False, answer_cache=False))
    w.create_kb("hr", caller=OP)
    (root / "remote-work-policy-2023.pdf").write_bytes(dated_pdf(OLD, "D:20230110120000Z"))
    (root / "remote-work-policy-2025.pdf").write_bytes(dated_pdf(NEW, "D:20250110120000Z"))
    w.ingest("hr", [root / "remote-work-policy-2023.pdf", root / "remote-work-policy-2025.pdf"], caller=OP)
    yield w
    w.close()


def test_the_latest_puts_the_newer_edition_first_and_says_why(ws):
    plain = ws.ask(["hr"], "How many days per week may employees work remotely from home?", caller=OP)
    latest = ws.ask(["hr"], "What is the latest rule: how many days per week may employees work remotely from home?",
                    caller=OP)
    assert "recency" not in plain.signals
    assert "latest" in latest.signals["recency"]
    assert latest.sources[0]["source"] == "remote-work-policy-2025.pdf"
    assert "three days" in latest.text and latest.citations[0].date == "2025-01-10"
    # the dates decide, not the wording: with the other edition dated later, it comes first
    docs = {d.source: d for d in ws.list_documents("hr", caller=OP)}
    ws.set_document_date("hr", docs["remote-work-policy-2023.pdf"].doc_id, "2026-01-10", caller=OP)
    try:
        swapped = ws.ask(["hr"], "What is the latest rule: how many days per week may employees work remotely "
                                 "from home?", caller=OP)
        assert swapped.sources[0]["source"] == "remote-work-policy-2023.pdf"
    finally:
        ws.set_document_date("hr", docs["remote-work-policy-2023.pdf"].doc_id, "2023-01-10", caller=OP)
    # a knowledge base that prefers newer documents already keeps its own half-life
    kb = ws.get_kb("hr", caller=OP)
    ws.update_kb("hr", caller=OP, retrieval=replace(kb.retrieval, recency_half_life_days=30.0))
    try:
        own = ws.ask(["hr"], "What is the current rule on working from home?", caller=OP)
        assert "recency" not in own.signals
    finally:
        ws.update_kb("hr", caller=OP, retrieval=kb.retrieval)


def test_a_superseded_or_old_source_is_flagged_on_its_citation(ws):
    a = ws.ask(["hr"], "Does remote work need approval, and for how many days per week?", caller=OP, no_cache=True)
    old = [c for c in a.citations if c.source == "remote-work-policy-2023.pdf"]
    new = [c for c in a.citations if c.source == "remote-work-policy-2025.pdf"]
    assert old, a.citations  # the older edition is cited (the conflict between them is shown)
    assert old[0].stale == "superseded by remote-work-policy-2025.pdf (2025-01-10)"
    assert all(not c.stale for c in new)
    assert any("superseded" in s for s in a.signals["stale_sources"])
    kb = ws.get_kb("hr", caller=OP)
    ws.update_kb("hr", caller=OP, retrieval=replace(kb.retrieval, stale_after_days=30))
    try:
        b = ws.ask(["hr"], "How many days per week may employees work from home with approval?", caller=OP,
                   no_cache=True)
        flagged = {c.source: c.stale for c in b.citations}
        assert flagged.get("remote-work-policy-2025.pdf", "").startswith("dated 2025-01-10, older than 30 days")
    finally:
        ws.update_kb("hr", caller=OP, retrieval=kb.retrieval)


def test_versions_of_one_document_share_a_key_and_different_documents_do_not():
    def key(source, title=""):
        return document_key(CatalogueEntry("k", "d", source, title))

    assert key("Travel policy 2023.pdf") == key("travel-policy-2024.pdf") == "travel policy"
    assert key("Handbook v2.docx") == key("handbook_v3.docx") == key("Handbook (final).pdf")
    assert key("x.pdf", "Employee Handbook, 2nd edition") == key("y.pdf", "Employee handbook")  # titles win
    assert key("travel-policy.pdf") != key("expense-policy.pdf")
    assert key("2024.pdf") == ""  # nothing left to compare: never matched
