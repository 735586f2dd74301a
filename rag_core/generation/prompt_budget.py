"""How much of the passages a model reads, counted in tokens (issue 52).

A local model on a CPU reads its prompt at tens to a few hundred tokens a second, so its first
words wait for every passage token: on 2 cores Qwen2.5 1.5B spent ~10 s reading four 250-token
passages before it wrote a word. The system prompt is the same on every question and
llama.cpp's prompt cache keeps it; the passages are new each time and are the cost.

So the model reads the reader's best sentences first: each passage (in the reader's order)
contributes the sentence the reader judged most likely to answer, while they fit; then the
best passage grows around that sentence, then the next, until the budget is spent. A passage
shown in part says so with "…" where text was left out. The passages themselves (their ids,
citations and what verification checks against) are unchanged: only the prompt is shorter.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..models import ScoredChunk
from ..text.sentences import split_sentences
from ..text.tokens import count_tokens

ELLIPSIS = "…"


@dataclass
class Fitted:
    """`keep`: how many of the passages (in order) the model reads; `windows`: for a passage
    shown in part, the text the prompt holds instead of the whole chunk."""

    keep: int
    windows: dict[int, str] = field(default_factory=dict)
    tokens: int = 0  # passage tokens the prompt holds (the tokenizer's count: text/tokens.py)


def fit(sources: list[ScoredChunk], best_sentence: dict[int, int], budget: int) -> Fitted:
    """The passages within `budget` tokens. `best_sentence`: per source index, the index of the
    reader's best sentence in it (split_sentences order); a passage without one starts at its
    first sentence. The first passage is always read, in part if it alone is over budget."""
    if budget <= 0 or not sources:
        return Fitted(len(sources))
    sents = [[" ".join(s.split()) for s in split_sentences(r.chunk.text)] or [r.chunk.text] for r in sources]
    cost = [[count_tokens(s) + 1 for s in ss] for ss in sents]
    whole = [sum(c) for c in cost]
    if sum(whole) <= budget:
        return Fitted(len(sources), tokens=sum(whole))
    chosen: list[set[int]] = []
    used = 0
    # 1. the best sentence of each passage, in order, while they fit (always the first one)
    for i in range(len(sources)):
        k = min(max(best_sentence.get(i, 0), 0), len(sents[i]) - 1)
        if chosen and used + cost[i][k] > budget:
            break
        chosen.append({k})
        used += cost[i][k]
    # 2. grow the passages in order around their sentence: after it, then before, alternately
    for i, have in enumerate(chosen):
        lo, hi = min(have), max(have)
        grew = True
        while grew:
            grew = False
            for k in (hi + 1, lo - 1):
                if 0 <= k < len(sents[i]) and used + cost[i][k] <= budget:
                    have.add(k)
                    used += cost[i][k]
                    lo, hi = min(lo, k), max(hi, k)
                    grew = True
        if len(have) < len(sents[i]):
            break  # budget spent inside this passage: those after it keep their one sentence
    windows = {}
    for i, have in enumerate(chosen):
        if len(have) == len(sents[i]):
            continue
        lo, hi = min(have), max(have)
        text = " ".join(sents[i][lo:hi + 1])
        windows[i] = (ELLIPSIS + " " if lo > 0 else "") + text + (" " + ELLIPSIS if hi < len(sents[i]) - 1 else "")
    return Fitted(len(chosen), windows, used)


def shown(sources: list[ScoredChunk], windows: dict[int, str] | None) -> list[ScoredChunk]:
    """The sources as the prompt shows them: a passage with a window holds only that text."""
    if not windows:
        return sources
    return [replace(r, chunk=replace(r.chunk, text=windows[i])) if i in windows else r for i, r in enumerate(sources)]
