"""Follow-up questions made standalone without an LLM.

"When was it built?" after "Where is the Eiffel Tower?" is searched as "When was the Eiffel
Tower built?": the pronoun that refers back is replaced by the *topic* of the earlier
question, so the words that matter stand where the question needs them and nothing else is
added. (Appending the earlier question's key terms, as before, pulled every earlier word in
and drifted to the earlier question's passage: benchmarks/followups.py measures both.)

The topic is the earlier question's named entity (a run of capitalised words, or a quoted
phrase), else its longest run of content words ("the boiling point of water"). A follow-up
with no pronoun but too few words to stand alone ("and in 1990?") gets the topic appended.
A question that already names something new is left alone.
"""

from __future__ import annotations

import re

from ..text.analysis import STOPWORDS

# "that" is left out: it is mostly a conjunction or relative pronoun ("found that a culture…").
_SUBJECT = {"it", "they", "he", "she", "this", "these", "those"}
_OBJECT = {"it", "them", "him", "her", "this", "these", "those"}
_POSSESSIVE = {"its", "their", "his", "her"}
_PRONOUN = re.compile(r"\b(it|its|they|them|their|he|she|him|his|her|this|these|those)\b", re.I)
_WORD = re.compile(r"[\w][\w'’\-]*")
_QUOTED = re.compile(r"[\"“']([^\"”']{3,60})[\"”']")
# Words that start a question or clause and are capitalised for that reason only.
_OPENERS = {"what", "who", "whom", "whose", "which", "when", "where", "why", "how", "is", "are", "was", "were",
            "do", "does", "did", "can", "could", "should", "would", "will", "in", "on", "at", "of", "the", "a",
            "an", "and", "but", "or", "tell", "list", "name", "give", "describe", "explain", "i", "according"}
# After "her", these mean it is an object ("gave her to"), not a possessive ("her album").
_NOT_NOUN = {"to", "in", "on", "at", "by", "for", "from", "with", "as", "and", "or", "but", "that", "than",
             "when", "after", "before", "about", "into", "over", "up", "out", "off", "back", "?", "."}
_THIS_NOUN = re.compile(r"\b(this|these|those)\s+(?!is\b|was\b|are\b|were\b|do\b|does\b|did\b)[a-z]", re.I)
MIN_STANDALONE_TERMS = 3


def content_terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w.lower() not in STOPWORDS and len(w) > 1]


def topic(question: str) -> str | None:
    """The thing an earlier question is about: a quoted phrase, a named entity, or its
    longest run of content words."""
    if m := _QUOTED.search(question):
        return m.group(1).strip()
    words = [(m.group(0), m.start()) for m in _WORD.finditer(question)]
    runs, cur = [], []
    for i, (w, _) in enumerate(words):
        if not cur and w.lower() == "the" and i + 1 < len(words) and words[i + 1][0][0].isupper():
            cur.append(w)  # "the Eiffel Tower" keeps its article
            continue
        named = w[0].isupper() and not (i == 0 and w.lower() in _OPENERS) and w.lower() not in STOPWORDS
        linker = w.lower() in {"of", "de", "the", "and", "von", "van", "du", "la"} and cur
        if named or (linker and i + 1 < len(words) and words[i + 1][0][0].isupper()):
            cur.append(w)
        else:
            if cur:
                runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    runs = [r for r in runs if not (len(r) == 1 and r[0].lower() in _OPENERS) and not (len(r) == 1 and r[0] == "the")]
    if runs:
        return " ".join(max(runs, key=len))
    if _PRONOUN.search(question):
        return None  # "How does it work?" is about something named earlier, not about "work"
    # No name: the longest run of content words, with its "the/of" links.
    best, cur = [], []
    for w, _ in words:
        if w.lower() in STOPWORDS and w.lower() not in {"of"}:
            best, cur = (cur if len(cur) > len(best) else best), []
        elif w.lower() not in _OPENERS or cur:
            cur.append(w)
    best = cur if len(cur) > len(best) else best
    while best and best[-1].lower() == "of":
        best.pop()
    return " ".join(best) if best else None


def depends_on_context(question: str) -> bool:
    return bool(_PRONOUN.search(question)) or len(content_terms(question)) < MIN_STANDALONE_TERMS


def condense(question: str, history: list[tuple[str, str]]) -> str:
    """The follow-up as a standalone question (unchanged when it stands alone already or no
    earlier question names a topic)."""
    question = question.strip()
    earlier = [text for role, text in reversed(history) if role == "user"]
    if not earlier or not depends_on_context(question):
        return question
    subject = next((t for q in earlier if (t := topic(q))), None)
    if not subject or subject.lower() in question.lower():
        return question
    out = _replace_first_pronoun(question, subject)
    if out == question:  # nothing to replace: a fragment like "and in 1990?"
        out = f"{question.rstrip(' ?.!')} ({subject})" + ("?" if question.endswith("?") else "")
    return out


def _replace_first_pronoun(q: str, subject: str) -> str:
    # "this + noun" ("this band") names its own thing; the subject stands beside it.
    if m := _THIS_NOUN.search(q):
        if not _PRONOUN.search(q[: m.start()]):
            return q
    for m in _PRONOUN.finditer(q):
        w = m.group(0).lower()
        after = q[m.end():].lstrip()
        nxt = _WORD.match(after)
        nxt_word = nxt.group(0).lower() if nxt else (after[:1] or "?")
        if w in _POSSESSIVE and not (w == "her" and nxt_word in _NOT_NOUN):
            rep = subject + ("'" if subject.endswith("s") else "'s")
        elif w in _SUBJECT or w in _OBJECT:
            rep = subject
        else:
            continue
        return q[: m.start()] + rep + q[m.end():]
    return q
