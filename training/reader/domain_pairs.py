"""Evidence vs topical sentence pairs, per domain: the sentence of a passage that holds the
answer, and the sentence of the same passage that shares most words with the question but
does not hold it. Both are verbatim (so both are *supported*); only one answers.

Used on the train side to calibrate the reader's P(answers) across domains
(training/reader/calibrate.py --domains) and on the test side to measure it
(benchmarks/evidence_vs_topical.py). Which side a call reads is the caller's choice of
articles and claim files; make_data.assert_not_evaluation guards the training side.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from rag_core.text.analysis import analyze
from rag_core.text.sentences import split_sentences

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def overlap(q: str, s: str) -> float:
    qt = set(analyze(q))
    return len(qt & set(analyze(s))) / (len(qt) or 1)


def topical_for(question: str, sentences: list[str], is_evidence) -> str | None:
    """The non-answer that shares most words with the question (None when none shares any)."""
    others = [s for s in sentences if not is_evidence(s) and len(s.split()) >= 5]
    if not others:
        return None
    best = max(others, key=lambda s: overlap(question, s))
    return best if overlap(question, best) > 0 else None


def squad(articles: range) -> list[dict]:
    """SQuAD v2.0 dev answerable questions of the given article positions (SPLIT.md: 20–34 are
    the test side; 17–19 the held-out calibration articles of the train side)."""
    data = json.loads((DATA / "squad-dev" / "dev-v2.0-reconstructed.json").read_text())["data"]
    out = []
    for ai in articles:
        art = data[ai]
        for p in art["paragraphs"]:
            sents = split_sentences(p["context"])
            for qa in p["qas"]:
                if qa.get("is_impossible") or not qa["answers"]:
                    continue
                golds = [a["text"] for a in qa["answers"]]
                ev = [s for s in sents if any(g in s for g in golds)]
                top = topical_for(qa["question"], sents, lambda s: any(g in s for g in golds)) if ev else None
                if top:
                    out.append({"q": qa["question"], "evidence": ev[0], "topical": top, "passage": p["context"],
                                "title": art["title"].replace("_", " ")})
    return out


def scifact(claims_file: str) -> list[dict]:
    """SciFact claims with SUPPORT rationales, asked as yes/no questions. claims_train.csv is
    the train side; claims_validation.csv (BEIR's test queries) the test side."""
    corpus = {}
    for line in (DATA / "beir-scifact" / "corpus.jsonl").open():
        d = json.loads(line)
        corpus[str(d["_id"])] = d
    out = []
    for r in csv.DictReader((DATA / "beir-scifact" / "scifact-original-claims" / claims_file).open()):
        if r["evidence_label"] != "SUPPORT" or r["evidence_doc_id"] not in corpus:
            continue
        doc = corpus[r["evidence_doc_id"]]
        sents = split_sentences(doc["text"])
        ev = [sents[i] for i in (int(x) for x in re.findall(r"\d+", r["evidence_sentences"])) if i < len(sents)]
        if not ev:
            continue
        claim = r["claim"].strip().rstrip(".")
        q = f"Is it true that {claim[0].lower() + claim[1:]}?"
        top = topical_for(q, sents, lambda s: s in ev)
        if top:
            out.append({"q": q, "evidence": ev[0], "topical": top, "passage": doc["text"], "title": doc.get("title", "")})
    return out


def docs(rows_file: Path) -> list[dict]:
    """Documentation pairs mined by mine_docs.py (held out of training): a question with its
    answering text (label 1) and a sibling entry of the same document (label 0)."""
    pos: dict[str, str] = {}
    neg: dict[str, str] = {}
    for line in Path(rows_file).open():
        r = json.loads(line)
        if r.get("task") != "answers" or "near" in r.get("kind", ""):
            continue
        title, _, text = r["b"].partition(" | ")
        (pos if r["label"] == 1 else neg).setdefault(r["a"], text or r["b"])
    return [{"q": q, "evidence": pos[q], "topical": neg[q], "passage": pos[q] + " " + neg[q], "title": ""}
            for q in pos if q in neg]
