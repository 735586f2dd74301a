"""Whole-document lookups ("show me the biography file"): an answer that shows only an excerpt
of the document must not claim to answer the request fully. Real workspace, real models."""

from __future__ import annotations

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OP = Caller.operator()

PARAGRAPH = ("In {year} she moved to a new city and took up work at the {n}th workshop of the guild, where she "
             "learned to repair clocks, bind books and keep the accounts of a dozen small traders; the letters "
             "she wrote that year describe long evenings of practice, the friends she made at the market, and "
             "the plans she drew for a school of her own that would teach the same crafts to anyone who asked. ")


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("lookup")
    w = Workspace(get_settings(root / "data"))
    long = "# Biography of Ada Example\n\n" + "\n\n".join(
        f"## Year {1900 + i}\n\n" + PARAGRAPH.format(year=1900 + i, n=i + 4) * 2 for i in range(14))
    (root / "biography.md").write_text(long)
    (root / "recipe.md").write_text("# Recipe\n\nMix flour and water.\n")
    w.create_kb("people", caller=OP)
    w.ingest("people", [root / "biography.md", root / "recipe.md"], caller=OP)
    yield w
    w.close()


def test_a_truncated_lookup_does_not_claim_to_answer_fully(ws):
    r = ws.search(["people"], "show me the biography file", caller=OP)
    assert r.lookup_source == "biography.md"
    a = ws.ask(["people"], "show me the biography file", caller=OP)
    assert not a.abstained and a.citations
    assert a.answers_question < 1.0 and a.confidence < 1.0  # an excerpt, scored like any answer
    assert "excerpt of biography.md" in a.text  # and it says so


def test_a_lookup_shown_whole_answers_the_request(ws):
    a = ws.ask(["people"], "show me the recipe file", caller=OP)
    assert not a.abstained and "Mix flour and water" in a.text
    assert a.answers_question == 1.0 and "excerpt" not in a.text
