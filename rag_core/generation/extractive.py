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

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..text.sentences import split_sentences, unit_starts
from ..models import ScoredChunk
from ..reader import answer_input
from ..text.analysis import analyze, term_weights


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
    max_read: int = 24

    def read(self, question: str, sources: list[ScoredChunk], max_passages: int | None = None) -> Evidence:
        cands: list[tuple[int, int, str]] = []
        sentences: dict[int, list[str]] = {}  # per passage, whitespace-normalised (neighbours for _inputs)
        for si, r in enumerate(sources[: max_passages or self.max_passages]):
            sentences[si] = [" ".join(sent.split()) for sent in split_sentences(r.chunk.text)]
            sents = sentences[si]
            for k, s in enumerate(sents):
                if _is_code(s):
                    # The reader was trained on prose: a bare code block reads as noise. It
                    # is read with the sentence before it ("To read a CSV file, use:", "For
                    # example, …"), as flat PDF text used to run the two together, and stays
                    # out when nothing precedes it in the passage.
                    if k == 0 or _is_code(sents[k - 1]) or sents[k - 1].startswith("#"):
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
        logits = self.reader.logits("answers", [question] * len(cands), self._inputs(sources, cands, sentences))
        if self.embed is not None:
            vecs = self.embed([question] + [c[2] for c in cands])
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
            return [f"{sources[si].chunk.title} | {_opening(sentences[si], k)}{s}" for si, k, s in cands]
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
        piece = _flat(segs[k]) if sources and 0 <= k < len(segs) else ""
        snip = (highlight if sources and highlight and highlight in src_flat
                else piece if piece and not _is_code(piece) else _verbatim(lead, wide))
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
                raw = [x.strip() for x in src_segs[max(kj - 1, 0):kj + 1] if _flat(x) in s]
                if raw and _flat("\n".join(raw)) == _flat(s):
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
            if any(_jaccard(ti, _terms(ev.cands[j][2])) > 0.7 for j in chosen):
                continue  # overlapping chunks repeat sentences
            if any(ev.cands[i][2] in ev.cands[j][2] or ev.cands[j][2] in ev.cands[i][2] for j in chosen):
                continue  # an introducing sentence and the code block read with it
            chosen.append(i)
        return chosen

    def extract(self, question: str, sources: list[ScoredChunk]) -> Extract:
        return self.compose(self.read(question, sources), sources)


def _opening(sents: list[str], k: int) -> str:
    """What a sentence is read after: a section's first sentence after its heading, as the text
    reads on the page ("Fit The fit command fits … Marquardt-Levenberg algorithm"), and a
    description after the one-line code term it describes (a manual's definition list:
    "mapfile [-d delim] … array" then "Read lines from the standard input …"). Both name
    what the sentence only calls "it", "the command" or "array"."""
    if k > 0 and sents[k - 1].startswith("#"):
        return sents[k - 1].lstrip("#").strip() + " "
    j = _term_before(sents, k)
    return _code_term(sents[j]) + " " if j is not None else ""


def _code_term(seg: str) -> str | None:
    """The code of a one-line code block (a definition term), else None."""
    if not _is_code(seg):
        return None
    lines = [x for x in seg.strip().strip("`").strip().splitlines() if x.strip()]
    return lines[0].strip() if len(lines) == 1 and len(lines[0]) <= 120 else None


def _term_before(segs: list[str], k: int) -> int | None:
    """Index of the one-line code term that segment `k` (prose) follows, past its lone closing
    fence, else None."""
    if _is_code(segs[k]):
        return None
    j = k - 2 if k > 1 and segs[k - 1].strip() == "```" else k - 1
    return j if j >= 0 and _code_term(segs[j]) else None


def cite(sentence: str, n: int) -> str:
    """The sentence with its marker [n] before its closing punctuation."""
    m = re.match(r"(.*?)([.!?…]+[\"'”’)]*)$", sentence, re.S)
    return f"{m.group(1)} [{n}]{m.group(2)}" if m else f"{sentence} [{n}]"


_ITEM = re.compile(r"^(?:[-*•]|\d{1,2}[.)])\s+")


def _is_code(seg: str) -> bool:
    return seg.startswith("```")


