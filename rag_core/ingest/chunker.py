"""Structure-aware chunking: `LoadedDocument` (light Markdown) -> `Chunk`s.

Positions, defined once because citations depend on them:
- full text = chunker.join_pages(doc.pages): pages joined by "\\n\\n", or "\\n " where a sentence runs on; page numbers are 1-based indexes into `doc.pages`.
- `chunk.text == full_text[char_start:char_end]`, overlap included. The one exception is
  a table piece after the first: its text is the table's header rows, a newline, then
  `full_text[char_start:char_end]` (the header is repeated so each piece reads on its own).
- `line_start` / `line_end`: 1-based numbers of the full-text lines holding the first and
  the last character of that range; `page_start` / `page_end` likewise for pages.

How text is cut:
- Blocks are parsed from the Markdown: headings, fenced code, tables, lists, paragraphs.
- Blocks of one section are packed into chunks of at most `chunk_size` characters; a
  heading always starts a new chunk, so a chunk never spans two sections. The heading line
  stays at the start of the chunk that follows it, and its path is in `section`.
- A block longer than `chunk_size` is split: paragraphs at sentence ends (else between
  words), lists between items, code between lines, tables between rows.
- A chunk that continues prose from the previous chunk of the same section starts with
  up to `chunk_overlap` characters of it, from a sentence (else word) start, so the
  longest chunk is `chunk_size + chunk_overlap`. Code and tables get no overlap.

Everything is one pass over the lines plus slicing, so cost is linear in the text size.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

from rag_core.models import Chunk, LoadedDocument
from rag_core.text.sentences import HEADING_LINE, sentence_starts, split_sentences

__all__ = ["chunk_document", "sentence_starts", "split_sentences"]

PROSE = ("paragraph", "list")

# ----------------------------------------------------------------------------- blocks

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\S")
_TABLE_SEPARATOR = re.compile(r"^\|?[\s:|-]*-[\s:|-]*$")
_BLOCK_START_CHARS = frozenset("#`~|-*+0123456789")


@dataclass(slots=True)
class _Block:
    kind: str  # heading | paragraph | list | code | table
    first: int  # line indexes, end exclusive
    last: int
    start: int  # char offsets into the full text, whitespace trimmed
    end: int
    level: int = 0  # headings only
    heading: str = ""


@dataclass(slots=True)
class _Unit:
    start: int
    end: int
    kind: str
    block: int
    prefix: str = ""  # repeated table header rows


@dataclass(slots=True)
class _Open:
    """The chunk being filled."""

    units: list[_Unit] = field(default_factory=list)
    text_start: int = 0  # where the text begins (before `units[0].start` when it has overlap)
    prefix: str = ""

    def size_with(self, unit: _Unit) -> int:
        extra = len(self.prefix) + 1 if self.prefix else 0
        return unit.end - self.units[0].start + extra

    @property
    def only_headings(self) -> bool:
        return all(u.kind == "heading" for u in self.units)


_SENTENCE_END = re.compile(r"""[.!?:;…"'”’)\]]\s*$""")


def _runs_on(page: str, following: str) -> bool:
    """Does the next page continue this page's last sentence? The page ends without closing
    punctuation in prose (not a heading, table row or code fence) and the next one starts in
    lowercase or with a continuing comma or parenthesis."""
    end, start = page.rstrip(), following.lstrip()
    if not end or not start:
        return False
    last = end.rsplit("\n", 1)[-1].lstrip()
    if last.startswith(("#", "|", "```", "- ", "* ")) or _SENTENCE_END.search(end) or len(last.split()) < 4:
        return False  # a label, a list item, a table row, code: not a sentence cut by the page
    return start[0].islower() or start[0] in ",;)"


def join_pages(pages: list[str]) -> str:
    """A document's full text: its pages joined by a paragraph break, or by a line break where
    a sentence runs on (both two characters)."""
    if not pages:
        return ""
    seps = ["\n " if _runs_on(a, b) else "\n\n" for a, b in zip(pages, pages[1:])]
    return pages[0] + "".join(sep + p for sep, p in zip(seps, pages[1:]))


