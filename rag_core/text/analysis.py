"""Text → index terms, the same way for documents and queries.

Lower-case, diacritics folded ("café" = "cafe"), unicode word tokens, English stop words
dropped, Snowball (Porter 2) stemming as Lucene's English analyzer does. Stems are cached
per word: a corpus has far fewer distinct words than tokens.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

_TOKEN = re.compile(r"\w+", re.UNICODE)
MAX_TERM_LEN = 40  # longer "words" are hashes, base64 or garbage; they only bloat the index

# Lucene's English stop set plus common question words: they carry no evidence and are the
# longest posting lists.
STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have
    having he her here hers him his how i if in into is it its itself me more most my no nor not of
    off on once only or other our ours out over own same she should so some such than that the their
    theirs them then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours about above after again against
    all am any because before below between both during each few further just s t don now""".split()
)

try:  # PyStemmer (C) when installed; the pure-Python snowball fallback gives the same stems
    import Stemmer as _pystemmer

    _stem_words = _pystemmer.Stemmer("english").stemWords
except ImportError:  # pragma: no cover
    import snowballstemmer

    _stem_words = snowballstemmer.stemmer("english").stemWords


@lru_cache(maxsize=500_000)
def _stem(word: str) -> str:
    return _stem_words([word])[0]


def _fold(text: str) -> str:
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def analyze(text: str, keep_stopwords: bool = False) -> list[str]:
    out = []
    for tok in _TOKEN.findall(_fold(text)):
        if len(tok) > MAX_TERM_LEN or (not keep_stopwords and tok in STOPWORDS):
            continue
        out.append(_stem(tok))
    return out


def term_weights(terms: list[str], idf=None) -> dict[str, float]:
    """Each distinct term (in order) → its idf from the store, 1 where the store cannot say;
    floored at 0.05 so a term found in every document still counts a little."""
    uniq = list(dict.fromkeys(terms))
    known = idf(uniq) if (idf and uniq) else {}
    return {t: max(known.get(t, 1.0), 0.05) for t in uniq}


def term_counts(text: str) -> Counter:
    return Counter(analyze(text))


def query_terms(query: str, limit: int = 64) -> list[str]:
    """Query terms with their multiplicity (as Lucene/Anserini score a query)."""
    return analyze(query)[:limit]
