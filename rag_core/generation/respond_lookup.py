"""The lookup responder: "show me the biography file" is answered by showing that document,
passage by passage (never by a model: the document is the answer). Complete only when every
passage is shown in full; an excerpt says so, and is scored like any answer."""

from __future__ import annotations

from typing import Iterator

from ..grounding.verify import answer_sentences
from ..models import ScoredChunk
from .passage import cite_each
from .steps import AnswerEvent, Context, Draft

LOOKUP_PASSAGES = 8  # passages a whole-document lookup shows
LOOKUP_PASSAGE_CHARS = 400  # characters shown of each


def respond_lookup(ctx: Context) -> Iterator[AnswerEvent]:
    """Generator: streams the listing; returns the Draft."""
    srcs = ctx.sources[:LOOKUP_PASSAGES]
    total = max(ctx.lookup_chunks, len(ctx.sources))
    shortened = any(_text(s) != _whole(s) for s in srcs)
    what = (f"Here is {srcs[0].chunk.source}" if lookup_complete(ctx) else
            f"Here is an excerpt of {srcs[0].chunk.source} ({len(srcs)} of its {total} passages"
            + (", each cut after its first sentences" if shortened else "") + ")")
    # every shown sentence carries its marker: each is a copy the verifier matches to its passage
    text = f"{what}, passage by passage.\n\n" + "\n\n".join(cite_each(_text(s), i) for i, s in enumerate(srcs, 1))
    for line in text.split("\n"):
        yield AnswerEvent("token", line + "\n")
    return Draft(ctx, text, ctx.sources, "extractive", snippets={})


def _whole(s: ScoredChunk) -> str:
    return s.chunk.text.strip()


def _text(s: ScoredChunk) -> str:
    """A passage's opening whole sentences within LOOKUP_PASSAGE_CHARS (at least one), its
    lines kept: the document's own words, so each shown sentence is verified as a copy (a
    sentence cut in two, or run into a heading, is no sentence the document holds)."""
    whole = _whole(s)
    if len(whole) <= LOOKUP_PASSAGE_CHARS:
        return whole
    end = 0
    for sent in answer_sentences(whole):
        at = whole.find(sent.strip(), end)
        if at < 0:
            break
        nxt = at + len(sent.strip())
        if end and nxt > LOOKUP_PASSAGE_CHARS:
            break
        end = nxt
    return whole[:end] if end else whole[:LOOKUP_PASSAGE_CHARS]


def lookup_complete(ctx: Context) -> bool:
    """Whether a lookup's answer shows the whole document: every passage (none cut by the
    context budget or the passage limit), each in full."""
    shown = ctx.sources[:LOOKUP_PASSAGES]
    return (len(shown) == len(ctx.sources) >= ctx.lookup_chunks
            and all(_text(s) == _whole(s) for s in shown))
