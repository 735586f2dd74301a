"""The comparison responder: several documents side by side. Each is searched on its own for
what the question is about (or, when it names no topic, read through its most central
passages); the draft says, per document, what each states, dated where the document has a
date. With a model, one prompt over every document's passages; offline (or when the model
fails), one item per document, or for two versions of one document the sentences that
changed between them."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Iterator

import numpy as np

from ..models import ScoredChunk
from . import document_reader as docread
from .passage import cite, sentence_by_terms
from .kit import Kit
from .planner import CatalogueEntry, topic_terms
from .policy import model_declined
from .prompts import COMPARE_REMINDER, COMPARE_TOPICS_REMINDER
from .respond_document import item_heading
from .steps import AnswerEvent, Context, Draft, Turn, ms, reader_reads, timed

COMPARE_PASSAGES = 3  # passages of each document a comparison reads on its topic


def respond_compare(kit: Kit, ctx: Context, config) -> Iterator[AnswerEvent]:
    """Generator: streams the draft; returns it."""
    turn = ctx.turn
    docs = list(turn.route.documents)
    t = time.perf_counter()
    topic = " ".join(topic_terms(turn.standalone, docs, turn.language))
    # Two documents and no topic named: two versions of one ("what changed?") are read sentence
    # by sentence, two different documents topic by topic (docread.compare_topics).
    shape = ("versions" if _versions(kit, docs) else "topics") if not topic and len(docs) == 2 else "each"
    found = docread.compare_topics(*(kit.store.document_chunks(d.kb_id, d.doc_id) for d in docs),
                                   docs[0].language or "en") if shape == "topics" else None
    if found and found.shared:  # the model reads the sections both cover, then what only one does
        per_doc = [(d, _topic_sources(found, k)) for k, d in enumerate(docs)]
    else:
        per_doc = [(d, _passages(kit, turn, d, topic, len(docs))) for d in docs]
    ctx = replace(ctx, turn=timed(turn, read_documents=ms(t)))
    sources = [s for _, got in per_doc for s in got]
    info = {"read": f"{len(docs)} documents, each " + (f"searched for {topic}" if topic else "through its most central passages"),
            "documents": len(docs)}
    if found and found.shared:
        info["read"] = "2 documents, section by section: the topics both cover, then what only one covers"
    if sources and kit.llm_ok(ctx.turn):
        try:
            reminder = COMPARE_TOPICS_REMINDER if found and found.shared else COMPARE_REMINDER
            text = yield from kit.write(ctx.turn, sources, config, reminder=reminder)
            draft = Draft(ctx, text, sources, "llm", info=info, documents=docs)
            if model_declined(text):  # the refusal is the model's; what each document says is offered
                lines, used = _per_document(kit, ctx, per_doc, topic)
                draft.offer = [(_said(line), src) for line, src in zip(lines, used)]
            return draft
        except Exception as exc:  # noqa: BLE001 - the offline comparison stands in
            ctx = replace(ctx, turn=kit.failed(ctx.turn, exc))
            yield AnswerEvent("notice", ctx.turn.models["llm_error"])
            yield AnswerEvent("restart")
    lines, used, leads = [], [], {}
    if shape == "versions":
        lines, used, leads = changes(kit, docs)
        if lines:
            info = {**info, "read": "2 documents, sentence by sentence: what changed between them"}
    elif found and found.shared:
        lines, used, leads = by_topic(docs, found)
    if not lines:
        lines, used = _per_document(kit, ctx, per_doc, topic)
        leads = {n: [_lead(line)] for n, line in enumerate(lines, 1)}
    for line in lines:
        yield AnswerEvent("token", line + "\n")
    return Draft(ctx, "\n".join(lines), used, "extractive", ctx.turn.models.get("llm_error", ""), info=info,
                 documents=docs, leads=leads)


def _passages(kit: Kit, turn: Turn, d: CatalogueEntry, topic: str, n_docs: int) -> list[ScoredChunk]:
    if topic:
        f = replace(turn.req.filters, kb_ids=[d.kb_id], doc_ids=[d.doc_id])
        return kit.retrieval.run(topic, f, turn.settings, k=COMPARE_PASSAGES, lookup=False).results
    chunks = kit.store.document_chunks(d.kb_id, d.doc_id)
    budget = max(200, kit.settings.document_budget // max(n_docs, 1)) if kit.llm_ok(turn) else 600
    return [ScoredChunk(c, 1.0, {"document": 1.0}) for c in
            docread.central_chunks(chunks, budget, d.language or "en")[:COMPARE_PASSAGES]]


def _per_document(kit: Kit, ctx: Context, per_doc, topic: str) -> tuple[list[str], list[ScoredChunk]]:
    """Offline: one item per document, its sentence on the topic (the reader's choice where it
    reads the language, else the one sharing most weighted terms), or its most central one."""
    turn = ctx.turn
    question = topic or turn.standalone
    lines, used = [], []
    for d, got in per_doc:
        if not got:
            continue
        sentence, src = None, None
        if reader_reads(replace(ctx, sources=got)) and topic:
            reading = kit.extractive.read(question, got, max_passages=len(got))
            if reading.cands:
                si, _, text = reading.cands[int(np.argmax(reading.probs))]
                sentence, src = text, got[si]
        if sentence is None:
            for s in got:
                found = (sentence_by_terms(question, turn.language, s.chunk.text, s.chunk.language or "en",
                                           kit.store.idf) if topic else None)
                if found is None and not topic:
                    central = docread.central_sentences([docread.Section(s.chunk.section, [s.chunk])],
                                                        s.chunk.language or "en")[0]
                    found = (0, central[0][0]) if central else None
                if found is not None:
                    sentence, src = found[1], s
                    break
        if sentence is None:
            continue
        used.append(src)
        date = f" ({d.date})" if d.date else ""
        lines.append(f"- {item_heading(d.source)}{date}: {cite(sentence, len(used))}")
    return lines, used


def _versions(kit: Kit, docs: list[CatalogueEntry]) -> bool:
    a, b = docs
    return docread.versions_of_one(a.source, a.title, b.source, b.title, kit.store.document_chunks(a.kb_id, a.doc_id),
                                   kit.store.document_chunks(b.kb_id, b.doc_id))


class _Items:
    """Labelled items of an offline comparison ("- label: sentence [n]"): each chunk numbered
    once, in first use, and each label recorded as a lead of its chunk's marker, so the copy
    after it is matched as that source's own words (verify's leads)."""

    def __init__(self):
        self.lines: list[str] = []
        self.used: list[ScoredChunk] = []
        self.pos: dict[str, int] = {}
        self.leads: dict[int, list[str]] = {}

    def add(self, label: str, sentence: str, chunk) -> None:
        if chunk.chunk_id not in self.pos:
            self.used.append(ScoredChunk(chunk, 1.0, {"document": 1.0}))
            self.pos[chunk.chunk_id] = len(self.used)
        n = self.pos[chunk.chunk_id]
        self.leads.setdefault(n, []).append(label)
        self.lines.append(f"- {label}: {cite(sentence, n)}")

    def result(self) -> tuple[list[str], list[ScoredChunk], dict[int, list[str]]]:
        return self.lines, self.used, self.leads


def changes(kit: Kit, docs: list[CatalogueEntry]) -> tuple[list[str], list[ScoredChunk], dict[int, list[str]]]:
    """Offline "what changed": each changed, removed or added sentence under its document's name."""
    a, b = (kit.store.document_chunks(d.kb_id, d.doc_id) for d in docs)
    found = docread.changes(a, b, docs[0].language or "en", limit=kit.settings.outline_sections)
    items = _Items()

    def item(d: CatalogueEntry, sc, only: bool = False) -> None:
        sentence, chunk = sc
        date = f" ({d.date})" if d.date else ""
        head = f"Only in {item_heading(d.source)}" if only else item_heading(d.source)
        items.add(f"{head}{date}", sentence, chunk)

    for old, new in found:
        if old is not None:
            item(docs[0], old, only=new is None)
        if new is not None:
            item(docs[1], new, only=old is None)
    return items.result()