class _Text:
    """The full text with its line and page offsets."""

    def __init__(self, pages: list[str]) -> None:
        # Pages are joined by a paragraph break, except where a sentence runs on from one page
        # to the next: then by a line break ("\n " is as long as "\n\n", so character offsets
        # and page numbers are the same either way; line numbers after it are one lower), and
        # the sentence stays whole in one passage.
        self.full = join_pages(pages)
        self.lines = self.full.split("\n")
        self.line_starts = [0, *accumulate(len(line) + 1 for line in self.lines[:-1])]
        self.page_starts = [0, *accumulate(len(p) + 2 for p in pages[:-1])]

    def line_end(self, i: int) -> int:
        """Offset just past the last non-space character of line i."""
        return self.line_starts[i] + len(self.lines[i].rstrip())

    def line_start(self, i: int) -> int:
        line = self.lines[i]
        return self.line_starts[i] + len(line) - len(line.lstrip())


def _starts_block(line: str, *, list_items: bool) -> bool:
    """Does this non-blank line end a running paragraph (or list)?"""
    stripped = line.lstrip()
    if stripped[:1] not in _BLOCK_START_CHARS:
        return False
    return bool(
        _FENCE.match(line)
        or HEADING_LINE.match(line)
        or stripped.startswith("|")
        or (list_items and _LIST_ITEM.match(line))
    )


def _closes_fence(line: str, opening: str) -> bool:
    """Markdown rule: same character, at least as long, nothing else on the line."""
    m = _FENCE.match(line)
    return bool(m) and m.group(1)[0] == opening[0] and len(m.group(1)) >= len(opening) and not line.strip().strip(opening[0])


# A "heading" that is only numbers and leaders names no section: a data line ("# 1 2 3 4", a
# comment in gnuplot's manual) or an index entry ("# . . . . 62") read as Markdown. As section
# paths they labelled hundreds of passages "1 2 3 4 > Key". One number ("# 2024", "# 3.1") stays
# a heading.
_NOT_A_TITLE = re.compile(r"[\s.·…]*(?:\d+[.,;:]?\s+)+\d+[\s.·…]*|[\d\s]*(?:\.\s*){3,}[\d\s,.–-]*")


def _parse_blocks(t: _Text, max_heading: int) -> list[_Block]:
    lines = t.lines
    n = len(lines)
    blocks: list[_Block] = []
    i = 0
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        first = stripped[0]
        if first in "`~" and (m := _FENCE.match(line)):
            j = i + 1
            while j < n and not _closes_fence(lines[j], m.group(1)):
                j += 1
            j = min(j + 1, n)  # include the closing fence; an unclosed fence runs to the end
            kind = "code"
        elif (first == "#" and (m := HEADING_LINE.match(line)) and len(stripped) <= max_heading
              and not _NOT_A_TITLE.fullmatch(m.group(2).strip())):
            blocks.append(_Block("heading", i, i + 1, t.line_start(i), t.line_end(i), len(m.group(1)), m.group(2).strip()))
            i += 1
            continue
        elif first == "|":
            j = i + 1
            while j < n and lines[j].lstrip().startswith("|"):
                j += 1
            kind = "table"
        else:
            is_list = first in _BLOCK_START_CHARS and bool(_LIST_ITEM.match(line))
            j = i + 1
            while j < n and lines[j].strip() and not _starts_block(lines[j], list_items=not is_list):
                j += 1
            kind = "list" if is_list else "paragraph"
        # Trailing blank lines inside an unclosed fence are not part of the block.
        last = j
        while last > i + 1 and not lines[last - 1].strip():
            last -= 1
        blocks.append(_Block(kind, i, last, t.line_start(i), t.line_end(last - 1)))
        i = j
    return blocks


# ----------------------------------------------------------------------------- splitting


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _split_words(text: str, a: int, b: int, limit: int) -> list[tuple[int, int]]:
    """Cut [a, b) into pieces of at most `limit` chars at whitespace; a single "word"
    longer than the limit (a URL, base64) is cut hard, which also guarantees progress."""
    out = []
    while b - a > limit:
        cut = max(text.rfind(" ", a, a + limit + 1), text.rfind("\n", a, a + limit + 1), text.rfind("\t", a, a + limit + 1))
        if cut <= a:
            cut = a + limit
        pa, pb = _trim(text, a, cut)
        if pb > pa:
            out.append((pa, pb))
        a, _ = _trim(text, cut, b)
    if b > a:
        out.append((a, b))
    return out


