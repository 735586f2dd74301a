"""A passage inside the document text around it: the chunks just before and after a chunk,
and their text joined without the overlap the chunker repeats.

Chunk boundaries are the chunker's, not the author's: a chunk may begin in the middle of a
sentence ("9), a list … returns a non-zero status") or just after the command its first
sentence refers to ("This will record the entire session …"). The offline answer and the
citation viewer read the passage in its neighbours' text, fetched by id (three chunks,
never the whole document).
"""

from __future__ import annotations

from dataclasses import replace

from ..models import Chunk


def adjacent_ids(chunk_id: str) -> tuple[str | None, str | None]:
    """The ids of the chunks before and after (chunk ids end in '#<ordinal>')."""
    prefix, _, ordinal = chunk_id.rpartition("#")
    if not prefix or not ordinal.isdigit():
        return None, None
    n = int(ordinal)
    return (f"{prefix}#{n - 1}" if n > 0 else None), f"{prefix}#{n + 1}"


def neighbours(store, chunk: Chunk) -> tuple[Chunk | None, Chunk | None]:
    """The chunks just before and after `chunk` in its document (None at either end, or when
    the store no longer holds them)."""
    before, after = adjacent_ids(chunk.chunk_id)
    ids = [i for i in (before, after) if i]
    got = {c.chunk_id: c for c in store.get_chunks(ids) if c.doc_id == chunk.doc_id} if ids else {}
    return got.get(before), got.get(after)


def _gap(a: Chunk, b: Chunk) -> str:
    """What stood between two chunks that do not overlap: the chunker cuts at line and
    paragraph breaks and drops them, so joining the texts bare would run a closing code fence
    into the next sentence ("```The first two lines …")."""
    gap = b.char_start - a.char_end
    return "" if gap <= 0 or a.char_end <= a.char_start else "\n" if gap == 1 else "\n\n"


def tail_before(a: Chunk, b: Chunk) -> str:
    """a's text up to where b starts, with the break between them (the whole of a when offsets
    are unknown)."""
    if a.char_end > a.char_start and b.char_start >= a.char_start:
        return a.text[: max(0, b.char_start - a.char_start)] + _gap(a, b)
    return a.text


def head_after(a: Chunk, b: Chunk) -> str:
    """b's text after where a ends, with the break between them (the whole of b when offsets
    are unknown)."""
    if b.char_end > b.char_start and a.char_end >= b.char_start:
        return b.text[max(0, a.char_end - b.char_start):]
    if b.char_end > b.char_start:
        return _gap(a, b) + b.text
    return b.text


def widened(chunk: Chunk, prev: Chunk | None, nxt: Chunk | None) -> Chunk:
    """`chunk` with its neighbours' text around it, once: the same id (citations still name
    the retrieved passage), the pages and offsets of all three."""
    before = tail_before(prev, chunk) if prev else ""
    after = head_after(chunk, nxt) if nxt else ""
    if not before and not after:
        return chunk
    return replace(
        chunk, text=before + chunk.text + after,
        page_start=prev.page_start if prev else chunk.page_start,
        page_end=max(nxt.page_end, chunk.page_end) if nxt else chunk.page_end,
        char_start=prev.char_start if prev else chunk.char_start,
        char_end=nxt.char_end if nxt else chunk.char_end,
    )
