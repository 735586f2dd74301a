"""Text → index terms, the same way for documents and queries, per language.

- English (and text of unknown language, as every store from before languages holds):
  lower-case, diacritics folded ("café" = "cafe"), unicode word tokens, English stop words
  dropped, Snowball (Porter 2) stemming as Lucene's English analyzer does. Unchanged, so an
  existing English index reads exactly as before.
- Other languages Snowball covers (PyStemmer ships ~30): that language's stemmer and stop
  words (rag_core/text/stopwords.py). Diacritics are folded only for the Latin-script
  languages whose readers expect it (a Spanish question typed without accents), and after
  stemming, since the stemmers read accented suffixes ("información" → "inform"); never for
  Russian (й), Finnish or Swedish (ä, ö are letters of their own), Polish, Czech or Turkish.
- Chinese, Japanese and Korean: NFKC-normalised (half-width kana → full-width) and never folded
  (folding strips Japanese voicing marks: が → か). Japanese text is cut into words by MeCab
  with UniDic-lite; Chinese, Korean and CJK inside other languages' text become overlapping
  character bigrams (Lucene's CJKAnalyzer). Why each: `cjk_terms`.
Stems are cached per (language, word): a corpus has far fewer distinct words than tokens.
"""

from __future__ import annotations

import re
import queue
import unicodedata
from collections import Counter
from functools import lru_cache

from .language import question_language
from .stemmers import FOLDED, SNOWBALL  # noqa: F401 - SNOWBALL is read here and re-exported
from .stopwords import STOPWORDS as _STOP_BY_LANG

MAX_TERM_LEN = 40  # longer "words" are hashes, base64 or garbage; they only bloat the index
_TOKEN = re.compile(r"\w+", re.UNICODE)
_CJK = ("\u3005\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
        "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f")
_HAS_CJK = re.compile(f"[{_CJK}]")
_PIECES = re.compile(f"([{_CJK}]+)|([^\\W{_CJK}]+)")

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



@lru_cache(maxsize=64)
def _stemmer(lang: str):
    algo = SNOWBALL.get(lang)
    if algo is None:
        return None
    try:  # PyStemmer (C) when installed; the pure-Python snowball fallback gives the same stems
        import Stemmer

        return Stemmer.Stemmer(algo).stemWord
    except ImportError:  # pragma: no cover
        import snowballstemmer

        words = snowballstemmer.stemmer(algo).stemWords
        return lambda w: words([w])[0]
    except KeyError:  # pragma: no cover - an older PyStemmer without this algorithm
        return None


@lru_cache(maxsize=500_000)
def _stem(word: str) -> str:
    return _stemmer("en")(word)


@lru_cache(maxsize=500_000)
def _stem_in(lang: str, word: str) -> str:
    stem = _stemmer(lang)
    out = stem(word) if stem else word
    return _fold_latin(out) if lang in FOLDED else out


def _fold(text: str) -> str:
    """Lower-case and strip every combining mark (the English path, as before languages)."""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _fold_latin(word: str) -> str:
    """Strip the combining marks of Latin letters only."""
    if word.isascii():
        return word
    out: list[str] = []
    for c in unicodedata.normalize("NFKD", word):
        if unicodedata.combining(c) and out and out[-1] < "\u0250":
            continue
        out.append(c)
    return unicodedata.normalize("NFC", "".join(out))


@lru_cache(maxsize=64)
def _stopwords(lang: str) -> frozenset[str]:
    """The language's stop words, with their accent-free spellings where it folds accents
    ("ete" is "été" typed plainly)."""
    words = _STOP_BY_LANG.get(lang, frozenset())
    return words | {_fold_latin(w) for w in words} if lang in FOLDED else words


def bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i: i + 2] for i in range(len(run) - 1)]


_KANA1 = re.compile(r"^[\u3040-\u30ff]$")
# Idle MeCab taggers, shared by every thread: a tagger is used by one thread at a time and then
# handed back. Not one per thread (threading.local, as before): the API's worker threads come
# and go (anyio stops a thread idle for 10 s), each new one made a tagger of its own, and in the
# hour-long soak (benchmarks/soak.py) the server held 23, then 36 mappings of UniDic's 72 MB
# matrix and 188 MB dictionary after 15 and 27 minutes. The pool holds as many as ever ran at once.
_JA_IDLE: queue.SimpleQueue = queue.SimpleQueue()


def _ja_words(run: str) -> list[str]:
    """Japanese words by MeCab with the UniDic-lite dictionary (fugashi); particles and other
    single kana dropped (the bigram path's noise, without their evidence)."""
    try:
        tagger = _JA_IDLE.get_nowait()
    except queue.Empty:
        try:
            import fugashi
        except ImportError as exc:  # pragma: no cover - a runtime requirement
            raise ImportError("Japanese analysis needs fugashi and unidic-lite (pip install -r requirements.txt)") from exc
        tagger = fugashi.Tagger()
    try:
        return [w.surface for w in tagger(run) if w.surface.strip() and not _KANA1.match(w.surface)]
    finally:
        _JA_IDLE.put(tagger)


