"""Extractive answers (offline default, no LLM): the source sentences that best answer the
question, each followed by its citation marker. Grounded by construction; deterministic.

Sentence score = w_cos·cos(question, sentence) + w_cov·(idf-weighted share of the
question's content words in the sentence or its passage's title/section) + w_pass·(the
passage's reranker probability). The best sentence leads; up to `max_sentences` more are
added when they score close to the best and are not near-duplicates of one already chosen.
Sentences are shown grouped by passage, in document order, so the answer reads in sequence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..ingest.chunker import split_sentences
from ..models import ScoredChunk
from ..stores.analyzer import analyze

W_COS, W_COV, W_PASSAGE = 0.5, 0.3, 0.2


@dataclass
class Extract:
    text: str  # sentences with markers [n], n = index into `sources` + 1
    best_score: float
    used: list[int]  # source numbers used
    snippets: dict[int, str]  # source number -> the sentences taken from it


@dataclass
class ExtractiveAnswerer:
    embed: Callable[[list[str]], np.ndarray]
    idf: Callable[[Sequence[str]], dict[str, float]] | None = None
    max_sentences: int = 3
    max_passages: int = 4
    relative_cutoff: float = 0.8  # extra sentences must score ≥ this × the best
    max_sentence_chars: int = 600
    # Embedding a sentence costs ~10 ms on 2 cores: only the lexically most promising ones
    # go to the model (p95 answer latency is the budget this protects).
    max_embedded: int = 10

    def extract(self, question: str, sources: list[ScoredChunk]) -> Extract:
        cands: list[tuple[int, int, str]] = []  # (source idx, sentence idx, text)
        for si, r in enumerate(sources[: self.max_passages]):
            for k, sent in enumerate(split_sentences(r.chunk.text)):
                s = " ".join(sent.split())
                if 20 <= len(s) <= self.max_sentence_chars and not s.startswith("#"):
                    cands.append((si, k, s))
        if not cands:
            return Extract("", 0.0, [], {})
        q_terms = list(dict.fromkeys(analyze(question)))
        idf = self.idf(q_terms) if (self.idf and q_terms) else {}
        w = {t: max(idf.get(t, 1.0), 0.05) for t in q_terms}
        total = sum(w.values()) or 1.0
        lexical = np.zeros(len(cands))
        for i, (si, _, s) in enumerate(cands):
            c = sources[si].chunk
            terms = set(analyze(s)) | set(analyze(f"{c.title} {c.section}"))
            cov = sum(w[t] for t in q_terms if t in terms) / total if q_terms else 0.0
            passage = float(sources[si].scores.get("rerank", sources[si].score))
            lexical[i] = W_COV * cov + W_PASSAGE * passage
        keep = sorted(np.argsort(-lexical)[: self.max_embedded].tolist())
        cands = [cands[i] for i in keep]
        lexical = lexical[keep]
        vecs = self.embed([question] + [c[2] for c in cands])
        qv, sv = vecs[0], vecs[1:]
        scores = W_COS * (sv @ qv) + lexical
        order = list(np.argsort(-scores))
        best = order[0]
        chosen = [best]
        for i in order[1:]:
            if len(chosen) >= self.max_sentences or scores[i] < self.relative_cutoff * scores[best]:
                break
            if max(float(sv[i] @ sv[j]) for j in chosen) > 0.85:
                continue  # near-duplicate of a chosen sentence (overlapping chunks repeat text)
            chosen.append(i)
        # Read in order: by the passage's first appearance in the selection, then sentence order.
        first_pos = {}
        for i in chosen:
            first_pos.setdefault(cands[i][0], len(first_pos))
        chosen.sort(key=lambda i: (first_pos[cands[i][0]], cands[i][1]))
        parts, snippets = [], {}
        for i in chosen:
            si, _, s = cands[i]
            n = si + 1
            m = re.match(r"(.*?)([.!?…]+[\"'”’)]*)$", s)
            parts.append(f"{m.group(1)} [{n}]{m.group(2)}" if m else f"{s} [{n}]")
            snippets[n] = (snippets.get(n, "") + " " + s).strip()
        return Extract(" ".join(parts), float(scores[best]), sorted(snippets), snippets)
