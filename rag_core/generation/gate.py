"""Gate: the reader reads the passages (offline: to choose the answer; with a model: to choose
and order what the model reads), the model's relevance check runs where it is switched on,
and the answer policy says whether to go on. The reader's evidence is a veto only where the
policy in force makes it one (policy.py)."""

from __future__ import annotations

import time
from dataclasses import replace

from .extractive import Evidence as Reading
from . import prompt_budget
from .kit import PROMPT, Kit
from .policy import Signals
from .policy_choice import policy_for_kbs
from .prompts import RELEVANCE_TASK
from .steps import Context, ms, reader_reads, timed


def signals(ctx: Context, mode: str, **written) -> Signals:
    """What the policy reads: retrieval, the reader's evidence, the model's verdicts, and
    (after drafting) the written answer's support and P(answers)."""
    route = ctx.turn.route
    return Signals(mode=mode, passages=len(ctx.sources), route="search" if route.intent == "show" else route.kind,
                   dropped=ctx.below_threshold, min_relevance=ctx.turn.settings.score_threshold,
                   evidence=ctx.reading.best if ctx.reading is not None else None,
                   lookup=bool(ctx.lookup_source), relevance=ctx.relevance,
                   grounded_only=any(kb.grounded_only for kb in ctx.turn.req.kbs), reader_reads=reader_reads(ctx),
                   **{"refused": ctx.turn.moderation.category if ctx.turn.moderation else "", **written})


def gate(kit: Kit, ctx: Context, config) -> Context:
    turn = ctx.turn
    policy = policy_for_kbs(kit.settings, turn.req.kbs, llm=kit.llm is not None)
    ctx = replace(ctx, turn=replace(turn, models={**turn.models, "policy": policy.name}), policy=policy)
    if ctx.lookup_source or not ctx.sources or not reader_reads(ctx):
        return replace(ctx, decision=policy.before_generation(signals(ctx, _mode(kit, ctx))))
    t = time.perf_counter()
    # LLM mode: every retrieved passage is read, to give the model the best-answering ones.
    reading = kit.extractive.read(ctx.turn.standalone, ctx.sources,
                                  max_passages=len(ctx.sources) if kit.llm is not None else None)
    ctx = replace(ctx, turn=timed(ctx.turn, read=ms(t)), reading=reading)
    decision = policy.before_generation(signals(ctx, _mode(kit, ctx)))
    if not decision.abstain and kit.llm_ok(ctx.turn):
        ctx = focus(ctx, kit.settings.llm_context_passages, kit.settings.context_budget)
        if kit.settings.llm_relevance_check:
            try:
                # the answer's own prompt plus the task: the server's prompt cache then serves
                # the answer's prompt, so the check costs a few tokens
                value = kit.prompt_value(ctx.turn, ctx.sources, RELEVANCE_TASK, windows=ctx.windows)
                verdict = kit.fast.invoke(PROMPT.invoke(value, config), config)
                ctx = replace(ctx, relevance=not verdict.strip().lower().startswith("no"))
            except Exception as exc:  # noqa: BLE001
                ctx = replace(ctx, turn=kit.failed(ctx.turn, exc))
            decision = policy.before_generation(signals(ctx, _mode(kit, ctx)))
    return replace(ctx, decision=decision)


def _mode(kit: Kit, ctx: Context) -> str:
    return "llm" if kit.llm_ok(ctx.turn) else "extractive"


def focus(ctx: Context, limit: int, budget: int = 0) -> Context:
    """LLM mode: the passages the model reads, those holding the reader's best-answering
    sentences first, at most `limit`, and within `budget` tokens (prompt_budget.py; 0: no
    limit). Passages without a sentence read keep their retrieval order after the read ones.
    The reading is renumbered to match, so an offline fallback cites the same numbers."""
    reading = ctx.reading
    if reading is None or not reading.cands:
        return ctx
    best: dict[int, float] = {}
    for (si, _, _), p in zip(reading.cands, reading.probs):
        best[si] = max(best.get(si, 0.0), float(p))
    order = sorted(range(len(ctx.sources)), key=lambda i: (-best.get(i, -1.0), i))[:limit]
    top: dict[int, tuple[float, int]] = {}  # per passage, the reader's best sentence
    for (si, k, _), p in zip(reading.cands, reading.probs):
        if si not in top or p > top[si][0]:
            top[si] = (float(p), k)
    fitted = prompt_budget.fit([ctx.sources[i] for i in order],
                               {n: top[i][1] for n, i in enumerate(order) if i in top}, budget)
    order = order[:fitted.keep]
    new = {old: k for k, old in enumerate(order)}
    keep = [i for i, (si, _, _) in enumerate(reading.cands) if si in new]
    focused = Reading([(new[si], k, s) for si, k, s in (reading.cands[i] for i in keep)],
                      reading.probs[keep], reading.features[keep])
    return replace(ctx, sources=[ctx.sources[i] for i in order], reading=focused, windows=fitted.windows)
