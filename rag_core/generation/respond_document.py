"""The whole-document responder: one document read as a whole. With a model, its text within
the token budget, in parts beyond it (map-reduce, progress shown); offline, or when the model
fails, its outline (the headings with each section's most central sentence) or, for a request
about something in it ("list every option"), the sections that mention it with their best
sentence. When the model refuses, the refusal is its draft, and the outline goes with it as an
offer: the policy shows the refusal as the model's, with the outline beneath it."""

from __future__ import annotations

import math
import re
import time
from dataclasses import replace
from typing import Any, Iterator

from ..models import ScoredChunk
from ..text.analysis import analyze
from ..text.language import name as language_name
from ..text.tokens import count_tokens
from . import document_reader as docread
from .passage import cite
from .kit import PROMPT, Kit
from .planner import CatalogueEntry, topic_terms
from .policy import model_declined
from .prompts import DOCUMENT_REMINDER, neutralise
from .steps import AnswerEvent, Context, Draft, Turn, ms, timed

_TAGS = re.compile(r"</?\s*(retrieved_context|source|notes|system|instructions?)\b[^>]*>", re.I)


def respond_document(kit: Kit, ctx: Context, config) -> Iterator[AnswerEvent]:
    """Generator: streams the draft; returns it."""
    turn = ctx.turn
    doc = turn.route.documents[0]
    t = time.perf_counter()
    chunks = kit.store.document_chunks(doc.kb_id, doc.doc_id)
    lang = doc.language or (chunks[0].language if chunks else "") or "en"
    if chunks and kit.llm_ok(turn):
        try:
            text, sources, note = yield from read_with_model(kit, turn, doc, chunks, config)
            ctx = replace(ctx, turn=timed(turn, read_document=ms(t)))
            draft = Draft(ctx, text, sources, "llm", info={"read": note, "sections": len(sources)})
            if model_declined(text):
                draft.offer = outline(kit, turn, doc, chunks, lang)[2].get("items", [])
            return draft
        except Exception as exc:  # noqa: BLE001 - the model failed: the offline outline stands in
            turn = kit.failed(turn, exc)
            yield AnswerEvent("notice", turn.models["llm_error"])
            yield AnswerEvent("restart")
    text, sources, info = outline(kit, turn, doc, chunks, lang)
    ctx = replace(ctx, turn=timed(turn, read_document=ms(t)))
    for line in text.split("\n") if text else []:
        yield AnswerEvent("token", line + "\n")
    info.pop("items", None)
    return Draft(ctx, text, sources, "extractive", turn.models.get("llm_error", ""), info=info,
                 leads=info.pop("leads", {}))


def outline(kit: Kit, turn: Turn, doc: CatalogueEntry, chunks, lang: str):
    """(draft, sources, info): the offline reading of a whole document, one list item per
    section: its heading, then its most central sentence (or, for a request about a topic,
    the sentence of that section that shares most of the request's terms), cited."""
    if not chunks:
        return "", [], {}
    secs = docread.sections(chunks)
    limit = kit.settings.outline_sections
    topic = " ".join(topic_terms(turn.standalone, turn.route.documents, turn.language))
    picks: list[tuple[int, str, Any]] = []  # (section index, sentence, chunk)
    if turn.route.intent == "ask" and topic:
        want = set(analyze(topic, turn.language)) | set(analyze(topic, lang))
        hits = []
        for i, sec in enumerate(secs):
            terms = analyze(sec.text, lang)
            n = sum(1 for x in terms if x in want)
            if n:
                hits.append((n / math.sqrt(len(terms) or 1), i))
        for _, i in sorted(hits, reverse=True)[:limit]:
            for c in secs[i].chunks:
                got = docread.sentence_on(want, c.text, lang)
                if got is not None:
                    picks.append((i, got, c))
                    break
        picks.sort(key=lambda p: p[0])
        how = f"the {len(picks)} section(s) of {len(secs)} that mention {topic}"
    else:
        secs, picks = docread.outline(chunks, limit, lang)
        how = (f"an outline: {len({p[0] for p in picks})} of its {len(secs)} sections, each with its most "
               "central sentence")
    if not picks:
        return "", [], {}
    sources: list[ScoredChunk] = []
    pos: dict[str, int] = {}
    lines = []
    leads: dict[int, list[str]] = {}
    items: list[tuple[str, ScoredChunk]] = []  # (sentence, its passage): what a refusal offers
    for i, sentence, chunk in picks:
        if chunk.chunk_id not in pos:
            sources.append(ScoredChunk(chunk, 1.0, {"document": 1.0}))
            pos[chunk.chunk_id] = len(sources)
        # a part of an undivided document has no heading of its own: its sentence alone
        # (a made-up "part 2 of 8" would be words the sources do not hold)
        head = "" if secs[i].label else item_heading(secs[i].heading)
        if head:
            leads.setdefault(pos[chunk.chunk_id], []).append(head)
        items.append((sentence, sources[pos[chunk.chunk_id] - 1]))
        lines.append(f"- {head}: {cite(sentence, pos[chunk.chunk_id])}" if head
                     else f"- {cite(sentence, pos[chunk.chunk_id])}")
    total = sum(s.tokens for s in secs) or 1
    covered = sum(secs[i].tokens for i in {p[0] for p in picks}) / total
    return "\n".join(lines), sources, {"read": how, "sections": len(secs), "coverage": round(covered, 4),
                                       "leads": leads, "items": items}