def _topic_sources(found: docread.TopicComparison, k: int) -> list[ScoredChunk]:
    """Document k's (0: A, 1: B) passages on the shared topics, then on the chapters only it
    covers: the chunk each item's sentence was read from (a whole chapter would not fit)."""
    items = [(ia, ib)[k] for _, ia, ib in found.shared] + list((found.only_a, found.only_b)[k])
    seen: set[str] = set()
    return [ScoredChunk(it.chunk, 1.0, {"document": 1.0}) for it in items
            if not (it.chunk.chunk_id in seen or seen.add(it.chunk.chunk_id))]


def by_topic(docs: list[CatalogueEntry], found: docread.TopicComparison
             ) -> tuple[list[str], list[ScoredChunk], dict[int, list[str]]]:
    """Offline comparison of two different documents (docread.compare_topics): for each shared
    topic, what each says, under its section's heading; then each one's chapters the other
    does not cover. Every item is "- document § section: the section's own sentence [n]", so
    each line is a copy the verifier matches, its label our framing (the leads)."""
    items = _Items()

    def item(d: CatalogueEntry, it: docread.TopicItem, only: bool = False) -> None:
        head = f"{'Only in ' if only else ''}{item_heading(d.source)} § {item_heading(it.section.heading)}"
        items.add(head, it.sentence, it.chunk)

    for _, ia, ib in found.shared:
        item(docs[0], ia)
        item(docs[1], ib)
    for it in found.only_a:
        item(docs[0], it, only=True)
    for it in found.only_b:
        item(docs[1], it, only=True)
    return items.result()


def _said(line: str) -> str:
    """An item's sentence, without its "- name (date): " lead and its marker."""
    return re.sub(r"\s*\[\d+\]\s*$", "", line.split(": ", 1)[-1])


def _lead(line: str) -> str:
    """An item's label: what stands between "- " and ": "."""
    return line[2:].split(": ", 1)[0] if line.startswith("- ") and ": " in line else ""
