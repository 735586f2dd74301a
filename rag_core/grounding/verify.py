"""Claim verification with the reader/judge model: two separate questions per sentence.

1. *Supported*: do the sources it cites state it? The reader's ``supports`` task reads the
   claim together with the source sentences most likely to hold it (each sentence, and
   each sentence with the one before it: the subject is often named there). A claim that
   is a verbatim span of a source is supported by definition (it *is* the source's text).
2. *Answers the question*: does the sentence answer what was asked? The reader's
   ``answers`` task. A copied sentence that only mentions the topic is supported and still
   answers nothing: this score is what tells the two apart.

Labels: supported ≥ 0.6 > partial ≥ 0.35 > unsupported, on the reader's calibrated
probability. grounding_score = mean over claims (supported 1, partial 0.5, unsupported 0).
answers_question = the best claim's P(answers); confidence = answers_question × grounding
(see `confidence`).

When a question is given and a claim is a fragment ("1636."), it is a claim about the
question: "<question>: <claim>" (the form the ``supports`` task was trained on for short
answers). Its evidence is the source sentence that best *answers the question and states
that answer*: for each sentence, P(answers) × the mean of P(supports) and whether the
fragment is written in it. Picking the evidence by word overlap, as for whole sentences,
lets a wrong span of the same paragraph ("1850" where the answer is "1636") be judged
against the sentence it came from, which does state it, only not as the answer; on the
train-side verifier pairs that overlap choice ranked the right short answer above a
swapped one in 70.7% of pairs, this one in 83.5% (benchmarks/answer_quality.py --split
calib, the reader's first epoch). Whether a fragment answers is judged on that sentence:
a fragment answers the question when a sentence that states it does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..text.sentences import split_sentences, split_units
from ..models import Claim
from ..text.analysis import analyze, term_weights
from .citations import MARKER, attach_markers, markers_in
from .facts import missing as facts_missing

SUPPORTED = 0.6
PARTIAL = 0.35
WINDOWS_PER_SOURCE = 2  # evidence windows the model reads per (claim, source)
SHORT_CLAIM_WORDS = 4  # a claim of at most this many words is a fragment ("1636.", "in Paris.")
FACT_MISSING = 0.1  # a written sentence whose number, code, name, frequency or negation the source lacks
# meaning(): P(supported) of a sentence written in other words, a logistic line over the reader's
# support probability, the best cosine of the sentence with a source window, and the share of its
# weighted terms the source holds. Fitted on the harness's fit half (benchmarks/paraphrase_verifier.py
# --fit): faithful paraphrases against invented extra sentences and general-knowledge answers.
MEANING = {"bias": -5.459, "reader": 3.468, "cosine": 3.076, "overlap": 3.731}
# The same line for a sentence read against the source sentence its writer quoted as evidence
# (features against that quote; overlap against the quote and its heading). Fitted on the same
# fit half, each sentence's quote the harness's evidence sentence (a near-miss answer's: the
# sentence it leans on): faithful paraphrases read supported 80.8% (68.7% without quotes),
# changed facts 8.1% (13.1%), invented sentences 0%.
MEANING_QUOTED = {"bias": -5.977, "reader": 2.973, "cosine": 4.877, "overlap": 4.607}
UNQUOTED_CAP = (SUPPORTED + PARTIAL) / 2  # a sentence that matches none of the quotes of its source: partial at best


def meaning(reader: float, cosine: float | None, overlap: float, line: dict | None = None) -> float:
    """P(supported) from the three readings (the reader's alone where no embedder is given)."""
    w = MEANING if line is None else line
    if cosine is None or not any(w.values()):
        return float(reader)
    z = (w["bias"] + w["reader"] * reader + w["cosine"] * cosine + w["overlap"] * overlap)
    return float(max(reader, 1.0 / (1.0 + np.exp(-z))))


# A space before punctuation left where a marker was ("fact [1]." -> "fact ."): dropped. A dot
# that starts a word (R's ".GlobalEnv", a file ".RData") keeps its space (issue 50: "user's .GlobalEnv"
# was shown as "user's.GlobalEnv").
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?…])(?=[\s\"'”’)\]]|$)")


def plain(sentence: str) -> str:
    """A sentence without its citation markers, spaced as it reads."""
    return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(MARKER.sub(" ", sentence).split()))


