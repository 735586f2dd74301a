"""Trusted and draft documents through the Workspace (issue 53, part 4): real store, reader
and answer chain. A draft is out of search and answers unless asked for; a trusted source
carries its mark on citations and is named first, with the reason, when sources disagree;
a mark applies to the next question (no answer cached before it is served)."""

from __future__ import annotations

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.errors import InputError
from rag_core.generation.steps import AnswerOptions
from rag_core.models import conflict_note
from rag_core.workspace import Workspace

OP = Caller.operator()
QUESTION = "How many vacation days does every employee get?"
FILES = {"leave-policy.md": "# Leave policy\n\nEvery employee gets 25 vacation days per year. Unused days expire in March.\n",
         "team-wiki.md": "# Team wiki\n\nEvery employee gets 20 vacation days per year, according to the team wiki.\n",
         "proposal.md": "# Draft leave proposal\n\nEvery employee gets 30 vacation days per year under the proposal.\n"}


@pytest.fixture
def ws(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    w = Workspace(get_settings(tmp_path / "data"))
    w.create_kb("hr", caller=OP)
    assert all(r.status == "ingested" for r in w.ingest("hr", [tmp_path / n for n in FILES], caller=OP).reports)
    yield w
    w.close()


def ids(ws) -> dict[str, str]:
    return {d.source: d.doc_id for d in ws.list_documents("hr", caller=OP)}


def sources(answer) -> set[str]:
    return {c.source for c in answer.citations}


def test_a_draft_is_left_out_of_search_and_answers_unless_asked_for(ws):
    assert "proposal.md" in sources(ws.ask(["hr"], QUESTION, caller=OP, no_cache=True))
    ws.set_document_trust("hr", ids(ws)["proposal.md"], "draft", caller=OP)
    assert {d.source: d.trust for d in ws.list_documents("hr", caller=OP)}["proposal.md"] == "draft"
    a = ws.ask(["hr"], QUESTION, caller=OP)  # answer cache on: the mark moved the content version
    assert "proposal.md" not in sources(a) and "30" not in a.text
    assert all(r.chunk.source != "proposal.md" for r in ws.search(["hr"], "vacation days proposal", caller=OP).results)
    # asked for: the draft is back, in search and in answers
    assert any(r.chunk.source == "proposal.md"
               for r in ws.search(["hr"], "vacation days proposal", caller=OP, include_drafts=True).results)
    assert "proposal.md" in sources(ws.ask(["hr"], QUESTION, caller=OP, options=AnswerOptions(include_drafts=True)))
    # and a question about the draft itself by name does not open it either
    a = ws.ask(["hr"], "What does the draft leave proposal say?", caller=OP, no_cache=True)
    assert "proposal.md" not in sources(a)


def test_a_trusted_source_is_marked_and_named_first_in_a_conflict_with_the_reason(ws):
    doc = ws.set_document_trust("hr", ids(ws)["leave-policy.md"], "trusted", caller=OP)
    assert doc.trust == "trusted"
    ws.set_document_trust("hr", ids(ws)["proposal.md"], "draft", caller=OP)
    a = ws.ask(["hr"], QUESTION, caller=OP, no_cache=True)
    marked = {c.source: c.trusted for c in a.citations}
    assert marked.get("leave-policy.md") is True and marked.get("team-wiki.md", False) is False
    assert a.conflicts, a.text
    sides = a.conflicts[0]["sides"]
    assert sides[0]["source"] == "leave-policy.md" and sides[0]["trusted"] and not sides[1]["trusted"]
    note = conflict_note(a.conflicts[0])
    assert note.index("leave-policy.md") < note.index("team-wiki.md")
    assert "marked it trusted" in note
    # the mark also lifts its passages in ranking (retrieval/trust.py)
    hit = next(r for r in ws.search(["hr"], "vacation days", caller=OP).results if r.chunk.source == "leave-policy.md")
    assert hit.scores.get("trusted", 1.0) > 1.0


def test_a_mark_is_checked_and_a_missing_document_is_not_found(ws):
    with pytest.raises(InputError, match="trusted, normal, draft"):
        ws.set_document_trust("hr", ids(ws)["team-wiki.md"], "verified", caller=OP)
    from rag_core.errors import NotFound

    with pytest.raises(NotFound):
        ws.set_document_trust("hr", "nope", "trusted", caller=OP)
    ws.set_document_trust("hr", ids(ws)["team-wiki.md"], "trusted", caller=OP)
    ws.set_document_trust("hr", ids(ws)["team-wiki.md"], "normal", caller=OP)
    assert {d.source: d.trust for d in ws.list_documents("hr", caller=OP)}["team-wiki.md"] == "normal"
