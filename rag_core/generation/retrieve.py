"""Retrieve: the passages for a turn, through the `GroundworkRetriever` with the selected
knowledge bases' merged settings and the caller's filters; LLM paraphrases and HyDE, when
switched on, are fused in. Whole-document and comparison routes read their documents when
answering, so they retrieve nothing here."""

from __future__ import annotations

import time
from dataclasses import replace

from ..models import ScoredChunk
from ..retrieval.retriever import from_lc_document
from ..text.fusion import RRF_K
from .kit import Kit
from .planner import Route
from .prompts import HYDE_PROMPT
from .steps import Context, Turn, ms, timed


def search(kit: Kit, q: str, turn: Turn, config, query_vector=None) -> tuple[list[ScoredChunk], dict]:
    info: dict = {}  # filled even when nothing comes back (e.g. all below the minimum relevance)
    docs = kit.retriever.invoke(q, config, filters=turn.req.filters, settings=turn.settings,
                                query_vector=query_vector, report=info, lookup=turn.route.by != "user")
    return [from_lc_document(d) for d in docs], info


def retrieve(kit: Kit, turn: Turn, config) -> Context:
    if turn.moderation is not None:  # refused before anything is searched
        return Context(turn=turn, sources=[])
    if turn.route.kind == "compare" or (turn.route.kind == "document" and turn.route.intent != "show"):
        return Context(turn=turn, sources=[])
    t = time.perf_counter()
    if turn.route.kind == "document" and turn.route.documents:
        # "show me X": the planner named the document (from the caller's own catalogue, by its
        # name, title or description): its passages in order, as far as the budget holds
        d = turn.route.documents[0]
        res, total = kit.retrieval.whole_document((d.kb_id, d.doc_id), turn.settings)
        if res:
            return Context(turn=timed(turn, retrieve=ms(t)), sources=res, lookup_source=res[0].chunk.source,
                           lookup_chunks=total, best=1.0)
    queries = [turn.standalone]
    qvec = None
    if kit.llm_ok(turn) and kit.settings.llm_multi_query:
        try:
            queries += paraphrases(kit, turn.standalone, config)
        except Exception as exc:  # noqa: BLE001
            turn = kit.failed(turn, exc)
    if kit.llm_ok(turn) and kit.settings.llm_hyde:
        # HyDE: a hypothetical answer is closer in embedding space to real answers than the
        # question is; keywords still come from the question itself.
        try:
            hypo = kit.fast.invoke(HYDE_PROMPT.format(question=turn.standalone), config)
            if hypo.strip():
                qvec = kit.embedder.embed_array([hypo])[0]
        except Exception as exc:  # noqa: BLE001
            turn = kit.failed(turn, exc)
    runs = [search(kit, q, turn, config, qvec if i == 0 else None) for i, q in enumerate(queries)]
    sources, info = runs[0]
    if len(runs) > 1:
        sources = rrf_merge([r for r, _ in runs], turn.settings.top_k)
    if turn.req.options.kb_weights:
        sources = weighted(sources, turn.req.options.kb_weights)
    timings = {f"retrieve_{k}": v for k, v in info.get("timings_ms", {}).items()}
    turn = timed(turn, **timings, retrieve=ms(t))
    if turn.route.kind == "document" and not info.get("lookup_source"):
        turn = replace(turn, route=Route("search", (), "rules", "asked to see a document, but none of that name is in scope"))
    return Context(turn=turn, sources=sources, lookup_source=info.get("lookup_source"),
                   lookup_chunks=int(info.get("lookup_chunks") or 0),
                   best=max((s.scores.get("rerank", s.score) for s in sources), default=0.0),
                   below_threshold=int(info.get("below_threshold") or 0))


def weighted(sources: list[ScoredChunk], weights: dict[str, float]) -> list[ScoredChunk]:
    """A request's knowledge-base weights: each passage's score times its knowledge base's
    weight (1 where none is given), in that order; weight 0 leaves that knowledge base's
    passages out. The unweighted score stays in `scores`."""
    out = [replace(s, score=s.score * weights.get(s.chunk.kb_id, 1.0),
                   scores={**s.scores, "unweighted": s.score}) for s in sources if weights.get(s.chunk.kb_id, 1.0) > 0]
    return sorted(out, key=lambda s: -s.score)


def paraphrases(kit: Kit, question: str, config) -> list[str]:
    prompt = "Write two alternative phrasings of this search question, one per line, no numbering:\n" + question
    lines = kit.fast.invoke(prompt, config).splitlines()
    return [ln.strip(" -•\t") for ln in lines if len(ln.strip()) > 3][:2]


def rrf_merge(lists: list[list[ScoredChunk]], k: int) -> list[ScoredChunk]:
    """Reciprocal rank fusion of the rankings of several phrasings of one question."""
    by_id: dict[str, ScoredChunk] = {}
    score: dict[str, float] = {}
    for lst in lists:
        for rank, r in enumerate(lst, 1):
            cid = r.chunk.chunk_id
            by_id.setdefault(cid, r)
            score[cid] = score.get(cid, 0.0) + 1.0 / (RRF_K + rank)
    return [by_id[cid] for cid, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]
