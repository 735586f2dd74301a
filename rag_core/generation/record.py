"""Record: the verified `Answer` made from a draft, its check and the policy's decision, or
the abstention the decision asks for (the closest passages, or what was offered beside a
refusal, for a person to judge; tips in the question's language). The decision's words are
copied, never re-decided: `decided_by`, `mode` and the reason come from the policy alone."""

from __future__ import annotations

import logging

from ..grounding.citations import citation_for, resolve
from ..grounding.conflicts import conflict_record
from ..grounding.verify import confidence
from ..models import Answer, Citation, Claim, ScoredChunk, trusted_first
from ..retrieval.query import key_terms
from ..retrieval.recency import today_day
from ..text import messages
from ..text.sentences import close_fences, only_headings
from ..text.stopwords import STOPWORDS as STOPWORDS_BY_LANG
from . import aging
from .extractive import Evidence as Reading
from .passage import passage_for, sentence_by_terms
from .kit import Kit
from .policy import LANGUAGE, MODERATION, PLAIN, Decision, Signals
from .steps import Checked, Context, Draft, ms

log = logging.getLogger(__name__)

# Words a question is made of but a rephrasing tip should not suggest changing ("try other
# words for doesn't, think, equals" was seen): contractions go too.
_TIP_NOISE = set("""think thinks know mean means meant equal equals equivalent work works use used using get gets make
makes want need needs way ways happen happens possible thing things something anything really actually also just
like called call say says said seem seems show shows find tell explain describe example kind sort type
anyone someone everyone anybody somebody everybody nobody people person""".split())


def answer(kit: Kit, draft: Draft, checked: Checked, decision: Decision, sig: Signals, aq: float | None) -> Answer:
    ctx, turn = draft.ctx, draft.turn
    res = resolved(checked.text, checked.sources, draft.snippets, checked.claims)
    info = dict(draft.info)
    if draft.documents:
        cited_docs = {cit.doc_id for cit in res.citations}
        info["documents_cited"] = sum(1 for d in draft.documents if d.doc_id in cited_docs)
    place_pages(kit, res.citations, checked.sources, checked.claims, draft.highlight)
    aging.flag(res.citations, turn.req.catalogue, turn.settings.stale_after_days, today_day())
    if turn.recency:
        info["recency"] = turn.recency
    stale = [f"[{c.n}] {c.source}: {c.stale}" for c in res.citations if c.stale]
    if stale:
        info["stale_sources"] = stale
    trusted = {(e.kb_id, e.doc_id) for e in turn.req.catalogue or () if e.trust == "trusted"}
    for c in res.citations:
        c.trusted = (c.kb_id, c.doc_id) in trusted
    shown = [trusted_first(conflict_record(cf, checked.sources, res.mapping), {d for _, d in trusted})
             for cf in draft.conflicts]
    whole = sig.route in ("document", "compare")
    timings = {**turn.timings, "total": ms(turn.t0)}
    return Answer(
        question=turn.req.question, text=close_fences(res.text), citations=res.citations, claims=checked.claims,
        grounding_score=checked.grounding, answers_question=aq,
        confidence=checked.grounding if aq is None else confidence(checked.grounding, aq),
        abstained=False, language=turn.language, invalid_citations=res.invalid,
        retrieval_score=1.0 if whole else round(ctx.best, 4),
        evidence_score=0.0 if whole else round(ctx.reading.best if ctx.reading else 0.0, 4),
        mode=decision.mode, models=turn.models, timings_ms=timings, standalone_question=turn.standalone,
        revised=checked.revised, auto_cited=checked.auto_cited, below_threshold=ctx.below_threshold,
        conflicts=[c for c in shown if c], decided_by=decision.decided_by, policy=ctx.policy.name,
        signals={**sig.record(), **info}, highlight=draft.highlight,
        sources=used(checked.sources, {c.chunk_id for c in res.citations}),
    )


def abstention(kit: Kit, ctx: Context, decision: Decision, sig: Signals, offer=()) -> Answer:
    turn = ctx.turn
    lang = turn.language
    # plain words in the person's language where the rule's own words stand (a reason with
    # figures of its own, like the minimum relevance, stays as the policy wrote it)
    reason = (messages.reason(decision.decided_by, decision.reason, lang)
              if decision.reason == PLAIN.get(decision.decided_by) else decision.reason)
    stop = STOPWORDS_BY_LANG.get(lang, ())
    # the question as the person asked it: a follow-up's standalone form carries the earlier
    # question's words, which a tip must not offer back ("キーワード（…, hay）")
    terms = [t for t in key_terms(turn.req.question or turn.standalone)
             if "'" not in t and t not in _TIP_NOISE and t not in stop]
    if decision.decided_by == MODERATION:  # refused: no passage, no tip, only why
        text = messages.text("refused_self_harm" if sig.refused == "self-harm" else "refused", lang, category=sig.refused)
        return Answer(question=turn.req.question, abstained=True, reason=decision.why(), text=text,
                      mode=decision.mode, models=turn.models, timings_ms={**turn.timings, "total": ms(turn.t0)},
                      standalone_question=turn.standalone, decided_by=MODERATION,
                      policy=ctx.policy.name if ctx.policy else "", signals=sig.record(), language=lang)
    closest = ([_offered(n, sentence, src) for n, (sentence, src) in enumerate(offer, 1)] if offer else
               closest_passages(ctx.sources, ctx.reading, kit.settings.closest_passages, turn.standalone, lang,
                                kit.store.idf))
    suggestions = [
        messages.text("tip_kbs", lang),
        messages.text("tip_terms", lang, terms=", ".join(terms[:4])) if terms else messages.text("tip_rephrase", lang),
        # with passages shown, the topic may well be covered: no advice to upload it
        *([] if closest else [messages.text("tip_upload", lang)]),
    ]
    first = "language" if decision.decided_by == LANGUAGE else "unconfirmed" if closest else "abstain"
    extra = {"detail": decision.detail} if decision.detail else {}
    if turn.recency:
        extra["recency"] = turn.recency
    if offer:
        extra["offered"] = "outline" if sig.route == "document" else "each document's passage"
    return Answer(
        # offline in a language the reader does not read, nothing was refused: the passages
        # are what it can offer, and the first line says so
        question=turn.req.question, abstained=True, reason=reason,
        text=messages.text(first, lang),
        suggestions=suggestions,
        retrieval_score=round(ctx.best, 4), evidence_score=round(ctx.reading.best if ctx.reading else 0.0, 4),
        mode=decision.mode, models=turn.models, timings_ms={**turn.timings, "total": ms(turn.t0)},
        standalone_question=turn.standalone, below_threshold=ctx.below_threshold, closest=closest,
        decided_by=decision.decided_by, policy=ctx.policy.name if ctx.policy else "",
        signals={**sig.record(), **extra}, language=lang, sources=used(ctx.sources, set()),
    )


