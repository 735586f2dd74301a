"""Sentence boundaries, one rule for the chunker, the extractive answerer and the verifier.

A sentence ends at . ! ? or … (plus closing quotes/brackets) followed by whitespace and an
uppercase letter, digit or opening quote, or at a Chinese/Japanese 。！？ whatever follows; paragraph breaks and lines that start a Markdown
block also start one, and so does the line after a closing code fence. Abbreviations and
initials do not end a sentence.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import lru_cache


# Not an end: an ellipsis inside a sentence whose marker and full stop follow ("local files, …) [1].")
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’»)\]]*\s+(?!(?:(?<!\[)\[\d{1,3}\](?!\]))+[.!?])")
# Chinese and Japanese full stops end a sentence with no space after them.
_CJK_END = re.compile(r"[。！？]+[」』”’）)\]]*\s*")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_BLOCK_LINE_START = re.compile(r"\n[ \t]*(?=#{1,6}[ \t]|[-*+][ \t]|\d{1,3}[.)][ \t]|\||```|~~~)")
_FENCE_LINE = re.compile(r"(?m)^[ \t]*(?:```|~~~)[^\n]*$")
# A Markdown heading is a line of its own: the text after it starts a sentence (PDF pages are
# rendered "# Heading\nFirst sentence …" with no blank line, and the heading ran into the
# section's first sentence, which then began with "#" and was never read as an answer).
_HEADING_LINE = re.compile(r"(?m)^[ \t]*#{1,6}[ \t][^\n]*\n")
_SENTENCE_OPENERS = frozenset("\"'“‘«([")
# A period after these is rarely a sentence end ("Dr. Smith", "e.g. The", "Fig. 3").
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs cf e.g i.e fig figs no nos vol pp al approx ca inc ltd "
    "co corp dept eq eqs ref refs sec ch z.b bzw ggf usw vgl u.a d.h s.o ca".split()
)


def sentence_starts(text: str, start: int = 0, end: int | None = None) -> list[int]:
    """Offsets in (start, end) where a new sentence begins.

    A sentence ends at . ! ? or … (plus closing quotes/brackets) followed by whitespace and
    an uppercase letter, digit or opening quote; paragraph breaks, lines that start a
    Markdown block (heading, list item, table row, fence) and the line after a heading also
    start a sentence.
    """
    end = len(text) if end is None else end
    found: set[int] = set()
    for m in _SENTENCE_END.finditer(text, start, end):
        pos = m.end()
        if pos >= end:
            continue
        nxt = text[pos]
        if not (nxt.isupper() or nxt.isdigit() or nxt in _SENTENCE_OPENERS):
            continue
        if text[m.start()] == "." and _is_abbreviation(text, m.start()):
            continue
        found.add(pos)
    for m in _CJK_END.finditer(text, start, end):
        if m.end() < end:
            found.add(m.end())
    for pattern in (_PARAGRAPH_BREAK, _BLOCK_LINE_START):
        for m in pattern.finditer(text, start, end):
            if start < m.end() < end:
                found.add(m.end())
    fences, after = _fences(text)
    for m in _HEADING_LINE.finditer(text, start, end):
        if start < m.end() < end and bisect_right(fences, m.start()) % 2 == 0:  # not a "# comment" in code
            found.add(m.end())
    # What follows a closing fence starts a sentence too, blank line or not (PDF code blocks
    # are fenced inline): otherwise the prose after a block begins with its closing ```.
    found.update(p for p in after[bisect_right(after, start):bisect_left(after, end)])
    return sorted(found)


@lru_cache(maxsize=8)
def _fences(text: str) -> tuple[list[int], list[int]]:
    """(offsets of every fence line, offsets just after each closing fence line). Whether a
    fence closes depends on every fence before it, so the whole text is scanned once and kept:
    the chunker asks about many small windows of one document, and a scan per window was
    quadratic (12x slower chunking on a 311-page manual)."""
    lines = list(_FENCE_LINE.finditer(text))
    return [m.start() for m in lines], [m.end() + 1 for i, m in enumerate(lines) if i % 2 == 1]


def _is_abbreviation(text: str, dot: int) -> bool:
    words = text[max(dot - 12, 0) : dot].rsplit(None, 1)
    word = words[-1].lstrip("\"'“‘«([").lower() if words else ""
    # A lone letter is an initial ("J. Smith"), not the end of a sentence.
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


_BARE_ITEM = re.compile(r"\s*(?:\d{1,3}[.)]|[-*+•])\s*")


def unit_starts(text: str) -> list[int]:
    """Where the units of an answer begin: its sentences, except that a fenced code block is
    one unit (a `# comment` or `- x` line inside it starts nothing), a bare list number
    ("2.") belongs to its item, and a sentence ending with ':' keeps the code block it
    introduces. The grain at which answers are cited, verified and shown."""
    fences = _fences(text)[0]
    blocks = [(fences[i], fences[i + 1]) for i in range(0, len(fences) - 1, 2)]
    out: list[int] = []
    prev = 0
    for pos in sentence_starts(text):
        seg = text[prev:pos]
        if any(a < pos <= b for a, b in blocks):
            continue
        if _BARE_ITEM.fullmatch(seg) or (seg.rstrip().endswith(":") and text[pos:pos + 3] in ("```", "~~~")):
            continue
        out.append(pos)
        prev = pos
    return out


def split_units(text: str) -> list[str]:
    bounds = [0, *unit_starts(text), len(text)]
    return [s for a, b in zip(bounds, bounds[1:]) if (s := text[a:b].strip())]


def split_sentences(text: str) -> list[str]:
    """Text -> its sentences, whitespace-trimmed, empty ones dropped."""
    bounds = [0, *sentence_starts(text), len(text)]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        if s := text[a:b].strip():
            out.append(s)
    return out


# A Markdown ATX heading line: (its level's hashes, its title). The chunker splits sections at
# these; a passage shown beside an answer draws its own as a title.
HEADING_LINE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")


def only_headings(text: str) -> bool:
    """A passage that is nothing but Markdown headings ("## Ausleihe"): it answers nothing."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return bool(lines) and all(HEADING_LINE.fullmatch(ln) for ln in lines)


_FENCE_MARK = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", re.M)


def open_fence(text: str) -> str:
    """The fence a Markdown text leaves open ("```" when a model stopped inside a code block),
    or "" when every fence is closed: an open one would swallow whatever follows it."""
    opened = ""
    for m in _FENCE_MARK.finditer(text):
        mark = m.group(1)
        if not opened:
            opened = mark
        elif mark[0] == opened[0] and len(mark) >= len(opened):
            opened = ""
    return opened


def close_fences(text: str) -> str:
    fence = open_fence(text)
    return f"{text.rstrip()}\n{fence}" if fence else text
