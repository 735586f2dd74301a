"""Extractive answers (offline default, no LLM): the source sentences that *answer* the
question, each followed by its citation marker.

1. `read`: the sentences of the best passages are read by the reader model (``answers``
   task, with their document title) and scored by a small logistic model over the reader's
   logit, the bi-encoder cosine, idf-weighted coverage of the question's words, and the
   passage's rank and reranker score (SELECTION_FEATURES, fitted on the train side of
   SQuAD). Only the lexically most promising `max_read` sentences are read, which bounds
   latency.
2. `compose`: the best sentence leads; up to `max_sentences - 1` more join when they score
   at least `relative_cutoff` × the best and do not repeat a chosen one. Sentences read
   grouped by passage, in document order.

The best combined score is the *evidence* the chain's abstention compares with its single
threshold (`answer_threshold`).
"""

from __future__ import annotations

import contextvars
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..text.sentences import split_sentences
from ..text.source_code import code_language, prose_part
from .passage import cite, cite_each, flat, is_code, jaccard, opening, passage_for, verbatim
from ..models import ScoredChunk
from ..reader import answer_input
from ..text.analysis import analyze, term_weights

# threads shared by the process for work that runs beside the reader (ExtractiveAnswerer.read)
_SIDE = ThreadPoolExecutor(max_workers=4, thread_name_prefix="read-side")


@dataclass
class Extract:
    text: str  # sentences with markers [n], n = index into `sources` + 1
    best_score: float  # P(answers) of the lead sentence
    used: list[int]  # source numbers used
    snippets: dict[int, str]  # source number -> the sentences taken from it
    highlight: str = ""  # the best-scoring sentence inside the passage shown


@dataclass
class Evidence:
    """Candidate sentences (source index, sentence index, text), their features and the
    combined P(this sentence answers the question)."""

    cands: list[tuple[int, int, str]] = field(default_factory=list)
    probs: np.ndarray = field(default_factory=lambda: np.zeros(0))
    features: np.ndarray = field(default_factory=lambda: np.zeros((0, len(SELECTION_FEATURES))))

    @property
    def best(self) -> float:
        return float(self.probs.max()) if len(self.probs) else 0.0


# What decides that a sentence answers: the reader (question and sentence read together)
# first, and what retrieval knows about its passage — a sentence the reader likes in the
# 4th passage is less likely the answer than one in the best passage. A logistic model over
# these, fitted on the train side of SQuAD (v2.0 articles 17–19, never seen by the reader
# in training) by `benchmarks/answer_quality.py --split calib --fit-selection`.
SELECTION_FEATURES = ("bias", "reader_logit", "cosine", "coverage", "passage", "first_passage", "passage_rank")
SELECTION_FILE = Path(__file__).with_name("selection_weights.json")
FALLBACK_SELECTION = {"bias": 0.0, "reader_logit": 1.0, "cosine": 0.0, "coverage": 0.0, "passage": 0.0,
                      "first_passage": 0.0, "passage_rank": 0.0}


def load_selection_weights() -> dict[str, float]:
    if SELECTION_FILE.exists():
        data = json.loads(SELECTION_FILE.read_text())
        return {f: float(data["weights"][f]) for f in SELECTION_FEATURES}
    return dict(FALLBACK_SELECTION)


def _terms(text: str) -> set[str]:
    return set(analyze(text))


