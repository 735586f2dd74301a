"""Claim verification: is each sentence of an answer supported by the sources it cites?

No NLI or cross-encoder model ships in a usable PyPI package (DESIGN.md §8), so support is
a calibrated combination of signals that catch what matters in practice:
- content coverage: the claim's content words found in the source (idf-weighted when the
  store can say how rare a word is);
- novelty: names and numbers in the claim that the source never mentions — the typical
  hallucination or swapped entity ("founded in 1952" vs the source's 1925) — weigh heavily;
- bigram coverage: word order/phrases, so a bag of the same words is not enough;
- meaning: the bundled bi-encoder's best cosine between the claim and a source sentence.
A logistic model turns them into support in [0, 1]; its weights are fitted by
benchmarks/answer_quality.py on SQuAD-derived pairs (gold sentence vs the same sentence with
the answer swapped for another entity of the paragraph). An LLM judge can replace it when
an LLM is configured.

Labels: supported ≥ 0.6 > partial ≥ 0.35 > unsupported. Grounding score = mean over claims
(supported 1, partial 0.5, unsupported 0).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..ingest.chunker import split_sentences
from ..models import Claim
from ..stores.analyzer import analyze
from .citations import MARKER, attach_markers, markers_in

SUPPORTED = 0.6
PARTIAL = 0.35
VERIFIER_FEATURES = ("bias", "coverage", "coverage_best", "novel_best", "bigrams", "cosine")
WEIGHTS_FILE = Path(__file__).with_name("verifier_weights.json")
FALLBACK_WEIGHTS = {"bias": -4.0, "coverage": 2.0, "coverage_best": 2.0, "novel_best": -6.0, "bigrams": 1.5, "cosine": 4.0}

# Capitalised words not at the sentence start, and numbers: what a swapped fact changes.
_ENTITY = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][\w\-]+|\b\d[\d,.]*\b")


def load_verifier_weights() -> dict[str, float]:
    if WEIGHTS_FILE.exists():
        data = json.loads(WEIGHTS_FILE.read_text())
        return {f: float(data["weights"][f]) for f in VERIFIER_FEATURES}
    return dict(FALLBACK_WEIGHTS)


def plain(sentence: str) -> str:
    """A sentence without its citation markers, spaced as it reads."""
    return re.sub(r"\s+([.,;:!?…])", r"\1", " ".join(MARKER.sub(" ", sentence).split()))


def answer_sentences(answer: str) -> list[str]:
    return split_sentences(attach_markers(answer))


def split_claims(answer: str) -> list[tuple[str, list[int]]]:
    """(claim text without markers, cited marker numbers) per sentence."""
    out = []
    for sent in answer_sentences(answer):
        text = plain(sent)
        if len(re.findall(r"\w", text)) >= 3:
            out.append((text, markers_in(sent)))
    return out


def _entities(text: str) -> set[str]:
    return {e.lower().strip(".,") for e in _ENTITY.findall(text)}


@dataclass
class Verifier:
    embed: Callable[[list[str]], np.ndarray] | None = None  # texts -> unit vectors
    idf: Callable[[Sequence[str]], dict[str, float]] | None = None
    weights: dict[str, float] | None = None

    def features(self, claim: str, source: str, cos: float, best: str | None = None) -> np.ndarray:
        """`best` is the source sentence closest to the claim: a fact swapped for another
        name *from the same passage* is still "in the source", but not in that sentence."""
        c_terms = analyze(claim)
        uniq = list(dict.fromkeys(c_terms))
        s_terms = analyze(source)
        s_set = set(s_terms)
        best = best if best is not None else source
        b_set = set(analyze(best))
        idf = self.idf(uniq) if (self.idf and uniq) else {}
        w = {t: max(idf.get(t, 1.0), 0.05) for t in uniq}
        total = sum(w.values()) or 1.0
        coverage = sum(w[t] for t in uniq if t in s_set) / total if uniq else 0.0
        coverage_best = sum(w[t] for t in uniq if t in b_set) / total if uniq else 0.0
        ents = _entities(claim)
        best_low = best.lower()
        # One swapped name or number is enough to make a claim false: any, not a share.
        novel_best = 1.0 if any(e not in best_low for e in ents) else 0.0
        c_bi = set(zip(c_terms, c_terms[1:]))
        bigrams = len(c_bi & set(zip(s_terms, s_terms[1:]))) / len(c_bi) if c_bi else coverage
        return np.array([1.0, coverage, coverage_best, novel_best, bigrams, cos])

    def score_pairs(self, claims: list[str], sources: list[str]) -> np.ndarray:
        """support[i, j] of claim i by source j."""
        if not claims or not sources:
            return np.zeros((len(claims), len(sources)))
        # A claim that is a verbatim span of a source (an extractive answer's sentences are)
        # is supported by it by definition: no model needed for that pair.
        norm_src = [" ".join(s.split()).lower() for s in sources]
        verbatim = np.array([[" ".join(c.split()).lower().rstrip(".!?…") in s for s in norm_src] for c in claims])
        sent_lists = [[" ".join(x.split()) for x in split_sentences(s)] or [s] for s in sources]
        cos = np.zeros((len(claims), len(sources)))
        best = [[sl[0] for sl in sent_lists] for _ in claims]
        if self.embed is not None and not verbatim.any(axis=1).all():
            flat = [x for sl in sent_lists for x in sl]
            vecs = self.embed(claims + flat)
            cv, sv = vecs[: len(claims)], vecs[len(claims) :]
            sims = cv @ sv.T
            at = 0
            for j, sl in enumerate(sent_lists):
                block = sims[:, at : at + len(sl)]
                cos[:, j] = block.max(axis=1)
                for i in range(len(claims)):
                    best[i][j] = sl[int(block[i].argmax())]
                at += len(sl)
        weights = self.weights or load_verifier_weights()
        wv = np.array([weights[f] for f in VERIFIER_FEATURES])
        out = np.zeros((len(claims), len(sources)))
        for i, c in enumerate(claims):
            for j, s in enumerate(sources):
                if verbatim[i, j]:
                    out[i, j] = 1.0
                    continue
                z = float(self.features(c, s, cos[i, j], best[i][j]) @ wv)
                out[i, j] = 1.0 / (1.0 + np.exp(-z))
        return out

    def verify(self, answer: str, sources: list[str]) -> tuple[list[Claim], float]:
        """Claims of an answer whose markers [n] refer to sources[n-1]; each is checked
        against what it cites, and against all sources (a claim citing the wrong passage
        is at best partial: the fact is there, the citation is not)."""
        parts = split_claims(answer)
        if not parts:
            return [], 0.0
        support = self.score_pairs([p[0] for p in parts], sources)
        claims = []
        for i, (text, cited) in enumerate(parts):
            valid = [n for n in cited if 1 <= n <= len(sources)]
            best_any = int(np.argmax(support[i])) if sources else None
            s_any = float(support[i, best_any]) if sources else 0.0
            if valid:
                s_cited = max(float(support[i, n - 1]) for n in valid)
                best = max(valid, key=lambda n: support[i, n - 1])
                score = s_cited if s_cited >= SUPPORTED or s_any < SUPPORTED else min(s_any, (SUPPORTED + PARTIAL) / 2)
            else:
                best = best_any + 1 if best_any is not None else None
                score = min(s_any, (SUPPORTED + PARTIAL) / 2)  # uncited: partial at best
            label = "supported" if score >= SUPPORTED else "partial" if score >= PARTIAL else "unsupported"
            claims.append(Claim(text=text, label=label, score=round(score, 4), cited=valid, best_source=best))
        return claims, grounding_score(claims)


def grounding_score(claims: list[Claim]) -> float:
    if not claims:
        return 0.0
    value = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}
    return round(sum(value[c.label] for c in claims) / len(claims), 4)


def confidence(grounding: float, retrieval: float, coverage: float) -> float:
    """confidence = 0.5·grounding + 0.3·retrieval + 0.2·coverage, where retrieval is the best
    cited passage's reranker probability (or fused score) and coverage the share of claims
    that carry at least one valid citation. Grounding dominates: an answer whose sentences
    are not supported cannot be trusted however good the retrieval looked."""
    return round(0.5 * grounding + 0.3 * max(0.0, min(1.0, retrieval)) + 0.2 * coverage, 4)