def _flat(seg: str) -> str:
    """A segment on one line, fences kept: the answer stays verbatim (the verifier and the
    citation check read it against the passage), and rendering shows the fenced part as code."""
    return " ".join(seg.split())


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


MAX_PASSAGE_CHARS = 700  # an answer passage longer than this is cut to sentences around the best one
# A sentence that announces what follows it: the block after it belongs to it.
_ANNOUNCES = re.compile(r"(:|\b(as follows|like this|for example|for instance|e\.g\.|such as|as in|the command is|"
                        r"use|using|run|type|enter|with|as))\s*$", re.I)


def _blocks(text: str) -> list[str]:
    """A passage's blocks as a reader sees them: paragraphs (split at blank lines and
    headings), lists (a run of items with their wrapped lines) and fenced code blocks; a code
    block or list joins the paragraph before it when that paragraph announces it ("… as
    follows:", "… the command is"), and a description joins the one-line code term before it
    ("mapfile [-d delim] … array" / "Read lines from the standard input …")."""
    raw: list[tuple[str, list[str], bool]] = []  # (kind, lines, after a blank line or heading)
    cur: list[str] = []
    kind = ""
    fence = False
    gap = False  # a blank line or a heading since the last block

    def flush():
        nonlocal cur, kind, gap
        if cur:
            raw.append((kind or "prose", cur, gap))
            gap = False
        cur, kind = [], ""

    for ln in text.split("\n"):
        st = ln.strip()
        if st.startswith(("```", "~~~")):
            if not fence:
                flush()
                fence, kind, cur = True, "code", [ln]
            else:
                cur.append(ln)
                fence = False
                flush()
            continue
        if fence:
            cur.append(ln)
            continue
        if not st or st.startswith("#"):
            flush()
            gap = True
            continue
        item = bool(_ITEM.match(st))
        if item and kind != "list":
            flush()
            kind = "list"
        elif not item and kind == "code":
            flush()
        cur.append(ln)
        kind = kind or "prose"
    flush()
    out: list[tuple[str, str]] = []
    term = False  # the block just before is a one-line code term (a manual's definition list)
    for kind, lines, after_gap in raw:
        body = "\n".join(lines).strip()
        if out and kind in ("code", "list") and out[-1][0] == "prose" and _ANNOUNCES.search(out[-1][1]):
            out[-1] = ("prose+" + kind, out[-1][1] + "\n" + body)
        elif out and kind == "prose" and term and not after_gap:
            out[-1] = ("term+prose", out[-1][1] + "\n" + body)  # the description with the term it defines
        else:
            out.append((kind, body))
        term = kind == "code" and _code_term(body) is not None
    return [b for _, b in out if b]


def _verbatim(passage: str, source: str) -> str:
    """The passage as the citation's snippet: the source's own words, without the full stop an
    answer adds to a span that ends without one (a snippet must be found in its passage: the
    viewer highlights it, and citation checks read it there)."""
    flat, src = " ".join(passage.split()), " ".join(source.split())
    return flat[:-1] if flat.endswith(".") and flat not in src and flat[:-1] in src else flat


def _ending(span: str, last: str) -> str:
    """A span ending as a sentence: a full stop added unless it ends with one or with code."""
    return span if re.search(r"[.!?…。！？][\"'”’)」』]*$", span) or _is_code(last) or last.rstrip().endswith("```") else span + "."


def cite_each(text: str, n: int) -> str:
    """Every sentence of a copied passage with its marker, its lines kept (a list stays a list,
    a code block a block): each sentence is a claim the verifier matches against the source,
    and an uncited one could at best be 'partial'."""
    starts = [0, *unit_starts(text), len(text)]
    out = []
    for a, b in zip(starts, starts[1:]):
        seg = text[a:b]
        body = seg.rstrip()
        if body:
            out.append(cite(body, n) + seg[len(body):])
    return "".join(out).rstrip()


def sentence_by_terms(question: str, language: str, text: str, text_language: str,
                      idf: Callable | None = None) -> tuple[int, str] | None:
    """(index, sentence) of `text`'s sentence sharing the most idf-weighted terms with the
    question, each read in its own language (and the question in the text's too): how the best
    sentence of a passage is marked where the reader does not read the language. None when no
    sentence shares a term."""
    q = analyze(question, language)
    if text_language != language:
        q += analyze(question, text_language)
    w = term_weights(q, idf)
    best, best_score = None, 0.0
    for k, sent in enumerate(split_sentences(text)):
        if _is_code(sent):
            continue
        score = sum(w.get(t, 0.0) for t in set(analyze(sent, text_language)))
        if score > best_score:
            best, best_score = (k, _flat(sent)), score
    return best


