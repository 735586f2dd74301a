"""Several-part questions through the answer path (generation/parts.py, issue 53 part 1), with
the real store, reader, verifier and chain: each part answered with its own citations
(renumbered in order), a part the documents do not answer named, and the tokens streamed in
order."""

from __future__ import annotations

import re

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OP = Caller.operator()
HANDBOOK = ("# Handbook\n\n## Expenses\n\nExpenses are reimbursed within 30 days when the receipt is submitted "
            "through the travel desk.\n\n## Leave\n\nParental leave lasts 16 weeks at full pay.\n\n## Office\n\n"
            "The office opens at 8 o'clock on weekdays.\n")


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "handbook.md").write_text(HANDBOOK)
    w = Workspace(get_settings(tmp_path / "data"))
    w.create_kb("hb", caller=OP)
    assert w.ingest("hb", [tmp_path / "handbook.md"], caller=OP).reports[0].status == "ingested"
    yield w
    w.close()


def test_each_part_is_answered_with_its_own_citations(ws):
    a = ws.ask(["hb"], "How are expenses reimbursed and how long is parental leave?", caller=OP, no_cache=True)
    assert not a.abstained
    first, second = a.text.split("\n\n")
    assert "30 days" in first and "[1]" in first and "16 weeks" in second and "[2]" in second
    assert [(c.n, c.section) for c in a.citations] == [(1, "Handbook > Expenses"), (2, "Handbook > Leave")]
    assert {n for c in a.claims for n in c.cited} == {1, 2}  # the claims' markers follow the renumbering
    assert [p["question"] for p in a.signals["parts"]] == ["How are expenses reimbursed?", "How long is parental leave?"]
    assert a.plan["parts"] == 2 and 0 < a.confidence <= 1


def test_a_part_the_documents_do_not_answer_is_named(ws):
    a = ws.ask(["hb"], "When does the office open and how many sick days do we get?", caller=OP, no_cache=True)
    assert not a.abstained and "8 o'clock" in a.text
    assert "The documents do not answer this part: “How many sick days do we get?”" in a.text
    assert [p["abstained"] for p in a.signals["parts"]] == [False, True]
    assert all(c.section == "Handbook > Office" for c in a.citations)
    # a German question names its missing part in German
    a = ws.ask(["hb"], "Wann öffnet das Büro und wie viele Krankheitstage gibt es?", caller=OP, no_cache=True)
    assert "Diesen Teil beantworten die Dokumente nicht" in a.text


def test_no_part_answered_is_an_abstention_naming_each(ws):
    a = ws.ask(["hb"], "How many sick days do we get and who pays for the parking garage?", caller=OP, no_cache=True)
    assert a.abstained and a.text.count("The documents do not answer this part") == 2


def test_the_parts_stream_in_order_and_the_answer_is_cached_whole(ws):
    q = "How are expenses reimbursed and how long is parental leave?"
    req = ws.answer_request(["hb"], q, caller=OP)
    events = list(ws.answers.chain.stream(req))
    streamed = "".join(e.text for e in events if e.kind == "token")
    assert streamed.index("30 days") < streamed.index("16 weeks")
    final = [e.answer for e in events if e.kind == "answer"][-1]
    again = ws.ask(["hb"], q, caller=OP)
    assert again.cached and again.text == final.text


def test_splitting_can_be_switched_off(tmp_path):
    (tmp_path / "handbook.md").write_text(HANDBOOK)
    w = Workspace(get_settings(tmp_path / "data", multi_part=False))
    try:
        w.create_kb("hb", caller=OP)
        w.ingest("hb", [tmp_path / "handbook.md"], caller=OP)
        a = w.ask(["hb"], "How are expenses reimbursed and how long is parental leave?", caller=OP, no_cache=True)
        assert "parts" not in a.signals and not re.search(r"do not answer this part", a.text)
    finally:
        w.close()
