"""Facts that must match: the things a reader acts on, checked deterministically against the
passage a sentence cites, in any wording and in any language.

A written answer is judged on what it states, not on whether it copies: "Descale it every
month with vinegar" is the source's "Descale it monthly with white vinegar" in other words.
But some words are not wording, they are the fact: a number and its unit, a date, a code
identifier, a command or option, a name, how often, and whether something is done or not.
Each such fact of a sentence must be found in the cited passage, or the sentence is not
supported, however close its meaning reads to a model: "weekly" for "monthly", 10 for 100,
`read_excel` for `read.table`, "do" for "do not".

What counts as found:
- numbers: the same value (1,000 = 1000 = 1.000 in languages that group with dots is read as
  the digits; number words up to twelve read as digits); with a unit in the sentence, the
  source has the value with a unit of the same kind, or with none;
- code: a `backticked` span, or a token shaped like code (snake_case, dotted.names, calls(),
  --options, -x flags, ALLCAPS keys), is in the source with the same characters;
- names: a capitalised word inside a sentence (not its first word) is in the source or its
  heading, in languages that capitalise only names (not German, where every noun is
  capitalised; not scripts without case);
- frequency: daily / weekly / monthly / yearly … (and "every week", "once a month") must be the
  source's own frequency;
- negation: a sentence that negates where its best source sentence does not (or the reverse)
  says the opposite, unless it words the negation as a verb ("avoid", "never", "without").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

NUMBER_WORDS = {
    "en": "zero one two three four five six seven eight nine ten eleven twelve",
    "de": "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf",
    "fr": "zéro un deux trois quatre cinq six sept huit neuf dix onze douze",
    "es": "cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce",
}
_WORD_NUM = {w: str(i) for words in NUMBER_WORDS.values() for i, w in enumerate(words.split())}
_WORD_NUM.update({"once": "1", "twice": "2", "thrice": "3", "single": "1", "double": "2", "half": "0.5",
                  "dozen": "12", "ein": "1", "eine": "1", "une": "1", "una": "1"})
_AMBIGUOUS_WORDS = {"one", "un", "une", "uno", "una", "ein", "eine", "single", "once"}  # also articles/pronouns

# Units by kind: a number with a unit of one kind never matches the same number with another.
UNITS = {
    "length": "mm millimetre millimetres millimeter millimeters cm centimetre centimetres centimeter centimeters "
              "m metre metres meter meters km kilometre kilometres kilometer kilometers in inch inches ft foot feet "
              "mi mile miles yd yard yards",
    "mass": "mg g gram grams kg kilogram kilograms t tonne tonnes lb lbs pound pounds",
    "time": "ms millisecond milliseconds s sec secs second seconds min mins minute minutes h hr hrs hour hours "
            "day days week weeks month months year years",
    "temperature": "°c °f c f degree degrees celsius fahrenheit",
    "pressure": "bar bars psi pa kpa mpa",
    "electric": "a amp amps ampere amperes ma v volt volts kv w watt watts kw kwh",
    "data": "b byte bytes kb kib mb mib gb gib tb",
    "percent": "% percent per cent",
    "volume": "ml millilitre millilitres l litre litres liter liters",
    "money": "€ $ £ eur euro euros usd dollar dollars",
    "torque": "n·m nm newton-metre newton-metres",
    "scale": "thousand million billion trillion k m bn",
}
_UNIT_KIND = {u: kind for kind, us in UNITS.items() for u in us.split()}
# which unit within a kind (cm is not mm): canonical spellings
_UNIT_NAME = {}
for _group in ("mm millimetre millimetres millimeter millimeters", "cm centimetre centimetres centimeter centimeters",
               "m metre metres meter meters", "km kilometre kilometres kilometer kilometers", "in inch inches",
               "ft foot feet", "mi mile miles", "yd yard yards", "mg", "g gram grams", "kg kilogram kilograms", "lb lbs pound pounds",
               "ms millisecond milliseconds", "s sec secs second seconds", "min mins minute minutes",
               "h hr hrs hour hours", "day days", "week weeks", "month months", "year years",
               "°c c celsius", "°f f fahrenheit", "bar bars", "psi", "pa", "kpa", "mpa", "a amp amps ampere amperes",
               "ma", "v volt volts", "kv", "w watt watts", "kw", "kwh", "b byte bytes", "kb kib", "mb mib", "gb gib",
               "tb", "% percent per cent", "ml millilitre millilitres", "l litre litres liter liters",
               "€ eur euro euros", "$ usd dollar dollars", "£", "n·m nm newton-metre newton-metres",
               "thousand", "million", "billion bn", "trillion", "kroner krone kr", "pounds pound gbp", "yen", "cents cent"):
    for _u in _group.split():
        _UNIT_NAME[_u] = _group.split()[0]

FREQUENCIES = {
    "hourly": "hourly|every hour|each hour|once an hour|stündlich|toutes les heures|cada hora",
    "daily": "daily|every day|each day|once a day|per day|a day|täglich|quotidien(?:ne)?|chaque jour|cada día|diario|diariamente",
    "weekly": "weekly|every week|each week|once a week|per week|a week|wöchentlich|hebdomadaire|chaque semaine|cada semana|semanal(?:mente)?",
    "fortnightly": "fortnightly|every two weeks|every other week|biweekly|alle zwei wochen|toutes les deux semaines",
    "monthly": "monthly|every month|each month|once a month|per month|a month|monatlich|mensuel(?:le)?|chaque mois|cada mes|mensual(?:mente)?",
    "quarterly": "quarterly|every quarter|every three months|vierteljährlich|trimestriel(?:le)?|trimestral",
    "yearly": "yearly|annual|annually|every year|each year|once a year|per year|a year|jährlich|annuel(?:le)?|chaque année|cada año|anual(?:mente)?",
}
_FREQ = [(name, re.compile(r"\b(?:" + pat + r")\b", re.I)) for name, pat in FREQUENCIES.items()]

NEGATORS = re.compile(
    r"\b(not|no|never|cannot|can't|don't|doesn't|didn't|isn't|aren't|wasn't|weren't|won't|wouldn't|shouldn't|"
    r"mustn't|nicht|kein|keine|keinen|niemals|nie|pas|jamais|nunca)\b|n't\b", re.I)
# Words between a negator and what it negates ("does not *open*", "must never be *immersed*").
# A negation worded as a verb ("avoid X" for "do not use X"): not the opposite of the source.
NEGATING_WORDS = re.compile(r"\b(avoid|avoids|avoided|prevent|prevents|refrain|forbid|forbidden|prohibit|prohibited|"
                            r"stay away|steer clear|keep away|never|without|instead of|rather than|vermeiden|éviter|"
                            r"evitar)\b", re.I)
_NEG_SKIP = frozenset("""be is are was were been being do does did have has had a an the any to it this that
they them you we he she your its their our always ever also yet even at all more longer""".split())
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# Code-shaped tokens: snake_case, dotted.names, calls(), --long and -s options, ALLCAPS keys,
# camelCase, paths and files with an extension.
_CODE_TOKEN = re.compile(
    r"(?<![\w-])(?:--?[A-Za-z][\w-]*|[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+\(?\)?|[A-Za-z_]\w*_\w+(?:\(\))?|"
    r"[A-Za-z_]\w*\(\)|[a-z]+[A-Z]\w*|[A-Z]{2,}[0-9]*|/[\w./-]+|\d+[A-Za-z]+\d*|[A-Za-z]+-?\d+[A-Za-z]*|"
    r"\d+\(\d+\))(?![\w])")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[ ,.]\d{3})*(?:[.,]\d+)?)(?:\s*([%€$£°]?[^\W\d_]*[·/]?[^\W\d_]*))?", re.U)
_CAPS_NAME = re.compile(r"\b([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?:[-'’][A-Za-zß-öø-ÿ]+)?)\b")
NAME_LANGUAGES = frozenset({"en", "fr", "es", "it", "pt", "nl", "da", "sv", "no", "fi", "ca", "ro", "pl", "cs"})
_NOT_NAMES = frozenset("""I A An The This That These Those It Its If When While Where Then Also Each Every Both
Use Set Press Hold Turn Make Keep Run Open Close Click Select Choose Before After During Once To For In On At By
With From Of And Or But So As Do Don't Not No Yes You Your We Our They Their He She His Her Monday Tuesday
Wednesday Thursday Friday Saturday Sunday What Which Who Whom Whose How Why Is Are Was Were Does Did Can Could
Should Would Will Note Yes No Step Example See""".split())


_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec").split()
_DATE = re.compile(r"\b(?:(\d{1,2})(?:st|nd|rd|th)?\s+(" + "|".join(_MONTHS) + r")\.?,?\s+(\d{4})|(" + "|".join(_MONTHS)
                   + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}))\b", re.I)


def dates(text: str) -> set[tuple[str, str, str]]:
    """(day, month, year) of every written date ("29 March 1883", "March 29, 1883")."""
    out = set()
    for m in _DATE.finditer(text):
        d, mo, y = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(5), m.group(4), m.group(6))
        out.add((str(int(d)), mo.lower()[:3], y))
    return out


@dataclass(frozen=True)
class Fact:
    kind: str  # "number", "code", "name", "frequency", "negation"
    text: str  # as the sentence writes it


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _num_value(raw: str) -> str:
    """'1,000' / '1 000' / '1.000' → '1000'; '1.5' / '1,5' → '1.5'."""
    t = raw.replace(" ", "")
    if re.fullmatch(r"\d{1,3}(?:[,.]\d{3})+", t):
        return re.sub(r"[,.]", "", t)
    return t.replace(",", ".")


def _unit(raw: str | None) -> str | None:
    if not raw:
        return None
    u = raw.lower().strip(".")
    return _UNIT_NAME.get(u)


def numbers(text: str) -> list[tuple[str, str | None, str, tuple[str, ...]]]:
    """(value, unit or None, as written, the two words after it) for every number, number words
    up to twelve included."""
    text = _norm(text)
    out = []
    for m in _NUMBER.finditer(text):
        out.append((_num_value(m.group(1)), _unit(m.group(2)), m.group(0).strip(), _after(text, m.end(1))))
    for m in re.finditer(r"\b([^\W\d_]+)\b(?=(?:\s+([^\W\d_%°]+|%))?)", text):
        w = m.group(1).lower()
        if w in _WORD_NUM and w not in _AMBIGUOUS_WORDS:
            out.append((_WORD_NUM[w], _unit(m.group(2)), m.group(0), _after(text, m.end(1))))
    return out


def _after(text: str, at: int) -> tuple[str, ...]:
    return tuple(w.lower().rstrip("s") for w in re.findall(r"[^\W\d_]+", text[at: at + 40])[:2])


def code_terms(text: str) -> list[str]:
    text = _norm(text)
    spans = [s.strip() for s in _CODE_SPAN.findall(text)]
    rest = _CODE_SPAN.sub(" ", text)
    return spans + [t for t in _CODE_TOKEN.findall(rest) if not t.isdigit()]


def names(text: str, language: str = "en") -> list[str]:
    if language not in NAME_LANGUAGES:
        return []
    out = []
    for sent in re.split(r"(?<=[.!?:;])\s+|\n+", _CODE_SPAN.sub(" ", _norm(text))):
        words = list(_CAPS_NAME.finditer(sent))
        for m in words:
            if m.start() == len(sent) - len(sent.lstrip(" -•*\"'(“‘")) or sent[max(0, m.start() - 1)] in "\"“‘'(«":
                continue  # the first word of a sentence or of a quotation is capitalised anyway
            name = re.sub(r"['’]s$", "", m.group(1))  # Japan's → Japan
            if name not in _NOT_NAMES:
                out.append(name)
    return out


def frequencies(text: str) -> set[str]:
    return {name for name, rx in _FREQ if rx.search(text)}


# Bounds worded with a negator are quantities, not negation: "no more than two" is "at most two".
_BOUNDS = re.compile(r"\b(?:no|not)\s+(?:more|less|fewer|later|earlier|longer|shorter|greater|higher|lower|sooner)\s+than\b"
                     r"|\bnot\s+(?:only|just)\b|\bno\s+(?:sooner|later)\b|\bnicht\s+mehr\s+als\b|\bpas\s+plus\s+de\b"
                     r"|\bno\s+más\s+de\b", re.I)


def negated(text: str) -> bool:
    return bool(NEGATORS.search(_BOUNDS.sub(" ", _CODE_SPAN.sub(" ", text))))


def negated_words(text: str, language: str = "en") -> set[str]:
    """The stems a negator in `text` negates: the first word after it that is not an auxiliary
    or article ("does not open" → open, "never immerse" → immers)."""
    from ..text.analysis import analyze

    t = _BOUNDS.sub(" ", _CODE_SPAN.sub(" ", text))
    out = set()
    for m in NEGATORS.finditer(t):
        for w in re.findall(r"[^\W\d_]+", t[m.end():])[:4]:
            if w.lower() not in _NEG_SKIP:
                out.update(analyze(w, language))
                break
    return out


def _negation_flipped(claim: str, evidence: str, language: str) -> bool:
    """The claim says the opposite of its evidence sentence about the same word: it negates a
    word the evidence states plainly, or states plainly a word the evidence negates. A negation
    worded otherwise ("closed" for "not open", "avoid" for "do not use") is a paraphrase."""
    from ..text.analysis import analyze

    c_terms, e_terms = set(analyze(claim, language)), set(analyze(evidence, language))
    c_neg, e_neg = negated_words(claim, language), negated_words(evidence, language)
    if any(w in e_terms and w not in e_neg for w in c_neg) and not e_neg & c_neg:
        return True
    return any(w in c_terms and w not in c_neg for w in e_neg) and not negated(claim) \
        and not NEGATING_WORDS.search(claim)


def _has_number(src_numbers, value: str, unit: str | None, after: tuple[str, ...], src_words: set[str]) -> bool:
    """The value is stated as the claim states it: with the same unit where the claim names one
    (30 cm is not 30 mm; the source's bare number is taken as it), and, where the claim counts
    something the source also counts ("8 transfers"), the source counts it with this value."""
    cands = [(u, nxt) for v, u, _, nxt in src_numbers if v == value]
    if not cands:
        return False
    if unit is not None:
        return any(u == unit for u, _ in cands) or all(u is None for u, _ in cands)
    nouns = [w for w in after if w not in _NEG_SKIP and w not in ("and", "or", "of", "per", "in", "on") and len(w) > 2]
    if any(w in src_words for w in nouns):
        return any(w in nxt for _, nxt in cands for w in nouns)
    return True


def missing(claim: str, source: str, heading: str = "", language: str = "en", evidence: str = "") -> list[Fact]:
    """The facts of `claim` the cited `source` (with its `heading`) does not state. `evidence`,
    the source sentence the claim reads closest to, is where negation is compared (a passage
    negates something in most paragraphs). Empty: every fact is found."""
    claim, source = _norm(claim), _norm(source)
    where = f"{heading}\n{source}"
    out: list[Fact] = []
    src_nums = numbers(where)
    counted = {w for _, _, _, nxt in src_nums for w in nxt}
    for value, unit, raw, after in numbers(claim):
        if not _has_number(src_nums, value, unit, after, counted):
            out.append(Fact("number", raw))
    if dates(claim) - dates(where):
        out.append(Fact("date", ", ".join(" ".join(d) for d in sorted(dates(claim) - dates(where)))))
    plain_src = where.replace("`", "")
    for term in code_terms(claim):
        bare = term.strip("`")
        bare = bare[:-2] if bare.endswith("()") and bare[:-2] in plain_src else bare
        if bare and bare not in plain_src:
            out.append(Fact("code", term))
    spaced = where.replace("-", " ")
    for name in names(claim, language):
        # as a word, as written (a name is capitalised in its source too): "Myr" is not in "Myrvik"
        if not re.search(r"\b" + re.escape(name.replace("-", " ")) + r"\b", spaced):
            out.append(Fact("name", name))
    said = frequencies(claim)
    if said and not said & frequencies(where):
        out.append(Fact("frequency", ", ".join(sorted(said))))
    if evidence and _negation_flipped(claim, evidence, language):
        out.append(Fact("negation", "not" if negated(claim) else "(no negation)"))
    return out

