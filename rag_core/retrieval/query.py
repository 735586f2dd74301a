"""Query handling before search: validation, normalisation, key terms, document lookups."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from ..errors import InputError
from ..text.analysis import STOPWORDS

MIN_QUERY_CHARS = 3
# The one question-length limit: RAG_API_MAX_QUESTION_CHARS's default (config.py), which the
# workspace passes in, so the CLI, the pages and the API refuse the same questions.
MAX_QUERY_CHARS = 4000

_CONTRACTIONS = [
    (re.compile(r"\b(what|who|where|when|why|how|that|there|here|it|he|she)'s\b", re.I), r"\1 is"),
    (re.compile(r"\bcan't\b", re.I), "cannot"),
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"\bshan't\b", re.I), "shall not"),
    (re.compile(r"\b(\w+)n't\b", re.I), r"\1 not"),
    (re.compile(r"\b(\w+)'re\b", re.I), r"\1 are"),
    (re.compile(r"\b(\w+)'ll\b", re.I), r"\1 will"),
    (re.compile(r"\b(\w+)'ve\b", re.I), r"\1 have"),
    (re.compile(r"\bI'm\b", re.I), "I am"),
    (re.compile(r"\b(\w+)'d\b", re.I), r"\1 would"),
]
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "‐": "-", "–": "-", "—": "-"})
_WORD = re.compile(r"[\w][\w\-']*", re.UNICODE)

# "show me the biography file", "open the Q3 report document", "get handbook.pdf"
_LOOKUP = re.compile(
    r"^\s*(?:please\s+)?(?:show|open|display|give|get|fetch|find|pull\s+up|bring\s+up|view|read)\s+"
    r"(?:me\s+)?(?:the\s+|a\s+|my\s+)?(?:whole\s+|full\s+|entire\s+|complete\s+)?"
    r"(?P<name>.+?)\s*(?:(?P<kind>file|document|doc|pdf|docx|report|paper|page)s?)?\s*[.?!]*\s*$",
    re.I,
)
_FILE_NAME = re.compile(r"[\w\-.]+\.(?:pdf|docx|txt|md|markdown|html?|csv|jsonl)\b", re.I)


@dataclass
class ParsedQuery:
    original: str
    text: str  # normalised: what is searched
    key_terms: list[str] = field(default_factory=list)
    lookup: str | None = None  # a document name the user asked to see whole


def validate(query: str | None, limit: int = MAX_QUERY_CHARS) -> str:
    q = " ".join((query or "").split())
    if len(q) < MIN_QUERY_CHARS:
        raise InputError(f"the question is too short: please use at least {MIN_QUERY_CHARS} characters")
    if len(q) > limit:
        raise InputError(f"the question is too long ({len(q)} characters; the limit is {limit})")
    return q


def normalise(query: str) -> str:
    q = unicodedata.normalize("NFKC", query).translate(_QUOTES)
    for pat, repl in _CONTRACTIONS:
        q = pat.sub(repl, q)
    return " ".join(q.split())


def key_terms(query: str) -> list[str]:
    """Content words in order, de-duplicated: what a passage must mention to be relevant."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(query):
        lw = w.lower().strip("'-")
        if lw and lw not in STOPWORDS and len(lw) > 1:
            seen.setdefault(lw, None)
    return list(seen)


def detect_lookup(query: str) -> str | None:
    """The document name in a request to see a whole document, else None.

    Only a request that names a document kind ("file", "document", …) or a file name counts:
    "show me how to reset a password" is a question, not a lookup."""
    fm = _FILE_NAME.search(query)
    m = _LOOKUP.match(query)
    if fm and m:
        return fm.group(0).strip()
    if m and m.group("kind"):
        name = m.group("name").strip(" '\"")
        return name or None
    return None


def parse(query: str | None, limit: int = MAX_QUERY_CHARS) -> ParsedQuery:
    q = normalise(validate(query, limit))
    return ParsedQuery(original=query or "", text=q, key_terms=key_terms(q), lookup=detect_lookup(q))
