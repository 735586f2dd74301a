"""Corrective retrieval (CRAG): a written answer whose confidence is below the policy's line
(`AnswerPolicy.correct`) searches again for evidence of its unsupported sentences and is
rewritten over the wider sources, announced and streamed in place of the first (never a silent
swap); the rewrite is kept only when it is at least as well supported. An answer that is
supported but does not answer has no weak sentence to search for: it stays, shown with its
low "answers the question" score."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from ..grounding.verify import answers_question, confidence
from .check import Checker
from .kit import Kit
from .retrieve import search
from .steps import AnswerEvent, Checked, Draft, Turn, timed

MORE_PASSAGES = 4  # new passages a rewrite may add


def _confidence(c: Checked) -> float:
    return confidence(c.grounding, answers_question(c.claims))


def correct(kit: Kit, checker: Checker, draft: Draft, checked: Checked, config) -> Iterator[AnswerEvent]:
    """Generator: events of the rewrite; returns (checked, turn)."""
    turn: Turn = draft.turn
    policy = draft.ctx.policy
    rounds = 0
    while (draft.mode == "llm" and kit.llm_ok(turn) and kit.settings.llm_crag and rounds < kit.settings.llm_crag_rounds
           and policy.correct(_confidence(checked))):
        rounds += 1
        weak = [c.text for c in checked.claims if c.label != "supported"][:3]
        if not weak:
            break
        yield AnswerEvent("status", "Some sentences are not supported by the sources: searching again…")
        seen = {s.chunk.chunk_id for s in checked.sources}
        new = []
        for q in weak:
            for r in search(kit, q, turn, config)[0]:
                if r.chunk.chunk_id not in seen:
                    seen.add(r.chunk.chunk_id)
                    new.append(r)
        if not new:
            break
        more = checked.sources + new[:MORE_PASSAGES]
        yield AnswerEvent("restart", "")
        yield AnswerEvent("status", f"Rewriting the answer with {len(new[:MORE_PASSAGES])} more passage(s)…")
        try:
            text = yield from kit.write(turn, more, config)
        except Exception as exc:  # noqa: BLE001 - the endpoint failed mid-correction: keep the answer we have
            turn = kit.failed(turn, exc)
            yield AnswerEvent("notice", turn.models["llm_error"])
            yield AnswerEvent("restart", checked.text)
            break
        redo = checker.check(text, more, turn.standalone, config)
        if _confidence(redo) < _confidence(checked):
            yield AnswerEvent("restart", checked.text)
            yield AnswerEvent("status", "The rewrite was not better supported; keeping the first answer.")
            break
        checked = replace(redo, revised=checked.revised + 1)
    return checked, timed(turn, crag_rounds=rounds)