# A citation marker followed by a capitalised word ends a sentence even without a full stop:
# an extractive answer's span can end in code ("… the command is > q() [1]") and the next
# sentence it took starts after the marker. Read as one claim, the two are not one contiguous
# span of the source, and a copied answer read as "unsupported".
_MARKER_END = re.compile(r"((?:[ \t]*(?<!\[)\[\d{1,3}\](?!\]))+)[ \t]+(?=[A-Z\"“‘(])")


def answer_sentences(answer: str) -> list[str]:
    return split_units(_MARKER_END.sub(lambda m: m.group(1) + "\n\n", attach_markers(answer)))


_FENCE = re.compile(r"`+")


def quotation_key(text: str) -> str:
    """Text as a quotation is compared: markers, code fences and backticks gone, whitespace
    collapsed, no space before punctuation, lower case, no closing full stop. A sentence copied
    from a source and that source, both read this way, match however the copy was laid out
    (a code term joined to its prose on one line, a fence flattened, a full stop added)."""
    t = _FENCE.sub(" ", MARKER.sub(" ", text))
    t = _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(t.split()))
    return t.lower().rstrip(".!?… ")


_BULLETS = ("- ", "* ", "• ")


def split_claims(answer: str) -> list[tuple[str, list[int]]]:
    """(claim text without markers, cited marker numbers) per sentence."""
    out = []
    sents = answer_sentences(answer)
    for sent in sents:
        text = plain(sent)
        # "42" or "UK" alone is an answer; beside other sentences two characters are debris
        if len(re.findall(r"\w", text)) >= (1 if len(sents) == 1 else 3):
            out.append((text, markers_in(sent)))
    return out


TERMINAL = re.compile(r"[.!?…][\"'”’)\]]*\s*$")


def is_fragment(claim: str, whole_sentence: bool = False) -> bool:
    """A short claim ("1636.", "in Paris.") or a phrase that is not a sentence ("firms
    engaged in managing construction projects"): it means something only as the answer to
    the question. A source's own whole sentence (a bullet or heading without a full stop,
    copied by an extractive answer) is not a fragment."""
    return len(claim.split()) <= SHORT_CLAIM_WORDS or (not whole_sentence and not TERMINAL.search(claim))


def as_statement(question: str | None, claim: str) -> str:
    return f"{question.strip().rstrip('?').strip()}: {claim.strip()}" if question else claim


