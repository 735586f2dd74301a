"""Conflicting sources (grounding/conflicts.py) through the real answer chain: real store,
embedder, reranker and reader; documents written for the test."""

from __future__ import annotations

import json

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.grounding.conflicts import asked_kind, values
from rag_core.models import conflict_note
from rag_core.render import plain_answer
from rag_core.workspace import Workspace

OP = Caller.operator()


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("conflicts")
    w = Workspace(get_settings(root / "data", llm_crag=False))
    w.create_kb("docs", caller=OP)
    (root / "travel-2023.md").write_text("# Travel policy 2023\n\nThe daily travel allowance for trips abroad is "
                                         "40 euros. Hotel costs are refunded up to 120 euros per night.\n")
    (root / "travel-2025.md").write_text("# Travel policy 2025\n\nThe daily travel allowance for trips abroad is "
                                         "55 euros. Flights must be booked in economy class.\n")
    (root / "report-a.md").write_text("# Annual report\n\nThe company had 1,200 employees at the end of 2024. "
                                      "Revenue grew strongly.\n")
    (root / "report-b.md").write_text("# Audit report\n\nAt the end of 2024 the company employed 950 people. "
                                      "The audit found no issues.\n")
    (root / "canteen.md").write_text("# Canteen\n\nThe canteen serves 300 meals a day. It opens at 11.\n")
    (root / "garage.md").write_text("# Garage\n\nThe garage has 80 parking spaces for staff.\n")
    w.ingest("docs", sorted(root.glob("*.md")), caller=OP, date=None)
    docs = {d.source: d.doc_id for d in w.list_documents("docs", caller=OP)}
    w.set_document_date("docs", docs["travel-2023.md"], "2023-01-15", caller=OP)
    w.set_document_date("docs", docs["travel-2025.md"], "2025-01-15", caller=OP)
    yield w
    w.close()


def test_two_versions_of_a_policy_both_cited_with_their_dates(ws):
    a = ws.ask(["docs"], "What is the daily travel allowance abroad?", caller=OP)
    assert not a.abstained and len(a.conflicts) == 1
    cf = a.conflicts[0]
    sides = {s["source"]: s for s in cf["sides"]}
    assert set(sides) == {"travel-2023.md", "travel-2025.md"} and cf["kind"] == "number"
    assert sides["travel-2023.md"]["values"] == ["40"] and sides["travel-2025.md"]["values"] == ["55"]
    assert sides["travel-2023.md"]["date"] == "2023-01-15" and sides["travel-2025.md"]["date"] == "2025-01-15"
    # both sides are in the text, each with its own citation, and neither is dropped
    assert "40 euros" in a.text and "55 euros" in a.text
    cited = {c.n: c.source for c in a.citations}
    for s in cf["sides"]:
        assert cited[s["n"]] == s["source"] and f"[{s['n']}]" in a.text
    note = conflict_note(cf)
    assert "disagree" in note and "2023-01-15" in note and "2025-01-15" in note
    assert note in plain_answer(a)
    assert all(c.label == "supported" for c in a.claims)  # the rival's sentence is verbatim, so supported


def test_two_reports_that_disagree(ws):
    a = ws.ask(["docs"], "How many employees did the company have at the end of 2024?", caller=OP)
    assert len(a.conflicts) == 1
    assert {s["source"] for s in a.conflicts[0]["sides"]} == {"report-a.md", "report-b.md"}
    assert "1,200" in a.text and "950" in a.text


def test_different_numbers_about_different_things_are_not_a_conflict(ws):
    for q in ("How many meals does the canteen serve?", "How many parking spaces does the garage have?",
              "When does the canteen open?"):
        a = ws.ask(["docs"], q, caller=OP)
        assert not a.abstained and a.conflicts == [], q


def test_conflicts_in_the_cli_json_line(ws, tmp_path):
    from rag_core.schemas import AnswerOut

    a = ws.ask(["docs"], "What is the daily travel allowance abroad?", caller=OP)
    line = json.loads(json.dumps(AnswerOut.of(a, "q1").model_dump()))
    assert line["conflicts"][0]["kind"] == "number" and len(line["conflicts"][0]["sides"]) == 2


def test_value_extraction_and_question_kinds():
    assert asked_kind("How many people live there?") == "number"
    assert asked_kind("When was it founded?") == "date"
    assert asked_kind("Who wrote it?") == "name"
    assert asked_kind("Is parking free?") == "yes/no"
    assert asked_kind("What colour is it?") is None
    assert values("It has 1,200 staff and two sites, since 1998.", "number") == {"1200", "2"}
    assert values("Founded on 2021-03-04, rebuilt in 1998 and in March.", "date") == {"2021-03-04", "1998", "march"}
    assert values("Parking is not free.", "yes/no") == {"no"} and values("Parking is free.", "yes/no") == {"yes"}
