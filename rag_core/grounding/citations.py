"""Citation markers: parse `[n]`, `[Source n]`, `[n, m]`, `[n][m]`; drop the ones that
point to no retrieved source (and count them); renumber the rest 1..k in order of first use
so the reader sees [1], [2], … and every number maps to a passage that was retrieved."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..models import Citation, ScoredChunk

# "[[1]]" is R's list indexing ("Lst[[1]]"), not a marker: a document's code kept as written
MARKER = re.compile(r"(?<!\[)\[\s*(?:sources?\s*)?(\d{1,3}(?:\s*[,;]\s*(?:sources?\s*)?\d{1,3})*)\s*\](?!\])", re.I)
_NUM = re.compile(r"\d{1,3}")


@dataclass
class ResolvedCitations:
    text: str  # markers rewritten as [1], [2] … (invalid ones removed)
    citations: list[Citation]
    invalid: int  # markers that pointed to no source
    mapping: dict[int, int]  # original source number → shown number


_LEADING = re.compile(r"^\s*((?:\[\s*(?:sources?\s*)?\d{1,3}(?:\s*[,;]\s*\d{1,3})*\s*\]\s*)+)", re.I)
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)]*(?=\s|$)")
# a marker already before its sentence's end (". . .) [1].", an ellipsis in the text) stays put
_TRAILING = re.compile(r"([.!?…])([\"'”’)]*)((?:\s*\[\s*(?:sources?\s*)?\d{1,3}(?:\s*[,;]\s*\d{1,3})*\s*\])+)(?![.!?…])",
                       re.I)


def attach_markers(text: str) -> str:
    """"… the crust. [1] Next" → "… the crust [1]. Next": a marker written after the full
    stop belongs to the sentence before it, not to the next one. Markers that open the
    answer ("[1] The crust …", a small model copying the sources' layout) belong to its
    first sentence, unless that sentence cites already."""
    def marks_of(s: str) -> str:
        return "".join(re.findall(r"\[[^\[\]]+\]", s))

    def fix(m: re.Match) -> str:
        return f" {marks_of(m.group(3))}{m.group(1)}{m.group(2)}"

    lead = _LEADING.match(text)
    if lead:
        marks = marks_of(lead.group(1))
        rest = text[lead.end():]
        end = _SENTENCE_END.search(rest)
        cut = end.start() if end else len(rest.rstrip())
        text = rest if MARKER.search(rest[:cut]) else f"{rest[:cut].rstrip()} {marks}{rest[cut:]}"
    return _TRAILING.sub(fix, text)


def markers_in(text: str) -> list[int]:
    out: list[int] = []
    for m in MARKER.finditer(text):
        out += [int(x) for x in _NUM.findall(m.group(1))]
    return out


def resolve(text: str, sources: list[ScoredChunk], snippets: dict[int, str] | None = None) -> ResolvedCitations:
    """`sources[i]` is source number i+1 as numbered in the prompt/context."""
    mapping: dict[int, int] = {}
    invalid = 0

    def repl(m: re.Match) -> str:
        nonlocal invalid
        shown = []
        for x in _NUM.findall(m.group(1)):
            n = int(x)
            if 1 <= n <= len(sources):
                if n not in mapping:
                    mapping[n] = len(mapping) + 1
                if mapping[n] not in shown:
                    shown.append(mapping[n])
            else:
                invalid += 1
        return "".join(f"[{s}]" for s in shown)

    new_text = MARKER.sub(repl, text)
    # "text [9]." with [9] removed → "text."; a dot that starts a word (".tar.gz", ".GlobalEnv") keeps its space
    new_text = re.sub(r"[ \t]+([.,;:!?])(?=[\s\"'”’)\]]|$)", r"\1", new_text)
    new_text = re.sub(r"[ \t]{2,}", " ", new_text).strip()
    citations = [citation_for(shown, sources[orig - 1], (snippets or {}).get(orig))
                 for orig, shown in sorted(mapping.items(), key=lambda kv: kv[1])]
    return ResolvedCitations(new_text, citations, invalid, mapping)


def citation_for(n: int, r: ScoredChunk, snippet: str | None = None) -> Citation:
    """Marker n for a retrieved passage; `snippet` is the text taken from it (default: all of it)."""
    c = r.chunk
    return Citation(n=n, doc_id=c.doc_id, source=c.source, page=c.page_start, chunk_id=c.chunk_id,
                    snippet=snippet or c.text, score=round(float(r.score), 6), kb_id=c.kb_id,
                    title=c.title, section=c.section, ocr=c.chunk_type == "ocr", date=c.date)