def _split_prose(text: str, a: int, b: int, limit: int) -> list[tuple[int, int]]:
    bounds = [a, *sentence_starts(text, a, b), b]
    out = []
    for s, e in zip(bounds, bounds[1:]):
        s, e = _trim(text, s, e)
        if e <= s:
            continue
        out.extend([(s, e)] if e - s <= limit else _split_words(text, s, e, limit))
    return out


def _block_units(t: _Text, block: _Block, index: int, limit: int) -> list[_Unit]:
    if block.end - block.start <= limit:
        return [_Unit(block.start, block.end, block.kind, index)]
    if block.kind == "table":
        return _table_units(t, block, index, limit)
    if block.kind == "code":
        spans = _line_pieces(t, range(block.first, block.last), limit)
    elif block.kind == "list":
        spans = []
        for a, b in _list_items(t, block):
            spans.extend([(a, b)] if b - a <= limit else _split_prose(t.full, a, b, limit))
    else:
        spans = _split_prose(t.full, block.start, block.end, limit)
    return [_Unit(a, b, block.kind, index) for a, b in spans]


def _list_items(t: _Text, block: _Block) -> list[tuple[int, int]]:
    items: list[tuple[int, int]] = []
    for i in range(block.first, block.last):
        if not t.lines[i].strip():
            continue
        if _LIST_ITEM.match(t.lines[i]) or not items:
            items.append((t.line_start(i), t.line_end(i)))
        else:  # continuation line of the current item
            items[-1] = (items[-1][0], t.line_end(i))
    return items


def _line_pieces(t: _Text, line_range: range, limit: int) -> list[tuple[int, int]]:
    """Consecutive lines packed into pieces of at most `limit` chars (code, table rows)."""
    out: list[tuple[int, int]] = []
    start = end = -1
    for i in line_range:
        a, b = t.line_starts[i], t.line_end(i)
        if b <= a:
            continue  # blank line: kept inside a piece, never starts one
        if start >= 0 and b - start <= limit:
            end = b
            continue
        if start >= 0:
            out.append((start, end))
            start = -1
        if b - a <= limit:
            start, end = a, b
        else:
            out.extend(_split_words(t.full, a, b, limit))
    if start >= 0:
        out.append((start, end))
    return out


def _table_units(t: _Text, block: _Block, index: int, limit: int) -> list[_Unit]:
    header_last = block.first + 1
    if header_last < block.last and _TABLE_SEPARATOR.match(t.lines[header_last].strip()):
        header_last += 1
    header = t.full[t.line_start(block.first) : t.line_end(header_last - 1)]
    if len(header) > limit // 2:
        # A header this long would crowd out the rows: split by rows without repeating it.
        return [_Unit(a, b, "table", index) for a, b in _line_pieces(t, range(block.first, block.last), limit)]
    # The first piece carries the header in place; later ones get it as a prefix.
    rows_budget = limit - len(header) - 1
    pieces = _line_pieces(t, range(header_last, block.last), rows_budget)
    if not pieces:
        return [_Unit(block.start, block.end, "table", index)]
    units = [_Unit(block.start, pieces[0][1], "table", index)]
    units += [_Unit(a, b, "table", index, prefix=header) for a, b in pieces[1:]]
    return units


# ----------------------------------------------------------------------------- packing


