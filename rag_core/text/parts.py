"""A question that asks for several things, cut into its parts ("What are the rules for expenses
and how long is parental leave?" → "What are the rules for expenses?", "How long is parental
leave?"), so that each part is searched, answered and cited on its own, and a part the
documents do not answer is named instead of silently dropped.

The rules, in English, German, Spanish and French: several question marks make several
questions; within one, a joining word (and, also, plus, as well as, ";") followed by a question
word (what, how, when, … or an auxiliary: is, does, can …) starts a new part. A part must
keep at least three words, so "Who founded it and when?" stays whole (its second half means
nothing alone), and "How do I install and configure X?" is one question (no question word
follows "and"). At most four parts.
"""

from __future__ import annotations

import re

MAX_PARTS = 4
MIN_WORDS = 3
_QWORDS = {
    "en": r"what|what's|how|when|where|who|whom|whose|which|why|is|are|was|were|does|do|did|can|could|should|will|"
          r"would|has|have|had",
    "de": r"was|wie|wann|wo|woher|wohin|wer|wen|wem|welche[rsmn]?|warum|wieso|weshalb|ist|sind|gibt|kann|können|muss|darf",
    "es": r"qué|que|cómo|como|cuándo|cuando|dónde|donde|quién|quiénes|cuál|cuáles|cuánto|cuánta|cuántos|cuántas|"
          r"por qué|es|son|hay|puedo|se puede",
    "fr": r"que|qu'est-ce|quoi|comment|quand|où|qui|quel|quelle|quels|quelles|pourquoi|combien|est-ce|peut-on",
}
_JOIN = {"en": r"and|also|plus|as well as|and also", "de": r"und|sowie|außerdem", "es": r"y|e|además|también",
         "fr": r"et|aussi|ainsi que"}
_SPLITTERS = {lang: re.compile(rf"\s*(?:,\s*)?(?:;\s*(?:(?:{_JOIN[lang]})\s+)?|\b(?:{_JOIN[lang]})\s+)"
                               rf"(?=(?:¿\s*)?(?:{_QWORDS[lang]})\b)", re.I)
              for lang in _QWORDS}
_QUESTION_END = re.compile(r"(?<=[?？])\s+")


def split_question(question: str, language: str = "en") -> list[str]:
    """The parts of `question` (itself alone when it asks one thing)."""
    q = " ".join(question.split())
    if not q:
        return [question]
    pieces = [p for p in _QUESTION_END.split(q) if p.strip()]
    splitter = _SPLITTERS.get(language, _SPLITTERS["en"])
    parts: list[str] = []
    for piece in pieces:
        cut = [c.strip(" ,;") for c in splitter.split(piece) if c and c.strip(" ,;")]
        if len(cut) > 1 and all(len(c.split()) >= MIN_WORDS for c in cut):
            parts += cut
        elif parts and len(piece.split()) < MIN_WORDS:
            parts[-1] = f"{parts[-1]} {piece}"  # "… ? And why?" belongs to the question before it
        else:
            parts.append(piece)
    parts = [_as_question(p) for p in parts]
    if parts[0].startswith("¿"):  # Spanish opens every question
        parts = [p if p.startswith("¿") else "¿" + p for p in parts]
    if len(parts) < 2 or len(parts) > MAX_PARTS or any(len(p.split()) < MIN_WORDS for p in parts):
        return [question]
    return parts


def _as_question(part: str) -> str:
    part = part.strip()
    part = part[0].upper() + part[1:] if part and part[0].islower() else part
    return part if part.endswith(("?", "？", ".", "!")) else part + "?"
