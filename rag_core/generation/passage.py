"""The passage an offline answer shows: the paragraph, list or code block holding the best
sentence (with the sentence that introduces it), cut around that sentence when long, every
sentence with its citation marker; and the small text helpers that choose it. Pure functions
over a chunk's text: the reader's scoring lives in extractive.py."""

from __future__ import annotations

import re
from typing import Callable

from ..text.analysis import analyze, term_weights
from ..text.sentences import split_sentences, unit_starts


def opening(sents: list[str], k: int) -> str:
    """What a sentence is read after: a section's first sentence after its heading, as the text
    reads on the page ("Fit The fit command fits … Marquardt-Levenberg algorithm"), and a
    description after the one-line code term it describes (a manual's definition list:
    "mapfile [-d delim] … array" then "Read lines from the standard input …"). Both name
    what the sentence only calls "it", "the command" or "array"."""
    if k > 0 and sents[k - 1].startswith("#"):
        return sents[k - 1].lstrip("#").strip() + " "
    j = _term_before(sents, k)
    return _code_term(sents[j]) + " " if j is not None else ""


def _code_term(seg: str) -> str | None:
    """The code of a one-line code block (a definition term), else None."""
    if not is_code(seg):
        return None
    lines = [x for x in seg.strip().strip("`").strip().splitlines() if x.strip()]
    return lines[0].strip() if len(lines) == 1 and len(lines[0]) <= 120 else None


def _term_before(segs: list[str], k: int) -> int | None:
    """Index of the one-line code term that segment `k` (prose) follows, past its lone closing
    fence, else None."""
    if is_code(segs[k]):
        return None
    j = k - 2 if k > 1 and segs[k - 1].strip() == "```" else k - 1
    return j if j >= 0 and _code_term(segs[j]) else None


def cite(sentence: str, n: int) -> str:
    """The sentence with its marker [n] before its closing punctuation."""
    m = re.match(r"(.*?)([.!?…]+[\"'”’)]*)$", sentence, re.S)
    return f"{m.group(1)} [{n}]{m.group(2)}" if m else f"{sentence} [{n}]"


_ITEM = re.compile(r"^(?:[-*•]|\d{1,2}[.)])\s+")


def is_code(seg: str) -> bool:
    return seg.startswith("```")


def flat(seg: str) -> str:
    """A segment on one line, fences kept: the answer stays verbatim (the verifier and the
    citation check read it against the passage), and rendering shows the fenced part as code."""
    return " ".join(seg.split())


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


MAX_PASSAGE_CHARS = 700  # an answer passage longer than this is cut to sentences around the best one
# A sentence that announces what follows it: the block after it belongs to it.
_ANNOUNCES = re.compile(r"(:|\b(as follows|like this|for example|for instance|e\.g\.|such as|as in|the command is|"
                        r"use|using|run|type|enter|with|as))\s*$", re.I)


def _blocks(text: str) -> list[str]:
    """A passage's blocks as a reader sees them: paragraphs (split at blank lines and
    headings), lists (a run of items with their wrapped lines) and fenced code blocks; a code
    block or list joins the paragraph before it when that paragraph announces it ("… as
    follows:", "… the command is"), and a description joins the one-line code term before it
    ("mapfile [-d delim] … array" / "Read lines from the standard input …")."""
    raw: list[tuple[str, list[str], bool]] = []  # (kind, lines, after a blank line or heading)
    cur: list[str] = []
    kind = ""
    fence = False
    gap = False  # a blank line or a heading since the last block

    def flush():
        nonlocal cur, kind, gap
        if cur:
            raw.append((kind or "prose", cur, gap))
            gap = False
        cur, kind = [], ""

    for ln in text.split("\n"):
        st = ln.strip()
        if st.startswith(("```", "~~~")):
            if not fence:
                flush()
                fence, kind, cur = True, "code", [ln]
            else:
                cur.append(ln)
                fence = False
                flush()
            continue
        if fence:
            cur.append(ln)
            continue
        if not st or st.startswith("#"):
            flush()
            gap = True
            continue
        item = bool(_ITEM.match(st))
        if item and kind != "list":
            flush()
            kind = "list"
        elif not item and kind == "code":
            flush()
        cur.append(ln)
        kind = kind or "prose"
    flush()
    out: list[tuple[str, str]] = []
    term = False  # the block just before is a one-line code term (a manual's definition list)
    for kind, lines, after_gap in raw:
        body = "\n".join(lines).strip()
        if out and kind in ("code", "list") and out[-1][0] == "prose" and _ANNOUNCES.search(out[-1][1]):
            out[-1] = ("prose+" + kind, out[-1][1] + "\n" + body)
        elif out and kind == "prose" and term and not after_gap:
            out[-1] = ("term+prose", out[-1][1] + "\n" + body)  # the description with the term it defines
        else:
            out.append((kind, body))
        term = kind == "code" and _code_term(body) is not None
    return [b for _, b in out if b]


def verbatim(passage: str, source: str) -> str:
    """The passage as the citation's snippet: the source's own words, without the full stop an
    answer adds to a span that ends without one (a snippet must be found in its passage: the
    viewer highlights it, and citation checks read it there)."""
    flat, src = " ".join(passage.split()), " ".join(source.split())
    return flat[:-1] if flat.endswith(".") and flat not in src and flat[:-1] in src else flat