@dataclass
class Verifier:
    reader: object  # rag_core.reader.Reader
    idf: Callable[[Sequence[str]], dict[str, float]] | None = None
    # texts -> unit vectors (the bundled MiniLM): what a sentence means, for written answers
    # that say the source's fact in other words (`_meaning`); None: the reader alone judges
    embed: Callable[[list[str]], np.ndarray] | None = None

    @staticmethod
    def _sentences(source: str) -> list[str]:
        return [" ".join(x.split()) for x in split_sentences(source)] or [" ".join(source.split())]

    @staticmethod
    def _windows(sents: list[str]) -> list[str]:
        return sents + [f"{a} {b}" for a, b in zip(sents, sents[1:])]

    def _support(self, claims: list[str], sources: list[str], question: str | None, titles: list[str],
                 leads: list[list[str]] | None = None, language: str = "en", evidence: list[list[str]] | None = None,
                 cited: list[list[int]] | None = None):
        """(support[i, j] of claim i by source j — the reader's calibrated probability —,
        the evidence window that gave each entry, and for each fragment claim i the P(answers)
        of its evidence sentence in each source). `cited[i]`: the 0-based sources claim i cites."""
        out = np.zeros((len(claims), len(sources)))
        best_win = [["" for _ in sources] for _ in claims]
        fragments: dict[int, np.ndarray] = {}
        lost: dict[tuple[int, int], list[str]] = {}  # (claim, source) -> the facts that source lacks
        if not claims or not sources:
            return out, best_win, fragments, lost
        norm_src = [quotation_key(s) for s in sources]
        # A small model copying a passage sometimes glues the document's title in front
        # ("Imperialism The Royal Geographical Society …"): that copy is still verbatim.
        # Only the title of the very source is stripped, never arbitrary leading words
        # (a leading "Never" must not be dropped).
        heads = [[quotation_key(h) + " " for h in {t, t.split(" — ")[0]} if h.strip()] if t else []
                 for t in titles]
        for j, labels in enumerate(leads or []):  # an item's label: only that source's own, only as a lead
            if j < len(heads):
                heads[j] += [f"{dash}{quotation_key(x)}: " for x in labels if x.strip() for dash in ("- ", "")]
        # A list bullet before a copy is layout, like a lead (an outline item without a heading,
        # "- <the sentence> [4]", read unsupported: the bullet was taken for the copy's first word)
        for hs in heads:
            hs += [b for b in _BULLETS if b not in hs]
        sentences = [self._sentences(s) for s in sources]
        windows = [self._windows(sents) for sents in sentences]
        # the source's own sentences and lines (a bullet, a heading: no full stop to split on);
        # only a claim about a question can be a fragment
        whole = {quotation_key(x)
                 for x in [x for wins in windows for x in wins] + [ln for s in sources for ln in s.splitlines()]
                 } if question else set()
        win_terms = [[set(analyze(x)) for x in wins] for wins in windows]
        firsts, seconds, where = [], [], []
        for i, c in enumerate(claims):
            key = quotation_key(c)
            # An outline item's lead ("- R FAQ: …") is our framing: the copy after it is what is
            # judged (issue 50: a title page's two lines under its lead read partial, as a fragment)
            bare = next((key[len(h):] for hs in heads for h in hs if key.startswith(h)), key)
            # A short claim that is a whole sentence or line of a source, inside a longer answer
            # (a list item or a command of a copied passage), is that source's text, not an
            # answer to the question on its own: it is matched like any quotation.
            quoted_line = len(claims) > 1 and bool(bare) and any(bare in ns for ns in norm_src)
            if question and not quoted_line and is_fragment(c, key in whole):
                out[i], best_win[i], fragments[i] = self._support_fragment(c, question, sentences, titles)
                continue
            # A whole sentence found verbatim is the source's own words; a fragment ("1887")
            # found somewhere proves nothing about the question, so it is always read.
            verbatim = len(key.split()) > SHORT_CLAIM_WORDS or quoted_line
            w = term_weights(analyze(c), self.idf)
            to_read = []
            for j, wins in enumerate(windows):
                body = next((key[len(h):] for h in heads[j] if key.startswith(h)), key)
                if verbatim and (len(body.split()) > SHORT_CLAIM_WORDS or quoted_line) and body and body in norm_src[j]:
                    out[i, j] = 1.0
                    best_win[i][j] = next((x for x in wins if body in quotation_key(x)), sources[j])
                    continue
                to_read.append(j)
            # A copy of a source it cites is supported whatever the others say: verify() takes the
            # cited score when it is supported, so reading the other sources for it (a third of
            # an offline answer's reader time) would change no label, score or citation.
            if cited and any(out[i, j] >= 1.0 for j in cited[i]):
                continue
            for j in to_read:
                wins = windows[j]
                overlap = [sum(v for t, v in w.items() if t in terms) for terms in win_terms[j]]
                for k in sorted(range(len(wins)), key=lambda k: -overlap[k])[:WINDOWS_PER_SOURCE]:
                    x = wins[k]
                    firsts.append(c)
                    seconds.append(x)
                    where.append((i, j))
        if firsts:
            p = self.reader.supports(firsts, seconds)
            for (i, j), v, x in zip(where, p, seconds):
                if float(v) > out[i, j] or not best_win[i][j]:
                    out[i, j], best_win[i][j] = float(v), x
            lost = self._written(claims, sources, titles, sorted(set(where)), out, best_win, seconds, where, language)
            if evidence and any(evidence):
                self._quoted(claims, sources, titles, sorted(set(where)), out, best_win, lost, evidence, language)
        return out, best_win, fragments, lost

    def _written(self, claims, sources, titles, pairs, out, best_win, seconds, where, language) -> dict:
        """A sentence written in other words than its source's: supported when it means what the
        source says (`meaning`: the reader's support, the sentences' cosine, the share of its
        weighted terms the source holds) and every fact a reader acts on is the source's own
        (facts.missing). A missing fact caps it at FACT_MISSING, whatever it reads like."""
        cos = {}
        if self.embed is not None:
            texts = list(dict.fromkeys([claims[i] for i, _ in pairs] + list(seconds)))
            vecs = dict(zip(texts, self.embed(texts)))
            for (i, j), x in zip(where, seconds):
                v = float(np.dot(vecs[claims[i]], vecs[x]))
                cos[i, j] = max(cos.get((i, j), -1.0), v)
        lost = {}
        for i, j in pairs:
            c = claims[i]
            score = meaning(out[i, j], cos.get((i, j)), self._term_share(c, f"{titles[j]} {sources[j]}"))
            gone = facts_missing(c, sources[j], titles[j], language, best_win[i][j])
            lost[i, j] = [f"{f.kind}: {f.text}" for f in gone]
            out[i, j] = min(score, FACT_MISSING) if gone else score
        return lost

    def _term_share(self, claim: str, text: str) -> float:
        """The share of the claim's weighted terms that `text` holds (the meaning line's overlap)."""
        w = term_weights(analyze(claim), self.idf)
        terms = set(analyze(text))
        return sum(v for t, v in w.items() if t in terms) / (sum(w.values()) or 1.0)

    def _quoted(self, claims, sources, titles, pairs, out, best_win, lost, evidence, language) -> None:
        """Evidence spans: where the writer quoted sentences of source j as its evidence, a
        written sentence citing j is judged against those quotes: supported when it means what
        one of them says (MEANING_QUOTED) and every fact it states is in that very sentence, not
        elsewhere in the passage ("twice a week" said of the flights, not the ferry). A quote
        that is not in the source's text is no evidence (rejected). A sentence that matches none
        of its source's quotes is partial at best: its writer did not name what it rests on."""
        keys = [quotation_key(s) for s in sources]
        valid = [[q for q in (evidence[j] if j < len(evidence) else []) if (k := quotation_key(q)) and k in keys[j]]
                 for j in range(len(sources))]
        todo = [(i, j, q) for i, j in pairs if valid[j] for q in valid[j]]
        if not todo:
            return
        p = self.reader.supports([claims[i] for i, _, _ in todo], [q for _, _, q in todo])
        cos = [None] * len(todo)
        if self.embed is not None:
            texts = list(dict.fromkeys([claims[i] for i, _, _ in todo] + [q for _, _, q in todo]))
            vecs = dict(zip(texts, self.embed(texts)))
            cos = [float(np.dot(vecs[claims[i]], vecs[q])) for i, _, q in todo]
        best: dict[tuple[int, int], tuple[float, float, str, list]] = {}
        for (i, j, q), r, c in zip(todo, p, cos):
            gone = facts_missing(claims[i], q, titles[j], language, q)
            means = meaning(float(r), c, self._term_share(claims[i], f"{titles[j]} {q}"), MEANING_QUOTED)
            score = min(means, FACT_MISSING) if gone else means
            if (i, j) not in best or (score, means) > best[i, j][:2]:
                best[i, j] = (score, means, q, [f"{f.kind}: {f.text}" for f in gone])
        for (i, j), (score, means, q, gone) in best.items():
            if out[i, j] >= 1.0:
                continue  # a copy is the source's own text, quoted or not
            if score >= SUPPORTED:
                out[i, j], best_win[i][j], lost[i, j] = score, q, []
            elif means >= SUPPORTED:  # it restates its quote, with a fact the quote does not hold
                out[i, j], best_win[i][j], lost[i, j] = score, q, gone
            else:
                out[i, j] = min(out[i, j], UNQUOTED_CAP)

    def _support_fragment(self, fragment: str, question: str, sentences: list[list[str]], titles: list[str]):
        """Per source: (support, the evidence sentence, P(that sentence answers the question))."""
        stated = as_statement(question, fragment)
        needle = " ".join(fragment.lower().strip(" .!?…\"'“”‘’").split())
        support, evidence, answered = np.zeros(len(sentences)), [], np.zeros(len(sentences))
        for j, (sents, title) in enumerate(zip(sentences, titles)):
            pa = self.reader.answers(question, sents, [title] * len(sents))
            ps = self.reader.supports([stated] * len(sents), sents)
            written = np.array([float(bool(needle) and needle in x.lower()) for x in sents])
            s = (ps + written) / 2
            k = int(np.argmax(pa * s))
            support[j], answered[j] = float(s[k]), float(pa[k])
            evidence.append(sents[k])
        return support, evidence, answered

    def verify(self, answer: str, sources: list[str], question: str | None = None,
               titles: list[str] | None = None, leads: list[list[str]] | None = None,
               language: str = "en", evidence: list[list[str]] | None = None) -> tuple[list[Claim], float]:
        """Claims of an answer whose markers [n] refer to sources[n-1]; each is checked
        against what it cites, and against all sources (a claim citing the wrong passage
        is at best partial: the fact is there, the citation is not). With a question, each
        claim also gets P(it answers the question) in `claim.answers`. `leads`: per source, the
        labels an outline or comparison item puts before a sentence it copies from that source
        ("- R-FAQ.pdf (2022-04-22): …"): our framing, not a claim, so the copy after it is
        matched as a copy. `evidence`: per source, the sentences the writer quoted as what its
        answer rests on (`_quoted`)."""
        parts = split_claims(answer)
        if not parts:
            return [], 0.0
        texts = [p[0] for p in parts]
        titles = [t or "" for t in titles] if titles else [""] * len(sources)
        cites = [[n for n in cited if 1 <= n <= len(sources)] for _, cited in parts]  # markers naming a source
        support, best_win, fragments, lost = self._support(texts, sources, question, titles, leads, language, evidence,
                                                           [[n - 1 for n in c] for c in cites])
        claims = []
        for i, text in enumerate(texts):
            valid = cites[i]
            best_any = int(np.argmax(support[i])) if sources else None
            s_any = float(support[i, best_any]) if sources else 0.0
            s_cited = max((float(support[i, n - 1]) for n in valid), default=0.0)
            if valid:
                best = max(valid, key=lambda n: support[i, n - 1])
                score = s_cited if s_cited >= SUPPORTED or s_any < SUPPORTED else min(s_any, (SUPPORTED + PARTIAL) / 2)
            else:
                best = best_any + 1 if best_any is not None else None
                score = min(s_any, (SUPPORTED + PARTIAL) / 2)  # uncited: partial at best
            label = "supported" if score >= SUPPORTED else "partial" if score >= PARTIAL else "unsupported"
            elsewhere = best_any + 1 if best_any is not None and s_any >= SUPPORTED > s_cited else None
            claims.append(Claim(text=text, label=label, score=round(score, 4), cited=valid, best_source=best,
                                supported_by=elsewhere, missing=lost.get((i, best - 1), []) if best else []))
        if question:
            def title_of(c: Claim) -> str:
                j = (c.best_source or 1) - 1
                return titles[j] if 0 <= j < len(titles) else ""

            rest = [i for i in range(len(claims)) if i not in fragments]
            p = self.reader.answers(question, [claims[i].text for i in rest],
                                    [title_of(claims[i]) for i in rest]) if rest else []
            for i, v in zip(rest, p):
                claims[i].answers = round(float(v), 4)
            for i, answered in fragments.items():
                # a fragment answers when the sentence that states it answers
                j = (claims[i].best_source or 1) - 1
                claims[i].answers = round(float(answered[j] * support[i, j]), 4)
        return claims, grounding_score(claims)


