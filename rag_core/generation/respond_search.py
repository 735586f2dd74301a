"""The search responder: an answer written from the retrieved passages. With a model, the
model writes (streamed); offline, or when the model fails or gives nothing, the reader
composes the passage that answers (extractive.py), and the draft says it stands in and why.
Where two sources state different values for what was asked, the rival's sentence joins the
draft with its own citation, so both sides are cited (grounding/conflicts.py)."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace
from typing import Iterator

import numpy as np

from ..grounding.citations import MARKER
from ..grounding.conflicts import ANSWERS_MIN, asked_kind, find_conflicts, values
from ..grounding.verify import answer_sentences
from ..models import ScoredChunk
from ..stores.adjacent import neighbours, widened
from .extractive import SELECTION_FEATURES
from .passage import cite
from .kit import Kit
from .policy import model_declined
from .steps import AnswerEvent, Context, Draft, ms, timed

log = logging.getLogger(__name__)
RIVAL_SEARCH = 5  # passages looked up by the lead sentence's words, for another version of it
_MARKERS = re.compile(r"\s*" + MARKER.pattern, MARKER.flags)


def respond_search(kit: Kit, ctx: Context, config) -> Iterator[AnswerEvent]:
    """Generator: streams the draft; returns it."""
    turn, t = ctx.turn, time.perf_counter()
    if kit.llm_ok(turn):
        try:
            text = yield from kit.write(turn, ctx.sources, config, windows=ctx.windows)
            draft = Draft(replace(ctx, turn=timed(turn, generate=ms(t))), text, ctx.sources, "llm")
            return (yield from _with_conflicts(kit, draft))
        except Exception as exc:  # noqa: BLE001 - the reader stands in
            ctx = replace(ctx, turn=kit.failed(turn, exc))
            yield AnswerEvent("notice", ctx.turn.models["llm_error"])
            yield AnswerEvent("restart")
    text, snippets, highlight, sources = offline_draft(kit, ctx)
    # Offline, the gate already held the reader's answer to its line: stream it. Standing in for
    # a model, it has not been judged yet: the decision shows it, or not, when it comes.
    if ctx.decision is not None and ctx.decision.mode == "extractive":
        for sentence in answer_sentences(text):
            yield AnswerEvent("token", sentence.strip() + " ")
    draft = Draft(replace(ctx, turn=timed(ctx.turn, generate=ms(t))), text, sources, "extractive",
                  ctx.turn.models.get("llm_error", ""), snippets, highlight)
    return (yield from _with_conflicts(kit, draft))


def offline_draft(kit: Kit, ctx: Context) -> tuple[str, dict, str, list[ScoredChunk]]:
    """The answer without a model, and the sources it is checked against: the passage that
    answers is the document's paragraph (or list, or code block), so the best source is read
    with its neighbouring chunks and stands for all three from here on (its id, and so its
    citation, unchanged)."""
    reading = ctx.reading or kit.extractive.read(ctx.turn.standalone, ctx.sources)
    sources = list(ctx.sources)
    context = {}
    if reading.cands:
        si = reading.cands[int(np.argmax(reading.probs))][0]
        chunk = sources[si].chunk
        try:
            wide = widened(chunk, *neighbours(kit.store, chunk))
        except Exception:  # noqa: BLE001 - a store that cannot fetch by id: the chunk alone
            log.debug("neighbours of %s unavailable", chunk.chunk_id, exc_info=True)
            wide = chunk
        if wide is not chunk:
            context[si] = wide.text
            sources[si] = replace(sources[si], chunk=wide)
    ex = kit.extractive.compose(reading, ctx.sources, context)
    return ex.text, ex.snippets, ex.highlight, sources


def _with_conflicts(kit: Kit, draft: Draft) -> Iterator[AnswerEvent]:
    """The draft with both sides of any conflict said and cited."""
    if not draft.text or (draft.mode == "llm" and model_declined(draft.text)):
        return draft  # nothing said, or a refusal: no side to add
    t = time.perf_counter()
    conflicts, sources = rivals(kit, draft.ctx, draft.sources)
    text, snippets = draft.text, draft.snippets
    for cf in conflicts:
        for si, said in ((cf.lead, cf.lead_text), (cf.rival, cf.rival_text)):
            if said in _MARKERS.sub("", text) and f"[{si + 1}]" in text:
                continue  # already said and cited (an LLM may have cited another passage)
            added = cite(said, si + 1)
            text = f"{text.rstrip()} {added}"
            if snippets is not None:
                snippets[si + 1] = (snippets.get(si + 1, "") + " " + said).strip()
            yield AnswerEvent("token", " " + added)
    ctx = replace(draft.ctx, turn=timed(draft.turn, conflicts=ms(t)))
    return replace(draft, ctx=ctx, text=text, sources=sources, snippets=snippets, conflicts=conflicts)


def rivals(kit: Kit, ctx: Context, sources: list[ScoredChunk]):
    """(conflicts, sources): the answer's passages may leave out the other version of a
    document (MMR drops near-duplicates as redundant; extractive mode reads the top few), so
    the lead sentence is also looked up by keywords, within the caller's filters: passages of
    other documents found that way are read and, if one conflicts, join the sources so it can
    be cited."""
    reading = ctx.reading
    if reading is None or not reading.cands:
        return [], sources
    col = SELECTION_FEATURES.index("reader_logit")
    cands, probs = list(reading.cands), list(reading.probs)
    rprobs = list(kit.reader.calibration["answers"](reading.features[:, col]))
    lead = max(range(len(cands)), key=lambda i: probs[i])
    lead_text = cands[lead][2]
    if rprobs[lead] < ANSWERS_MIN or not (asked_kind(ctx.turn.standalone) or values(lead_text, "number")
                                           or values(lead_text, "date")):
        return [], sources  # nothing a second document could state differently
    lead_doc = sources[cands[lead][0]].chunk.doc_id
    read = {si for si, _, _ in cands}
    seen = {s.chunk.chunk_id for s in sources}
    weights = ctx.turn.req.options.kb_weights  # a knowledge base the request weighted 0 is left out here too
    extra = [r for r in kit.store.keyword_search(lead_text, RIVAL_SEARCH, ctx.turn.req.filters)
             if r.chunk.chunk_id not in seen and r.chunk.doc_id != lead_doc and weights.get(r.chunk.kb_id, 1.0) > 0]
    pool = list(sources) + extra
    # other documents' passages not read yet: retrieved but past the reading's depth, or found now
    to_read = [i for i in range(len(pool)) if i not in read and pool[i].chunk.doc_id != lead_doc]
    if to_read:
        more = kit.extractive.read(ctx.turn.standalone, [pool[i] for i in to_read], max_passages=len(to_read))
        cands += [(to_read[si], k, text) for si, k, text in more.cands]
        probs += [0.0] * len(more.cands)  # never the lead: the answer already has one
        rprobs += list(kit.reader.calibration["answers"](more.features[:, col])) if more.cands else []
    found = find_conflicts(ctx.turn.standalone, cands, probs, rprobs, [s.chunk.doc_id for s in pool], kit.reader)
    if not found:
        return [], sources
    # keep the sources the answer had, plus those a conflict cites (renumbered in order)
    need = sorted({cf.rival for cf in found if cf.rival >= len(sources)})
    new_index = {old: len(sources) + i for i, old in enumerate(need)}
    for cf in found:
        cf.rival = new_index.get(cf.rival, cf.rival)
    return found, sources + [pool[i] for i in need]
