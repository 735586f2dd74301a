"""Questions that ask for the newest state of things: "the latest", "current", "as of now".

Such a question switches recency on for itself (generation/chain.py): among passages of similar
relevance the newer document's comes first, and the answer records why. The words are matched
in English and in the question's own language. A false alarm ("the current in the wire") costs
nothing in a knowledge base without dates: every undated passage gets the same factor, so the
order does not change (retrieval/recency.py).
"""

from __future__ import annotations

import re

_WORDS = {
    "en": r"\b(latest|newest|most\s+recent(?:ly)?|current(?:ly)?|as\s+of\s+(?:now|today)|up[- ]to[- ]date|nowadays|"
          r"these\s+days|right\s+now|at\s+present|presently|still\s+valid)\b",
    "de": r"\b(neueste\w*|aktuell\w*|derzeit\w*|momentan\w*|zurzeit|gegenwärtig\w*|jüngste\w*|stand\s+heute|"
          r"heutzutage|noch\s+gültig)\b",
    "es": r"\b(últim[oa]s?|actual(?:es|mente)?|más\s+recientes?|vigentes?|hoy\s+en\s+día|a\s+día\s+de\s+hoy|"
          r"en\s+la\s+actualidad)\b",
    "fr": r"\b(derni(?:er|ère|ers|ères)|actuel(?:le|s|les|lement)?|plus\s+récente?s?|à\s+jour|aujourd'hui|"
          r"à\s+ce\s+jour|en\s+vigueur)\b",
    "ja": r"(最新|現在|現行|今の|いまの|直近)",
    "zh": r"(最新|目前|现行|当前)",
}
_COMPILED = {lang: re.compile(p, re.I | re.U) for lang, p in _WORDS.items()}


def asks_for_latest(question: str, language: str = "en") -> str:
    """The words that ask for the latest ("" when none): English's, then the question's language's."""
    for lang in dict.fromkeys(("en", language)):
        pat = _COMPILED.get(lang)
        if pat is not None and (m := pat.search(question)):
            return m.group(0)
    return ""
