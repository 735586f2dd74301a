"""A question of several parts answered part by part (text/parts.py cuts it): each part runs the
whole answer path on its own (searched, read, verified, decided by the policy), and the answers
are joined into one, citations renumbered in order. A part the policy withholds is named in the
answer ("The documents do not answer this part: …") instead of being dropped; the whole is an
abstention only when no part is answered.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..models import Answer, Citation, Claim
from ..text import messages

_MARKER = re.compile(r"(?<!\[)\[(\d{1,3})\](?!\])")


def _shift_text(text: str, offset: int) -> str:
    return _MARKER.sub(lambda m: f"[{int(m.group(1)) + offset}]", text) if offset else text


def _shift_citations(cs: list[Citation], offset: int) -> list[Citation]:
    return [replace(c, n=c.n + offset) for c in cs]


def _shift_claim(c: Claim, offset: int) -> Claim:
    if not offset:
        return c
    return replace(c, text=_shift_text(c.text, offset), cited=[n + offset for n in c.cited],
                   best_source=None if c.best_source is None else c.best_source + offset,
                   supported_by=None if c.supported_by is None else c.supported_by + offset)


def missing_part(part: str, language: str) -> str:
    return messages.text("missing_part", language, part=part)


def merge(question: str, parts: list[str], answers: list[Answer], language: str, total_ms: float) -> Answer:
    """One Answer from the parts' answers, in the parts' order."""
    answered = [a for a in answers if not a.abstained]
    texts, cites, claims, closest = [], [], [], []
    offset = closest_offset = 0
    for part, a in zip(parts, answers):
        if a.abstained:
            texts.append(missing_part(part, language))
            closest += _shift_citations(a.closest, closest_offset)
            closest_offset += len(a.closest)
            continue
        texts.append(_shift_text(a.text.strip(), offset))
        cites += _shift_citations(a.citations, offset)
        claims += [_shift_claim(c, offset) for c in a.claims]
        offset += max((c.n for c in a.citations), default=0)
    record = [{"question": p, "abstained": a.abstained, "decided_by": a.decided_by, "reason": a.reason,
               "confidence": round(a.confidence, 4)} for p, a in zip(parts, answers)]
    lead = answered[0] if answered else answers[0]
    scores = [a.answers_question for a in answered if a.answers_question is not None]
    timings = {"total": round(total_ms, 1), **{f"part{i + 1}": a.timings_ms.get("total", 0.0)
                                               for i, a in enumerate(answers)}}
    if not answered:  # no part answered: an abstention naming every part, with the parts' closest passages
        return replace(lead, question=question, text="\n\n".join(texts), closest=closest, timings_ms=timings,
                       signals={**lead.signals, "parts": record}, plan={**lead.plan, "parts": len(parts)})
    return replace(
        lead, question=question, text="\n\n".join(texts), citations=cites, claims=claims,
        grounding_score=min(a.grounding_score for a in answered),
        answers_question=min(scores) if scores else None,
        confidence=min(a.confidence for a in answered),
        invalid_citations=sum(a.invalid_citations for a in answered),
        conflicts=[cf for a in answered for cf in a.conflicts] if len(answered) == 1 else [],
        closest=closest, timings_ms=timings, signals={**lead.signals, "parts": record},
        plan={**lead.plan, "parts": len(parts)}, highlight="",
        usage=_sum_usage([a.usage for a in answers]),
        sources=list({s.get("chunk_id", i): s for i, s in enumerate(x for a in answers for x in a.sources)}.values()),
    )


def _sum_usage(usages: list[dict]) -> dict:
    out: dict = {}
    for u in usages:
        for model, counts in (u or {}).items():
            mine = out.setdefault(model, {})
            for k, v in counts.items():
                if isinstance(v, (int, float)):
                    mine[k] = mine.get(k, 0) + v
    return out