@dataclass
class ExtractiveAnswerer:
    reader: object  # rag_core.reader.Reader
    idf: Callable[[Sequence[str]], dict[str, float]] | None = None
    embed: Callable[[list[str]], np.ndarray] | None = None  # texts -> unit vectors (the bi-encoder)
    weights: dict[str, float] = field(default_factory=load_selection_weights)  # read once, not per question
    max_sentences: int = 3
    max_passages: int = 4
    relative_cutoff: float = 0.35  # extra sentences must reach this share of the lead's P(answers)
    max_sentence_chars: int = 600
    # The reader costs ~3–6 ms a sentence on 2 cores: this caps the answer step's latency.
    # 16, not 24 (issue 52): on SQuAD's train side (benchmarks/read_fewer.py --split calib
    # --n 80) every one of 160 answers was the same, with the same quality, and the lexically
    # weakest sentences it no longer reads were never the one chosen.
    max_read: int = 16

    def read(self, question: str, sources: list[ScoredChunk], max_passages: int | None = None) -> Evidence:
        cands: list[tuple[int, int, str]] = []
        sentences: dict[int, list[str]] = {}  # per passage, whitespace-normalised (neighbours for _inputs)
        for si, r in enumerate(sources[: max_passages or self.max_passages]):
            text = prose_part(r.chunk.text) if code_language(r.chunk.source) else r.chunk.text
            sentences[si] = [" ".join(sent.split()) for sent in split_sentences(text)]
            sents = sentences[si]
            for k, s in enumerate(sents):
                if is_code(s):
                    # The reader was trained on prose: a bare code block reads as noise. It
                    # is read with the sentence before it ("To read a CSV file, use:", "For
                    # example, …"), as flat PDF text used to run the two together, and stays
                    # out when nothing precedes it in the passage.
                    if k == 0 or is_code(sents[k - 1]) or sents[k - 1].startswith("#"):
                        continue
                    s = f"{sents[k - 1]} {s}"
                if 12 <= len(s) <= self.max_sentence_chars and not s.startswith("#"):
                    cands.append((si, k, s))
        if not cands:
            return Evidence()
        w = term_weights(analyze(question), self.idf)
        total = sum(w.values()) or 1.0
        cov = np.zeros(len(cands))
        for i, (si, _, s) in enumerate(cands):
            c = sources[si].chunk
            # The title only: the reader and these weights were fitted on SQuAD, whose inputs
            # have an article title and no section path, and a PDF's text read that way until
            # its headings were found (issue 26). With the section path here and in the
            # reader's input, near-miss questions on five manuals were answered far more often
            # (abstained 48% vs 61–65% without it; benchmarks/manual_questions.py, issue 25).
            terms = _terms(s) | _terms(c.title)
            cov[i] = sum(v for t, v in w.items() if t in terms) / total
        if len(cands) > self.max_read:
            lexical = cov + np.array([0.5 / (1 + si) for si, _, _ in cands])  # earlier passages first
            keep = sorted(np.argsort(-lexical, kind="stable")[: self.max_read].tolist())
            cands, cov = [cands[i] for i in keep], cov[keep]
        # The bi-encoder's vectors do not depend on the reader's logits: both run at once, each
        # on one core (inference.FairShare), instead of one after the other on two (issue 52:
        # the sentences' embedding was a third of the read's time).
        side = _SIDE.submit(contextvars.copy_context().run, self.embed, [question] + [c[2] for c in cands]) \
            if self.embed is not None else None
        logits = self.reader.logits("answers", [question] * len(cands), self._inputs(sources, cands, sentences))
        if side is not None:
            vecs = side.result()
            cos = vecs[1:] @ vecs[0]
        else:
            cos = np.zeros(len(cands))
        x = np.column_stack([
            np.ones(len(cands)), logits, cos, cov,
            [float(sources[si].scores.get("rerank", sources[si].score)) for si, _, _ in cands],
            [1.0 if si == 0 else 0.0 for si, _, _ in cands],
            [1.0 / (1 + si) for si, _, _ in cands],
        ])
        z = x @ np.array([self.weights[f] for f in SELECTION_FEATURES])
        return Evidence(cands, 1.0 / (1.0 + np.exp(-z)), x)

    def _inputs(self, sources: list[ScoredChunk], cands: list[tuple[int, int, str]],
                sentences: dict[int, list[str]]) -> list[str]:
        """What the reader reads per candidate: its passage's heading and the sentence, and with a
        model trained for it, the sentences before and after it in the passage (a procedural
        answer's command, a pronoun's referent)."""
        if not getattr(self.reader, "reads_context", False):
            return [f"{sources[si].chunk.title} | {opening(sentences[si], k)}{s}" for si, k, s in cands]
        out = []
        for si, k, s in cands:
            sents = sentences[si]
            out.append(answer_input(sources[si].chunk.heading, s, sents[k - 1] if k > 0 else "",
                                    sents[k + 1] if k + 1 < len(sents) else ""))
        return out

    def compose(self, ev: Evidence, sources: list[ScoredChunk] | None = None,
                context: dict[int, str] | None = None) -> Extract:
        """The answer at the grain a person reads: the paragraph, list, or code block with the
        sentence introducing it, that holds the best-scoring sentence (a long paragraph cut to
        a window around it that keeps the passage's other well-scoring sentences), that sentence
        as the highlight, cited — the way a search engine's answer box shows a snippet. A wrong
        choice between two neighbouring sentences then no longer hides the answer: both are
        shown. Sentences of other passages that score nearly as well (up to `max_sentences` in
        all, at least `relative_cutoff` × the best, as before passages were shown) follow it,
        each cited. `context` maps a source's index to the document's text around it (its
        neighbouring chunks joined), where the passage is looked for: a chunk may begin inside
        a sentence or after the command its first sentence refers to. Without `sources` (or
        when the sentence cannot be placed in its passage) the sentences alone."""
        if not ev.cands:
            return Extract("", 0.0, [], {})
        chosen = self._choose(ev)
        best = chosen[0]
        si, k, sentence = ev.cands[best]
        text = sources[si].chunk.text if sources else ""
        wide = (context or {}).get(si) or text
        also = [ev.cands[i][1] for i in chosen[1:] if ev.cands[i][0] == si]
        passage, highlight = passage_for(text, k, sentence, also, wide) if sources else (None, sentence)
        lead = passage or sentence
        n = si + 1
        # the citation's snippet, which the page viewer highlights, is the sentence that answers;
        # the answer shows the passage around it. The snippet stays inside the cited chunk (the
        # viewer and citation checks read it there): where the document's sentence runs beyond
        # the chunk, the chunk's part of it.
        src_flat = " ".join(text.split())
        segs = split_sentences(text)
        piece = flat(segs[k]) if sources and 0 <= k < len(segs) else ""
        snip = (highlight if sources and highlight and highlight in src_flat
                else piece if piece and not is_code(piece) else verbatim(lead, wide))
        parts, snippets = [cite_each(lead, n)], {n: snip}
        shown = " ".join(lead.split())
        for i in chosen[1:]:
            sj, kj, s = ev.cands[i]
            intro, fence, code = s.partition("```")
            if fence and intro.strip() and intro.strip() in shown:
                s = fence + code  # a code block read with its introduction, which is shown already
            if s in shown:
                continue  # inside the passage already
            if fence and sources:
                # read flat, shown with its lines: a code block stays a block
                src_segs = split_sentences(sources[sj].chunk.text)
                raw = [x.strip() for x in src_segs[max(kj - 1, 0):kj + 1] if flat(x) in s]
                if raw and flat("\n".join(raw)) == flat(s):
                    parts.append(cite_each("\n".join(raw), sj + 1))
                    shown += " " + s
                    snippets[sj + 1] = (snippets.get(sj + 1, "") + " " + s).strip()
                    continue
            parts.append(cite(s, sj + 1))
            shown += " " + s
            snippets[sj + 1] = (snippets.get(sj + 1, "") + " " + s).strip()
        # a paragraph break between places: each part ends where its source's sentence ends,
        # also when the next starts in lower case ("which shows …") or after code
        return Extract("\n\n".join(parts), float(ev.probs[best]), sorted(snippets), snippets, highlight=highlight)

    def _choose(self, ev: Evidence) -> list[int]:
        """The best sentence, then up to `max_sentences - 1` more that score at least
        `relative_cutoff` × the best and repeat none chosen, best first."""
        order = list(np.argsort(-ev.probs, kind="stable"))
        best = order[0]
        chosen = [best]
        for i in order[1:]:
            if len(chosen) >= self.max_sentences or ev.probs[i] < self.relative_cutoff * ev.probs[best]:
                break
            ti = _terms(ev.cands[i][2])
            if any(jaccard(ti, _terms(ev.cands[j][2])) > 0.7 for j in chosen):
                continue  # overlapping chunks repeat sentences
            if any(ev.cands[i][2] in ev.cands[j][2] or ev.cands[j][2] in ev.cands[i][2] for j in chosen):
                continue  # an introducing sentence and the code block read with it
            chosen.append(i)
        return chosen

    def extract(self, question: str, sources: list[ScoredChunk]) -> Extract:
        return self.compose(self.read(question, sources), sources)
