"""Conflicting sources: shown, not averaged.

When two documents both answer the question but state different values for it (a number, a
date, a yes/no, a name), the answer must say so, cite both, and prefer neither silently.

Detection, from what the answer step already computed (the reader's P(answers) for the
retrieved sentences, generation/extractive.py) plus one call of the reader's `supports` task:
1. the lead: the sentence the answer leads with (best combined P(answers)); rivals:
   sentences of *other documents* that the reader alone, without the retrieval-rank features
   that favour the first passage, also finds answering (P ≥ ANSWERS_MIN and ≥ RELATIVE × the
   lead's reader P);
2. the thing asked for: the value type the question asks for ("how many/much" → number,
   "when/what year" → date, "who" → name, "is/does/can …?" → yes/no); for other questions,
   a number or a date that both sentences state;
3. a conflict: the two sentences are about the same thing (their words, values aside,
   overlap ≥ OVERLAP), each states a value of that type, the values differ, and the reader
   says the rival does not support the lead (P(supports) < SUPPORT_MAX) — two sentences that
   merely mention different numbers about different things fail the first or the last test.

Thresholds are judgements checked against false alarms on the SQuAD train side (many
paragraphs of one article answer similar questions with different facts) and reported on
the test side by benchmarks/conflicts.py (target: ≤ 2% of answers flagged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.analysis import STOPWORDS

ANSWERS_MIN = 0.4
RELATIVE = 0.5
OVERLAP = 0.35
SUPPORT_MAX = 0.3

_WORD_NUMBERS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_MONTHS = ("january february march april may june july august september october november december").split()
_NUM = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*\d)")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_NEG = re.compile(r"\b(not|no|never|none|cannot|n't|neither|nor|without)\b|n't\b", re.I)
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)")
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_YESNO = re.compile(r"^(is|are|was|were|does|do|did|can|could|may|must|should|will|would|has|have|had)\b", re.I)


@dataclass
class Conflict:
    kind: str  # "number" | "date" | "yes/no" | "name"
    lead: int  # source index (0-based) of the lead sentence
    rival: int  # source index of the rival
    lead_text: str
    rival_text: str
    lead_values: list[str]
    rival_values: list[str]


def asked_kind(question: str) -> str | None:
    q = question.strip().lower()
    if re.match(r"^(how (many|much|long|far|old|big|large|high|tall|often)|what (is|was) the (number|amount|"
                r"percentage|rate|price|cost|size))", q):
        return "number"
    if re.match(r"^(when|what (year|date|day|month|time)|in what year|in which year|since when|until when)", q):
        return "date"
    if re.match(r"^(who|whom|whose)\b", q):
        return "name"
    if _YESNO.match(q):
        return "yes/no"
    return None


def values(text: str, kind: str) -> set[str]:
    if kind == "date":
        out = {"-".join(m.groups()) for m in _ISO.finditer(text)}
        rest = _ISO.sub(" ", text)
        low = rest.lower()
        out |= set(_YEAR.findall(rest))
        out |= {m for m in _MONTHS if re.search(rf"\b{m}\b", low)}
        return out
    if kind == "number":
        rest = _YEAR.sub(" ", _ISO.sub(" ", text))
        out = {n.replace(",", "") for n in _NUM.findall(rest)}
        low = rest.lower()
        out |= {d for w, d in _WORD_NUMBERS.items() if re.search(rf"\b{w}\b", low)}
        return {v.rstrip("0").rstrip(".") if "." in v else v for v in out}
    if kind == "name":
        return {m for m in _NAME.findall(text) if m.lower() not in STOPWORDS and m.lower() not in _MONTHS}
    if kind == "yes/no":
        return {"no" if len(_NEG.findall(text)) % 2 else "yes"}
    return set()


def _content(text: str) -> set[str]:
    """Words, values aside: what the sentence is about."""
    return {t.lower() for t in _TOKEN.findall(text)
            if not any(ch.isdigit() for ch in t) and t.lower() not in STOPWORDS and t.lower() not in _WORD_NUMBERS
            and t.lower() not in ("not", "no", "never")}


def _overlap(a: str, b: str) -> float:
    x, y = _content(a), _content(b)
    return len(x & y) / min(len(x), len(y)) if x and y else 0.0


def find_conflicts(question: str, cands: list[tuple[int, int, str]], probs, reader_probs, doc_of: list[str],
                   reader, max_rivals: int = 6) -> list[Conflict]:
    """Conflicts between the lead sentence and sentences of other documents (module docstring).
    `cands`: the reading (source index, sentence index, text); `probs`: its combined
    P(answers) (picks the lead); `reader_probs`: the reader's own P(answers) (judges rivals);
    `doc_of[i]`: the document of source i."""
    if not cands:
        return []
    lead = max(range(len(cands)), key=lambda i: float(probs[i]))
    p_lead = float(reader_probs[lead])
    if p_lead < ANSWERS_MIN:
        return []
    lead_src, _, lead_text = cands[lead]
    wanted = asked_kind(question)
    rivals = []
    for i in sorted(range(len(cands)), key=lambda i: -float(reader_probs[i])):
        p = float(reader_probs[i])
        if p < max(ANSWERS_MIN, RELATIVE * p_lead):
            break
        src, _, text = cands[i]
        if i == lead or doc_of[src] == doc_of[lead_src] or _overlap(lead_text, text) < OVERLAP:
            continue
        kinds = [wanted] if wanted else ["number", "date"]
        for kind in kinds:
            a, b = values(lead_text, kind), values(text, kind)
            if a and b and a != b and (kind == "yes/no" or not (a & b)):
                rivals.append((i, kind, a, b))
                break
        if len(rivals) >= max_rivals:
            break
    if not rivals:
        return []
    support = reader.supports([lead_text] * len(rivals), [cands[i][2] for i, _, _, _ in rivals])
    out = []
    seen_docs = set()
    for (i, kind, a, b), s in zip(rivals, support):
        src = cands[i][0]
        if float(s) >= SUPPORT_MAX or doc_of[src] in seen_docs:
            continue
        seen_docs.add(doc_of[src])
        out.append(Conflict(kind, lead_src, src, lead_text, cands[i][2], sorted(a), sorted(b)))
    return out


def conflict_record(cf: Conflict, sources, mapping: dict[int, int]) -> dict | None:
    """What the answer carries (Answer.conflicts): the kind and each side's marker as shown,
    source, date and sentence; None when a side's citation did not survive (never shown
    half)."""
    sides = []
    for si, text, vals in ((cf.lead, cf.lead_text, cf.lead_values), (cf.rival, cf.rival_text, cf.rival_values)):
        n = mapping.get(si + 1)
        if n is None:
            return None
        c = sources[si].chunk
        sides.append({"n": n, "doc_id": c.doc_id, "source": c.source, "date": c.date, "text": text, "values": vals})
    return {"kind": cf.kind, "sides": sides}

