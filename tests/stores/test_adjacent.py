"""A passage inside its document: the chunks around it joined once, with the break between them."""

from __future__ import annotations

from rag_core.models import Chunk
from rag_core.stores.adjacent import adjacent_ids, widened

DOC = "```\nquit();\n```\nThe first two lines show what happens. Nothing major.\nThe end is near."


def _chunk(n: int, a: int, b: int, page: int) -> Chunk:
    return Chunk(chunk_id=f"kb/doc#{n}", doc_id="doc", kb_id="kb", text=DOC[a:b], ordinal=n,
                 char_start=a, char_end=b, page_start=page, page_end=page)


def test_ids_around_a_chunk():
    assert adjacent_ids("kb/doc#4") == ("kb/doc#3", "kb/doc#5")
    assert adjacent_ids("kb/doc#0") == (None, "kb/doc#1")
    assert adjacent_ids("no-ordinal") == (None, None)


def test_overlapping_chunks_join_without_repeating_text():
    mid = DOC.index("The first")
    prev, cur, nxt = _chunk(0, 0, mid + 9, 1), _chunk(1, mid, DOC.index("The end") + 3, 2), _chunk(2, DOC.index("The end"), len(DOC), 3)
    w = widened(cur, prev, nxt)
    assert w.text == DOC
    assert (w.chunk_id, w.page_start, w.page_end) == ("kb/doc#1", 1, 3)
    assert (w.char_start, w.char_end) == (0, len(DOC))


def test_chunks_cut_at_a_break_join_with_it():
    # the chunker drops the newline it cut at: joined bare, the closing fence would run into
    # the next sentence ("```The first …") and the code block would never close
    fence_end = DOC.index("The first") - 1
    prev, cur = _chunk(0, 0, fence_end, 1), _chunk(1, fence_end + 1, len(DOC), 1)
    w = widened(cur, prev, None)
    assert w.text == DOC
    assert widened(cur, None, None) is cur
