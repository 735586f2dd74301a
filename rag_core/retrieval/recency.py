"""A knowledge base's preference for newer documents, blended into ranking.

Off by default (`RetrievalSettings.recency_half_life_days = 0`): a manual does not age, a
policy does. When on, each candidate's score is multiplied by

    (1 − WEIGHT) + WEIGHT · 0.5 ** (age in days / half-life)

so recency can reorder passages of similar relevance (two editions of one policy: the newer
first) but never more than halve a score: a clearly better old passage still wins over a
barely relevant new one. WEIGHT is a judgement, not fitted: at 0.5, a passage one half-life
older needs a score 1.33× higher to stay ahead, two half-lives older 1.6×.

Age is counted from the newest candidate of the question, not from today: the ranking of a
question does not drift with the calendar, and a knowledge base of old documents is not
uniformly discounted (only the ratios between candidates matter for the order anyway, and
they are larger this way: the newest candidate keeps its full score).
"""

from __future__ import annotations

import time

from ..models import ScoredChunk, iso_to_day, upload_day

WEIGHT = 0.5


def today_day() -> int:
    return iso_to_day(upload_day(time.time()))


def apply_recency(cands: list[ScoredChunk], half_life_days: float, today: int | None = None) -> list[ScoredChunk]:
    """The candidates re-sorted by recency-blended score (each keeps its factor in
    scores["recency"]); unchanged when the preference is off. A passage without a date
    counts as oldest (factor 1 − WEIGHT). `today` caps future dates (default: today)."""
    if half_life_days <= 0 or not cands:
        return cands
    cap = today_day() if today is None else today
    now = min(max((c.chunk.doc_day for c in cands), default=0), cap)
    for c in cands:
        day = c.chunk.doc_day
        decay = 0.5 ** (max(now - day, 0) / half_life_days) if day else 0.0
        factor = (1.0 - WEIGHT) + WEIGHT * decay
        c.scores["recency"] = round(factor, 6)
        c.score = c.score * factor
    # stable: equal blended scores keep the store's order
    return sorted(cands, key=lambda c: -c.score)