def read_with_model(kit: Kit, turn: Turn, doc: CatalogueEntry, chunks, config):
    """Generator: the model reads the document (events: progress and tokens); returns
    (text, sources, note). Sources are the document's sections, numbered in order."""
    s = kit.settings
    budget = s.document_budget
    total = sum(count_tokens(c.text) for c in chunks)
    lang = doc.language or chunks[0].language or "en"
    want = max(3, min(60, total // 600))
    secs = docread.sections(chunks, want=want)
    ps = docread.parts(secs, budget)
    note = f"the whole document ({total:,} tokens)" if len(ps) == 1 else f"the whole document in {len(ps)} parts"
    if len(ps) > s.document_max_parts:
        keep = docread.central_chunks(chunks, budget * s.document_max_parts, lang)
        secs = docread.sections(keep, want=want)
        ps = docread.parts(secs, budget)
        note = (f"its {len(keep)} most central passages of {len(chunks)} ({len(ps)} parts): the whole "
                f"document is over {s.document_max_parts} parts of {budget:,} tokens")
    sources = [sec.source() for p in ps for sec in p]
    if len(ps) == 1:
        text = yield from kit.write(turn, sources, config, reminder=DOCUMENT_REMINDER)
        return text, sources, note
    notes, off = [], 0
    for i, part in enumerate(ps, 1):
        yield AnswerEvent("status", f"Reading {doc.source}: part {i} of {len(ps)}…")
        srcs = [sec.source() for sec in part]
        task = docread.MAP_TASK.format(span=f"{off + 1}–{off + len(srcs)}", name=neutralise(doc.source),
                                       question=neutralise(turn.standalone))
        out = kit.llm.invoke(PROMPT.invoke(kit.prompt_value(turn, srcs, task), config), config)
        notes.append(renumber(out, len(srcs), off))
        off += len(srcs)
    yield AnswerEvent("status", f"Writing the answer from the notes on {len(ps)} parts…")
    prompt = docread.REDUCE_PROMPT.format(name=neutralise(doc.source), notes=_TAGS.sub("", "\n\n".join(notes)),
                                          question=neutralise(turn.standalone),
                                          language=language_name(turn.language) if turn.language else "English")
    text = yield from kit.stream_text(kit.llm, prompt, config, cancel=turn.req.cancel)
    return text, sources, note


def renumber(text: str, n: int, offset: int) -> str:
    """A part's notes with its markers [1..n] as the whole document's [offset+1..]; a marker
    outside the part is dropped (it points at nothing the part showed)."""
    def sub(m):
        k = int(m.group(1))
        return f"[{k + offset}]" if 1 <= k <= n else ""
    return re.sub(r"(?<!\[)\[(\d{1,3})\](?!\])", sub, text)


def item_heading(text: str) -> str:
    """A heading or file name as the start of an outline item: one line, no trailing colon."""
    return " ".join(text.split()).rstrip(":").strip() or "—"