def grounding_score(claims: list[Claim]) -> float:
    if not claims:
        return 0.0
    value = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}
    return round(sum(value[c.label] for c in claims) / len(claims), 4)


def answers_question(claims: list[Claim]) -> float:
    """The best sentence's P(it answers the question): one sentence that answers is enough,
    the others may add context."""
    vals = [c.answers for c in claims if c.answers is not None]
    return round(max(vals), 4) if vals else 0.0


def judged_score(claims: list[Claim]) -> float:
    """One number for "is this a right answer to the question, by these sources" (the
    `verify` command with a question): the mean support probability of the claims times
    P(answers). Continuous, so two candidate answers are always ranked, never tied on labels."""
    if not claims:
        return 0.0
    support = sum(c.score for c in claims) / len(claims)
    return round(support * answers_question(claims), 4) if any(c.answers is not None for c in claims) else round(support, 4)


def confidence(grounding: float, answers: float) -> float:
    """confidence = answers_question × grounding_score: the chance the answer both answers
    the question and says only what the sources say, treating the two as independent.
    Either one low makes it low — a supported non-answer (a copied sentence that only
    mentions the topic) and a fluent unsupported answer both show low confidence."""
    return round(max(0.0, min(1.0, answers)) * max(0.0, min(1.0, grounding)), 4)
