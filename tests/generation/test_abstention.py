"""An abstention that still helps (issue 25): the passages nearest to answering are listed,
never as an answer — not cited, not scored, not logged as one. Real model, real store."""

from __future__ import annotations

import json

import pytest

from rag_core.access import Caller
from rag_core.cli import main
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OP = Caller.operator()
# Until issue 26's PDF headings, the reader read "title — section | sentence" and this test
# asked "How many tourists visited Iceland's volcanoes in 2019?". With the title only (what the
# reader was trained on; 48% -> 63% near-miss abstention on five manuals) that near-miss now
# scores 0.18, just over the 0.16 threshold, and is answered: a known regression on this toy
# file, recorded in issue 25's note. This test is about what an abstention shows, so it asks a
# near-miss the passages plainly do not answer.
QUESTION = "Who first mapped Iceland's volcanoes?"


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("abstain")
    w = Workspace(get_settings(tmp / "data"))
    w.create_kb("Geo", caller=OP)
    (tmp / "volcanoes.md").write_text(
        "# Volcanoes of Iceland\n\nIceland has about 130 volcanoes. Tourists like to watch the lava flows "
        "near Reykjavik.\n\n# Glaciers\n\nVatnajokull is the largest glacier in Europe by volume.\n")
    w.ingest("Geo", [tmp / "volcanoes.md"], caller=OP)
    yield w
    w.close()


def test_abstention_lists_the_closest_passages_and_cites_nothing(ws):
    a = ws.ask(["Geo"], QUESTION, caller=OP)
    assert a.abstained, a.text
    assert a.citations == [] and a.claims == []
    assert a.closest, "an abstention with a topical passage in hand shows it"
    top = a.closest[0]
    assert top.source == "volcanoes.md" and top.section == "Volcanoes of Iceland"
    assert "130 volcanoes" in top.snippet  # the sentence nearest the question is what is highlighted
    # shown inside its paragraph, as an offline answer would be, that sentence in bold
    assert top.snippet in " ".join(top.passage.split()) and "Tourists like to watch" in top.passage
    from rag_core.render import passage_markdown

    assert "**Iceland has about 130 volcanoes\\.**" in passage_markdown(top.passage, top.snippet)
    assert [c.n for c in a.closest] == list(range(1, len(a.closest) + 1))
    # the closest passage is openable like a citation: the viewer's access check applies
    assert ws.cited_context(a.closest[0], caller=OP)
    # logged as an abstention, not as an answer with sources
    qid = ws.feedback_for(caller=OP).log_answer(a, [ws.get_kb("Geo", caller=OP).kb_id])
    row = ws.feedback_for(caller=OP).frame().set_index("query_id").loc[qid]
    assert bool(row["abstained"]) and row["sources"] == "" and json.loads(row["citations"]) == []
    # saved with a conversation and read back
    from rag_core.models import Answer

    assert Answer.from_dict(a.to_dict()).closest == a.closest


def test_an_answer_has_no_closest_list(ws):
    a = ws.ask(["Geo"], "How many volcanoes does Iceland have?", caller=OP)
    assert not a.abstained and a.closest == []


def test_cli_ask_json_carries_closest(ws, capsys):
    code = main(["--json", "--data-dir", str(ws.settings.data_dir), "ask", "--kb", "Geo", QUESTION])
    row = json.loads(capsys.readouterr().out)
    assert code == 0 and row["abstained"] and row["citations"] == []
    assert row["closest"] and set(row["closest"][0]) == {"n", "doc_id", "source", "page", "chunk_id", "snippet", "score", "date",
                                                           "section", "trusted"}


def test_the_rephrasing_tip_names_the_questions_topic_words_only(ws):
    a = ws.ask(["Geo"], "Why doesn't anyone think the submarine cable equals fibre bandwidth?", caller=OP)
    assert a.abstained
    tip = next(s for s in a.suggestions if s.startswith("Try other words"))
    assert "submarine" in tip and "cable" in tip
    for noise in ("doesn't", "think", "equals", "anyone"):
        assert noise not in tip, tip