def _ending(span: str, last: str) -> str:
    """A span ending as a sentence: a full stop added unless it ends with one or with code."""
    return span if re.search(r"[.!?…。！？][\"'”’)」』]*$", span) or is_code(last) or last.rstrip().endswith("```") else span + "."


def cite_each(text: str, n: int) -> str:
    """Every sentence of a copied passage with its marker, its lines kept (a list stays a list,
    a code block a block): each sentence is a claim the verifier matches against the source,
    and an uncited one could at best be 'partial'."""
    starts = [0, *unit_starts(text), len(text)]
    out = []
    for a, b in zip(starts, starts[1:]):
        seg = text[a:b]
        body = seg.rstrip()
        if body:
            out.append(cite(body, n) + seg[len(body):])
    return "".join(out).rstrip()


def sentence_by_terms(question: str, language: str, text: str, text_language: str,
                      idf: Callable | None = None) -> tuple[int, str] | None:
    """(index, sentence) of `text`'s sentence sharing the most idf-weighted terms with the
    question, each read in its own language (and the question in the text's too): how the best
    sentence of a passage is marked where the reader does not read the language. None when no
    sentence shares a term."""
    q = analyze(question, language)
    if text_language != language:
        q += analyze(question, text_language)
    w = term_weights(q, idf)
    best, best_score = None, 0.0
    for k, sent in enumerate(split_sentences(text)):
        if is_code(sent):
            continue
        score = sum(w.get(t, 0.0) for t in set(analyze(sent, text_language)))
        if score > best_score:
            best, best_score = (k, flat(sent)), score
    return best


def passage_for(text: str, k: int, sentence: str, also: list[int] | None = None,
                context: str | None = None) -> tuple[str | None, str]:
    """(the passage that shows sentence `k` of `text` as a person reads it, the sentence to
    highlight in it): answer_passage's block, and when the reader read a code block with the
    sentence introducing it (`sentence` is both), the block whole after that sentence. The
    highlight is the document's whole sentence where the chunk held only a piece of it. The
    one rule for an offline answer's passage and for each closest passage of an abstention."""
    segs = split_sentences(text)
    wide = context or text
    code_read_with_intro = 0 < k < len(segs) and is_code(segs[k]) and flat(segs[k]) != sentence
    passage = answer_passage(text, k - 1 if code_read_with_intro else k,
                             (also or []) + ([k] if code_read_with_intro else []), context=wide)
    if passage and code_read_with_intro and flat(segs[k]) not in " ".join(passage.split()):
        # the code block the reader read with this introduction: shown after it, whole
        block = next((b for b in _blocks(wide) if flat(segs[k]) in " ".join(b.split())), segs[k])
        passage = passage.rstrip() + "\n" + (block if len(block) <= MAX_PASSAGE_CHARS else segs[k].strip())
    highlight = flat(segs[k]) if 0 <= k < len(segs) else sentence
    if is_code(highlight) and not is_code(sentence):
        highlight = sentence
    if wide is not text and highlight:
        # a chunk's first or last "sentence" may be a piece of one the document completes
        highlight = next((f for f in map(flat, split_sentences(wide)) if highlight in f), highlight)
    return passage, highlight


def answer_passage(text: str, k: int, also: list[int] | None = None, context: str | None = None) -> str | None:
    """The block of `text` holding its sentence `k` (split_sentences' numbering), its lines
    kept, ending as a sentence; a window of sentences around `k` when the block is longer than
    MAX_PASSAGE_CHARS: the sentence before it and those after it, widened first to the
    sentences `also` (other well-scoring ones) where the limit allows. With `context` (the
    document's text around `text`: stores.adjacent.widened), the block is the document's, not
    the chunk's: it may begin before the chunk does and run on after it. None when the sentence
    cannot be placed."""
    segs = split_sentences(text)
    if not 0 <= k < len(segs):
        return None
    target = " ".join(segs[k].split())
    wanted = [" ".join(segs[j].split()) for j in (also or []) if 0 <= j < len(segs)]
    for block in _blocks(context or text):
        if target not in " ".join(block.split()):
            continue
        bounds = [0, *unit_starts(block), len(block)]
        parts = [block[a:b] for a, b in zip(bounds, bounds[1:])]
        flat = [" ".join(x.split()) for x in parts]
        at = next((i for i, x in enumerate(flat) if x and target in x), None)
        if at is None:
            return None
        size = lambda lo, hi: len(" ".join(flat[lo:hi + 1]))  # noqa: E731
        if size(0, len(parts) - 1) <= MAX_PASSAGE_CHARS:  # the whole paragraph, list or block
            return _ending(block.strip(), flat[-1])
        lo = hi = at
        for w in wanted:  # the passage's other well-scoring sentences, where they fit
            j = next((i for i, x in enumerate(flat) if x and w in x), None)
            if j is not None and size(min(lo, j), max(hi, j)) <= MAX_PASSAGE_CHARS:
                lo, hi = min(lo, j), max(hi, j)
        # the sentence before names what this one calls "it", or states the figure it refers
        # to; what follows completes a procedure
        if lo > 0 and size(lo - 1, hi) <= MAX_PASSAGE_CHARS:
            lo -= 1
        while hi + 1 < len(parts) and size(lo, hi + 1) <= MAX_PASSAGE_CHARS:
            hi += 1
        if size(lo, hi) > MAX_PASSAGE_CHARS:
            return None
        return _ending("".join(parts[lo:hi + 1]).strip(), flat[hi])
    return None
