"""A passage that crosses a page break is cited at the page its cited sentence is on (it was
cited at the page the passage starts on: a right answer then pointed at the wrong page)."""

from __future__ import annotations

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace
from tests.helpers import make_pdf

OP = Caller.operator()


def test_citation_page_is_where_the_cited_sentence_is(tmp_path):
    p1 = "Lighthouse keeping\nThe keeper lights the lamp at dusk and logs the weather every evening."
    p2 = "The keeper climbs 217 steps to reach the lantern room.\nThe lens was made in Paris."
    pdf = tmp_path / "keeper.pdf"
    pdf.write_bytes(make_pdf([p1, p2]))
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Coast", caller=OP)
    ws.ingest("Coast", [pdf], caller=OP)
    a = ws.ask(["Coast"], "How many steps does the keeper climb?", caller=OP)
    assert not a.abstained and "217" in a.text
    cited = a.citations[0]
    chunk = ws.store.get_chunks([cited.chunk_id])[0]
    assert (chunk.page_start, chunk.page_end) == (1, 2)  # the passage crosses the page break
    assert cited.page == 2
    ws.close()


def test_an_llm_answer_cites_the_page_of_its_sentence_not_of_most_of_the_passage(tmp_path):
    # A fake chat model (no LLM runs here) writes the sentence from page 2; the passage holds far
    # more words of page 1, so the page holding most of the passage would be the wrong one.
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from rag_core.generation.chain import AnswerEngine

    p1 = ("Lighthouse keeping\nThe keeper lights the lamp at dusk and logs the weather every evening. "
          "Storms are noted with their direction and strength, and the log is sent to the harbour office "
          "at the end of each month, together with the oil consumption and any repairs made to the lamp.")
    p2 = "The keeper climbs 217 steps to reach the lantern room.\nThe lens was made in Paris."
    pdf = tmp_path / "keeper.pdf"
    pdf.write_bytes(make_pdf([p1, p2]))
    ws = Workspace(get_settings(tmp_path / "data"))
    try:
        ws.create_kb("Coast", caller=OP)
        ws.ingest("Coast", [pdf], caller=OP)
        chat = FakeListChatModel(responses=["The keeper climbs 217 steps to reach the lantern room [1]."])
        engine = AnswerEngine(ws.retrieval, ws.embedder, ws.store,
                              ws.settings.model_copy(update={"llm_crag": False, "answer_policy": "model"}),
                              chat=chat, locate_page=ws._page_of)
        a = engine.answer(ws.answer_request(["Coast"], "How many steps does the keeper climb?", caller=OP))
        assert not a.abstained and a.mode == "llm"
        chunk = ws.store.get_chunks([a.citations[0].chunk_id])[0]
        assert (chunk.page_start, chunk.page_end) == (1, 2)
        assert a.citations[0].page == 2
    finally:
        ws.close()