def used(sources: list[ScoredChunk], cited: set[str]) -> list[dict]:
    """The passages an answer was made from, as its metadata lists them."""
    return [{"n": n, "chunk_id": s.chunk.chunk_id, "doc_id": s.chunk.doc_id, "kb_id": s.chunk.kb_id,
             "source": s.chunk.source, "score": round(float(s.score), 4), "cited": s.chunk.chunk_id in cited}
            for n, s in enumerate(sources, 1)]


def _offered(n: int, sentence: str, src: ScoredChunk) -> Citation:
    """An item offered beside a refusal: its sentence is the snippet the viewer highlights."""
    return citation_for(n, src, sentence)


def closest_passages(sources: list[ScoredChunk], reading: Reading | None, k: int, question: str = "",
                     language: str = "en", idf=None) -> list[Citation]:
    """The passages that came nearest to answering, for an abstention: ranked by the reader's
    best P(answers) over each passage's sentences (retrieval order where it read none), each
    with the sentence it liked best as the snippet the viewer highlights and the paragraph,
    list or code block around it as an offline answer would show it (passage.passage_for).
    A refusal with the answering passage in hand is then still useful: the person sees it,
    its best sentence marked, and judges. Where the reader read nothing (a language it does
    not read), retrieval's order stands and each passage's best sentence is the one sharing
    the most weighted terms with the question (passage.sentence_by_terms)."""
    if k <= 0 or not sources:
        return []
    best: dict[int, tuple[float, int, str]] = {}
    if reading is not None:
        for (si, ki, text), p in zip(reading.cands, reading.probs):
            if si not in best or float(p) > best[si][0]:
                best[si] = (float(p), ki, text)
    elif question:
        for si, s in enumerate(sources[:k]):
            got = sentence_by_terms(question, language, s.chunk.text, s.chunk.language or "en", idf)
            if got is not None:
                best[si] = (0.0, *got)
    order = sorted(range(len(sources)), key=lambda i: (-best.get(i, (-1.0, 0, ""))[0], i))[:k]
    out = []
    for n, i in enumerate(order, 1):
        if i not in best:
            out.append(citation_for(n, sources[i], ""))
            continue
        _, k_i, sentence = best[i]
        passage, highlight = passage_for(sources[i].chunk.text, k_i, sentence)
        c = citation_for(n, sources[i], highlight or sentence)
        c.passage = passage or ""
        out.append(c)
    # a passage that is only a heading ("## Ausleihe") answers nothing: never the first shown
    out.sort(key=lambda c: only_headings(c.passage or c.snippet or ""))
    for n, c in enumerate(out, 1):
        c.n = n
    return out


def resolved(draft: str, sources: list[ScoredChunk], snippets, claims: list[Claim]):
    """The draft's citations resolved to the sources, and each claim's markers renumbered to
    match (a claim whose markers pointed at no passage cites nothing)."""
    res = resolve(draft, sources, snippets)
    for c in claims:
        c.cited = [res.mapping[n] for n in c.cited if n in res.mapping]
        c.best_source = res.mapping.get(c.best_source) if c.best_source else None
        if not c.cited:
            c.cited_by = None
    return res


def place_pages(kit: Kit, citations: list[Citation], sources: list[ScoredChunk], claims: list[Claim],
                highlight: str = "") -> None:
    """A citation of a passage that crosses a page break names the page of the words it is
    cited for: the sentences that cite it (offline: the highlighted sentence, the one that
    answers), not the page holding most of the passage."""
    if kit.locate_page is None:
        return
    by_id = {s.chunk.chunk_id: s.chunk for s in sources}
    for c in citations:
        ch = by_id.get(c.chunk_id)
        if ch is not None and ch.page_end > ch.page_start:
            words = highlight if highlight and len(citations) == 1 else " ".join(
                cl.text for cl in claims if c.n in cl.cited)
            try:
                c.page = int(kit.locate_page(ch.kb_id, ch.doc_id, ch.page_start, ch.page_end, words or c.snippet))
            except Exception:  # noqa: BLE001 - the file may be gone or unreadable: keep the first page
                log.debug("page lookup failed for %s", c.chunk_id, exc_info=True)

