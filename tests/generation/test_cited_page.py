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
