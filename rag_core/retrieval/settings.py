"""One question over several knowledge bases: their retrieval settings merged into one.

Each rule keeps what any selected knowledge base asked for, so adding a knowledge base to a
question never makes retrieval worse for the one already selected:
- top_k, context_tokens: the largest (the knowledge base that wants more context gets it);
- rerank: on if any has it on (reranking costs time, never relevance);
- score_threshold: the lowest (a passage good enough for one knowledge base's bar is not
  dropped by another's stricter bar);
- mmr_lambda: the lowest (passages from several collections gain from more diversity);
- alpha: the mean (a blend of the keyword/vector preferences);
- fusion: the one most of them use; a tie falls back to the default, relative score;
- recency_half_life_days: the shortest that is on (a knowledge base that prefers new
  documents keeps that preference; 0 = off when none has it);
- stale_after_days: the shortest that is on (a source old for one is flagged).
One knowledge base: its own settings, unchanged."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from statistics import fmean

from ..models import KnowledgeBase, RetrievalSettings


def merged_settings(kbs: list[KnowledgeBase]) -> RetrievalSettings:
    if not kbs:
        return RetrievalSettings()
    if len(kbs) == 1:
        return replace(kbs[0].retrieval)
    rs = [kb.retrieval for kb in kbs]
    counts = Counter(r.fusion for r in rs).most_common()
    fusion = counts[0][0] if len(counts) == 1 or counts[0][1] > counts[1][1] else RetrievalSettings.fusion
    return RetrievalSettings(
        top_k=max(r.top_k for r in rs),
        alpha=round(fmean(r.alpha for r in rs), 4),
        fusion=fusion,
        rerank=any(r.rerank for r in rs),
        mmr_lambda=min(r.mmr_lambda for r in rs),
        score_threshold=min(r.score_threshold for r in rs),
        context_tokens=max(r.context_tokens for r in rs),
        recency_half_life_days=min((r.recency_half_life_days for r in rs if r.recency_half_life_days > 0), default=0.0),
        stale_after_days=min((r.stale_after_days for r in rs if r.stale_after_days > 0), default=0),
    )