def chunk_document(
    doc: LoadedDocument,
    *,
    doc_id: str,
    kb_id: str,
    chunk_size: int = 1000,
    chunk_overlap: int = 150,
) -> list[Chunk]:
    """Cut a loaded document into chunks (see the module docstring for the rules)."""
    if chunk_size < 20:
        raise ValueError("chunk_size must be at least 20 characters")
    if chunk_overlap < 0:
        raise ValueError("chunk_overlap must not be negative")
    # An overlap as large as the chunk would make every chunk mostly a copy of the last one.
    overlap = min(chunk_overlap, chunk_size // 2)
    if not doc.pages:
        return []
    t = _Text(doc.pages)
    full = t.full
    blocks = _parse_blocks(t, max_heading=min(300, chunk_size // 2))

    spans: list[tuple[_Open, str]] = []  # finished chunks with their section path
    headings: list[tuple[int, str]] = []  # (level, text): the path to the current section
    section = ""
    cur: _Open | None = None

    def finish() -> None:
        nonlocal cur
        if cur is not None and not cur.only_headings:
            spans.append((cur, section))
        cur = None

    for index, block in enumerate(blocks):
        if block.kind == "heading":
            finish()
            while headings and headings[-1][0] >= block.level:
                headings.pop()
            headings.append((block.level, block.heading))
            section = " > ".join(h for _, h in headings)
            unit = _Unit(block.start, block.end, "heading", index)
            cur = _Open([unit], unit.start)
            continue
        # Leave room for the heading line so that it and the first piece share a chunk.
        reserve = block.start - cur.units[0].start if cur is not None and cur.only_headings else 0
        for unit in _block_units(t, block, index, chunk_size - reserve if reserve <= chunk_size // 2 else chunk_size):
            if cur is None:
                cur = _Open([unit], unit.start, unit.prefix)
            elif unit.prefix or (cur.size_with(unit) > chunk_size and not cur.only_headings):
                prev = cur
                spans.append((prev, section))
                cur = _Open([unit], unit.start, unit.prefix)
                if overlap and not unit.prefix and unit.kind in PROSE and prev.units[-1].kind in PROSE:
                    cur.text_start = _overlap_start(full, prev, unit.start, overlap)
            else:
                cur.units.append(unit)
    finish()
    return [_make_chunk(t, doc, o, sec, n, doc_id, kb_id) for n, (o, sec) in enumerate(_nonempty(spans, full))]


def _nonempty(spans: list[tuple[_Open, str]], full: str) -> list[tuple[_Open, str]]:
    return [(o, s) for o, s in spans if not o.only_headings and full[o.text_start : o.units[-1].end].strip()]


_WORD_START = re.compile(r"\s(?=\S)")


def _overlap_start(full: str, prev: _Open, content_start: int, overlap: int) -> int:
    """Where the overlap copied from `prev` begins: a sentence start if one leaves a useful
    amount of text, else a word start; `content_start` (no overlap) if neither exists.

    Only prose at the end of `prev` is copied (no heading, code or table tail), never
    from `prev`'s first character (a short chunk is not repeated whole), and never more
    than `overlap` chars before the new content.
    """
    run = len(prev.units) - 1
    while run > 0 and prev.units[run - 1].kind in PROSE:
        run -= 1
    first_body = next(u.start for u in prev.units if u.kind != "heading")
    lo = max(prev.units[run].start, first_body + 1, content_start - overlap)
    hi = prev.units[-1].end
    if lo >= hi:
        return content_start
    useful = hi - max(overlap // 3, 1)
    for pos in sentence_starts(full, max(lo - 8, 0), hi):
        if lo <= pos <= useful:
            return pos
    m = _WORD_START.search(full, lo - 1, hi)
    return m.end() if m else content_start


def _make_chunk(t: _Text, doc: LoadedDocument, o: _Open, section: str, ordinal: int, doc_id: str, kb_id: str) -> Chunk:
    start, end = o.text_start, o.units[-1].end
    body = t.full[start:end]
    text = f"{o.prefix}\n{body}" if o.prefix else body
    # The chunk's type is that of the block contributing most text (headings excluded).
    weight: dict[int, int] = {}
    kinds: dict[int, str] = {}
    for u in o.units:
        if u.kind != "heading":
            weight[u.block] = weight.get(u.block, 0) + u.end - u.start
            kinds[u.block] = u.kind
    kind = kinds[max(weight, key=weight.__getitem__)] if weight else "paragraph"
    return Chunk(
        chunk_id=f"{doc_id}:{ordinal:05d}",
        doc_id=doc_id,
        kb_id=kb_id,
        text=text,
        title=doc.title,
        section=section,
        source=doc.source,
        ordinal=ordinal,
        page_start=bisect_right(t.page_starts, start),
        page_end=bisect_right(t.page_starts, end - 1),
        char_start=start,
        char_end=end,
        line_start=bisect_right(t.line_starts, start),
        line_end=bisect_right(t.line_starts, end - 1),
        chunk_type=kind,  # type: ignore[arg-type]
    )

