"""Which language a text is written in (ISO 639-1), for documents, chunks and questions.

py3langid (langid.py's model in numpy, BSD, 4.6 MB with its model inside the wheel: nothing is
downloaded) was chosen over lingua (96 MB wheel, 11 s and 1.4 GB to load every language) and
langdetect (random, slow): on 24 short questions in 11 languages it was right on 22 (lingua 23)
at 0.5 ms a question, and both misses were English keyword queries it gave < 0.1 probability
("Tamoxifen dosage" → lb 0.09). So a detection below `MIN_PROB` is not trusted: the caller's
prior (the searched documents' language) stands instead.

Scripts decide before statistics where they can: kana is Japanese, hangul Korean; Han without
kana is Chinese unless the prior says Japanese (a Japanese question may be all kanji).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .stemmers import SNOWBALL

UNKNOWN = ""  # stored for a text too short or too unclear to tell
MIN_PROB = 0.5  # below this a short text's detection is noise (module docstring)
_SAMPLE_CHARS = 6000  # a document is judged on spread samples: detection cost stays flat with size

_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LETTERS = re.compile(r"[^\W\d_]")

# The languages the app speaks (refusals, headings, help): rag_core/text/messages.py.
NAMES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "ja": "Japanese", "zh": "Chinese",
    "it": "Italian", "pt": "Portuguese", "nl": "Dutch", "ru": "Russian", "pl": "Polish", "sv": "Swedish",
    "da": "Danish", "no": "Norwegian", "fi": "Finnish", "cs": "Czech", "tr": "Turkish", "ko": "Korean",
    "ar": "Arabic", "el": "Greek", "hu": "Hungarian", "ro": "Romanian", "uk": "Ukrainian", "ca": "Catalan",
}


def name(code: str) -> str:
    return NAMES.get(code, code or "unknown")


@lru_cache(maxsize=1)
def _identifier():
    try:
        from py3langid import langid
    except ImportError as exc:  # pragma: no cover - a runtime requirement
        raise ImportError("language detection needs py3langid (pip install -r requirements.txt)") from exc
    return langid.LanguageIdentifier.from_modelpath(langid.MODEL_DIR / langid.MODEL_FILE, norm_probs=True)


def _script(text: str, prior: str = UNKNOWN) -> str | None:
    """A language the script alone settles, else None."""
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    han = len(_HAN.findall(text))
    if han and han * 2 >= len(_LETTERS.findall(text)):  # mostly Han characters
        return "ja" if prior == "ja" else "zh"
    return None


def detect(text: str, prior: str = UNKNOWN) -> tuple[str, float]:
    """(language, probability). UNKNOWN with 0.0 when the text has too few letters to judge;
    `prior` where the model is unsure."""
    text = text.strip()
    if len(_LETTERS.findall(text[:2000])) < 3:
        return (prior or UNKNOWN), 0.0
    by_script = _script(text[:2000], prior)
    if by_script:
        return by_script, 1.0
    lang, prob = _identifier().classify(text)
    if prob < MIN_PROB:
        return (prior or UNKNOWN), float(prob)
    return str(lang), float(prob)


@lru_cache(maxsize=4096)
def question_language(question: str, prior: str = "en") -> str:
    """A question's language; `prior` (the searched documents' main language) where the
    question is too short or too plain to tell ("gnuplot set terminal png"), or where the
    guess is a language the app neither analyses nor speaks: on a short English question the
    model's runner-up guesses are English-like languages ("How do I run Maxima inside a Jupyter
    notebook?" → Nigerian Pidgin, p 0.52), and acting on one only loses the question's words."""
    lang = detect(question, prior)[0]
    if not lang or (lang != prior and lang not in SNOWBALL and lang not in NAMES):
        return prior
    return lang


def sample(text: str, chars: int = _SAMPLE_CHARS) -> str:
    """Three spread pieces of a long text (start, middle, end): a manual's first page is often
    a licence in another language than its body."""
    if len(text) <= chars:
        return text
    third = chars // 3
    mid = len(text) // 2
    return "\n".join((text[:third], text[mid - third // 2: mid + third // 2], text[-third:]))


def document_language(pages: list[str]) -> str:
    return detect(sample("\n".join(pages)))[0]


def chunk_languages(texts: list[str], document: str, min_chars: int = 200) -> list[str]:
    """Each chunk's language: the document's, unless the chunk is long enough to judge and is
    confidently another (a German document's English summary). Short chunks (headings, table
    rows, code) keep the document's: detection on them is noise."""
    out = []
    for t in texts:
        lang = document
        if len(t) >= min_chars:
            got, prob = detect(t, document)
            if got and got != document and prob >= 0.9:
                lang = got
        out.append(lang)
    return out