def cjk_terms(run: str, lang: str) -> list[str]:
    """Terms of a run of Chinese/Japanese/Korean characters. Japanese text is segmented into
    words by its dictionary; Chinese, Korean and CJK inside other languages' text become
    bigrams. Measured (benchmarks/cjk_segmenters.py, keyword recall of the gold section, 30
    questions): Japanese words 0.967 @5 / 0.867 @1 against bigrams 0.933 / 0.70; Chinese by
    jieba 0.967 / 0.767, the same as bigrams, at 4x the analysis time and a 3.5 s dictionary
    load, so Chinese keeps bigrams."""
    if lang == "ja":
        return _ja_words(run) or bigrams(run)
    return bigrams(run)


def _words(text: str, lang: str, keep_stopwords: bool) -> list[str]:
    if lang in ("en", ""):
        out = []
        for tok in _TOKEN.findall(_fold(text)):
            if len(tok) > MAX_TERM_LEN or (not keep_stopwords and tok in STOPWORDS):
                continue
            out.append(_stem(tok))
        return out
    stop = () if keep_stopwords else _stopwords(lang)
    return [_stem_in(lang, tok) for tok in _TOKEN.findall(text.lower())
            if len(tok) <= MAX_TERM_LEN and tok not in stop]


def analyze(text: str, lang: str | None = None, keep_stopwords: bool = False) -> list[str]:
    """Index terms of `text` read as language `lang` (ISO 639-1; None or "": English, which
    is what every chunk stored before languages is)."""
    lang = lang or "en"
    if text.isascii() or not _HAS_CJK.search(text):
        return _words(text if lang == "en" else unicodedata.normalize("NFC", text), lang, keep_stopwords)
    out: list[str] = []
    for cjk, other in _PIECES.findall(unicodedata.normalize("NFKC", text)):
        if cjk:
            out += cjk_terms(cjk, lang)
        else:
            out += _words(other, lang, keep_stopwords)
    return out


# An identifier made of words: snake_case, camelCase, PascalCase, SCREAMING_CASE (read_csv,
# getUserById, HTTPServer). Its whole form is one term already (`\w+` keeps "_"); its words are
# indexed beside it in code so that "how do I get a user by id" meets `getUserById`.
_COMPOUND = re.compile(r"\b(?=\w*(?:_|[a-z][A-Z]|[A-Z][A-Z][a-z]))[A-Za-z_][A-Za-z0-9_]*[A-Za-z0-9]\b")
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def identifier_words(text: str) -> str:
    """The words inside the compound identifiers of `text`, space-separated
    ("x = read_csv(p); getUserById(1)" → "read csv get User By Id")."""
    return " ".join(w for m in _COMPOUND.finditer(text) for w in _CAMEL_PARTS.findall(m.group()))


def chunk_terms(chunk, language: str | None = None) -> list[str]:
    """A passage's keyword-index terms, one definition for every store: its source name,
    heading and text analysed in its language (`language` overrides the chunk's), plus, for
    code, the words inside its identifiers. A query is analysed as it is (`query_terms`): an
    identifier it names whole matches the whole term, its plain words match the parts."""
    lang = language if language is not None else chunk.language
    terms = analyze(f"{chunk.source}\n{chunk.index_text()}", lang)
    if chunk.chunk_type == "code":
        terms += analyze(identifier_words(chunk.text), lang)
    return terms


def term_weights(terms: list[str], idf=None) -> dict[str, float]:
    """Each distinct term (in order) → its idf from the store, 1 where the store cannot say;
    floored at 0.05 so a term found in every document still counts a little."""
    uniq = list(dict.fromkeys(terms))
    known = idf(uniq) if (idf and uniq) else {}
    return {t: max(known.get(t, 1.0), 0.05) for t in uniq}


def term_counts(text: str, lang: str | None = None) -> Counter:
    return Counter(analyze(text, lang))


def query_languages(query: str, languages: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The languages a query is analysed in: its own first, then the searched documents'
    (`languages`, most common first; English where the caller does not know them), at most 4.
    A question in one language then still meets documents indexed in another by the words
    both share (names, commands, cognates), and an English question over English documents
    is analysed exactly as before."""
    docs = [lang or "en" for lang in languages] or ["en"]
    own = question_language(query, docs[0])
    return list(dict.fromkeys([own, *docs]))[:4]


def query_terms(query: str, languages: tuple[str, ...] | list[str] = (), limit: int = 64) -> list[str]:
    """Query terms with their multiplicity (as Lucene/Anserini score a query), in the query's
    own language, plus the terms other languages' analysis adds (each once)."""
    langs = query_languages(query, languages)
    terms = analyze(query, langs[0])
    seen = set(terms)
    for lang in langs[1:]:
        for t in analyze(query, lang):
            if t not in seen:
                seen.add(t)
                terms.append(t)
    return terms[:limit]