def passage_for(text: str, k: int, sentence: str, also: list[int] | None = None,
                context: str | None = None) -> tuple[str | None, str]:
    """(the passage that shows sentence `k` of `text` as a person reads it, the sentence to
    highlight in it): answer_passage's block, and when the reader read a code block with the
    sentence introducing it (`sentence` is both), the block whole after that sentence. The
    highlight is the document's whole sentence where the chunk held only a piece of it. The
    one rule for an offline answer's passage and for each closest passage of an abstention."""
    segs = split_sentences(text)
    wide = context or text
    code_read_with_intro = 0 < k < len(segs) and _is_code(segs[k]) and _flat(segs[k]) != sentence
    passage = answer_passage(text, k - 1 if code_read_with_intro else k,
                             (also or []) + ([k] if code_read_with_intro else []), context=wide)
    if passage and code_read_with_intro and _flat(segs[k]) not in " ".join(passage.split()):
        # the code block the reader read with this introduction: shown after it, whole
        block = next((b for b in _blocks(wide) if _flat(segs[k]) in " ".join(b.split())), segs[k])
        passage = passage.rstrip() + "\n" + (block if len(block) <= MAX_PASSAGE_CHARS else segs[k].strip())
    highlight = _flat(segs[k]) if 0 <= k < len(segs) else sentence
    if _is_code(highlight) and not _is_code(sentence):
        highlight = sentence
    if wide is not text and highlight:
        # a chunk's first or last "sentence" may be a piece of one the document completes
        highlight = next((f for f in map(_flat, split_sentences(wide)) if highlight in f), highlight)
    return passage, highlight


def answer_passage(text: str, k: int, also: list[int] | None = None, context: str | None = None) -> str | None:
    """The block of `text` holding its sentence `k` (split_sentences' numbering), its lines
    kept, ending as a sentence; a window of sentences around `k` when the block is longer than
    MAX_PASSAGE_CHARS: the sentence before it and those after it, widened first to the
    sentences `also` (other well-scoring ones) where the limit allows. With `context` (the
    document's text around `text`: stores.adjacent.widened), the block is the document's, not
    the chunk's: it may begin before the chunk does and run on after it. None when the sentence
    cannot be placed."""
    segs = split_sentences(text)
    if not 0 <= k < len(segs):
        return None
    target = " ".join(segs[k].split())
    wanted = [" ".join(segs[j].split()) for j in (also or []) if 0 <= j < len(segs)]
    for block in _blocks(context or text):
        if target not in " ".join(block.split()):
            continue
        bounds = [0, *unit_starts(block), len(block)]
        parts = [block[a:b] for a, b in zip(bounds, bounds[1:])]
        flat = [" ".join(x.split()) for x in parts]
        at = next((i for i, x in enumerate(flat) if x and target in x), None)
        if at is None:
            return None
        size = lambda lo, hi: len(" ".join(flat[lo:hi + 1]))  # noqa: E731
        if size(0, len(parts) - 1) <= MAX_PASSAGE_CHARS:  # the whole paragraph, list or block
            return _ending(block.strip(), flat[-1])
        lo = hi = at
        for w in wanted:  # the passage's other well-scoring sentences, where they fit
            j = next((i for i, x in enumerate(flat) if x and w in x), None)
            if j is not None and size(min(lo, j), max(hi, j)) <= MAX_PASSAGE_CHARS:
                lo, hi = min(lo, j), max(hi, j)
        # the sentence before names what this one calls "it", or states the figure it refers
        # to; what follows completes a procedure
        if lo > 0 and size(lo - 1, hi) <= MAX_PASSAGE_CHARS:
            lo -= 1
        while hi + 1 < len(parts) and size(lo, hi + 1) <= MAX_PASSAGE_CHARS:
            hi += 1
        if size(lo, hi) > MAX_PASSAGE_CHARS:
            return None
        return _ending("".join(parts[lo:hi + 1]).strip(), flat[hi])
    return None
