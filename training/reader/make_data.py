"""Training pairs for the reader/judge cross-encoder, from the TRAIN side only.

    python training/reader/make_data.py --out training/out/pairs      # ~1 min, runtime env

Train side (../shared/data/squad-dev/SPLIT.md): SQuAD v2.0 dev articles 0–19 and every
v1.1 dev article whose title is not one of the 15 test titles; SciFact *train* claims.
The last CALIB_ARTICLES of the v2.0 train articles are held out of training: the model's
probabilities are calibrated and the abstention threshold chosen on them (still train side).

One model, three tasks, told apart by a prefix on the first segment (rag_core/reader.py
builds the same inputs at run time):
- "answers: Q" + "TITLE | SENTENCE" → does this sentence answer the question?
  positives: the sentence holding a gold answer; negatives, closest first: the other
  sentences of the paragraph ranked by idf-weighted overlap with the question; the best-
  overlapping sentences for SQuAD-2's real unanswerable questions; and near-miss questions
  synthesised from answerable ones (entity / number swapped, antonym, negation, an
  impossible condition) paired with the gold sentence — the way SQuAD-2's unanswerable
  questions were written, many more than the ~3k real ones.
- "supports: CLAIM" + "SOURCE SENTENCES" → do the sources state the claim?
  positives: the gold sentence and the question turned into a statement with its answer;
  negatives: the same with the answer swapped for another span of the same kind from the
  paragraph (number for number, name for name), and the claim against a sentence that
  does not hold it. SciFact train: claims vs their rationale sentences (SUPPORT 1 /
  CONTRADICT 0).
- "relevant: QUERY" + "TITLE | PASSAGE" → is the passage relevant (SciFact train qrels,
  BM25 hard negatives).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from rag_core.reader import answer_input  # noqa: E402
from rag_core.text.analysis import analyze  # noqa: E402
from rag_core.text.sentences import split_sentences  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
TEST_TITLES = set(
    "Harvard_University Jacksonville,_Florida Economic_inequality University_of_Chicago Yuan_dynasty Immune_system "
    "Intergovernmental_Panel_on_Climate_Change Prime_number Rhine Scottish_Parliament Islamism Imperialism Warsaw "
    "French_and_Indian_War Force".split()
)

# ---- nothing that evaluates the model may train it -------------------------------------
# The files under ../shared/data this script may read: the SQuAD dev files hold both sides
# of the split, so each article is checked by title as well (test titles refused); the
# SciFact corpus is shared by the train and test claims, which are in separate files.
TRAIN_SIDE_FILES = {
    "squad-dev/dev-v2.0-reconstructed.json",
    "squad-dev/dev-1.1-reconstructed.json",
    "beir-scifact/corpus.jsonl",
    "beir-scifact/scifact-original-claims/claims_train.csv",
}
# The outside checks: R's own manuals (Debian's r-doc-pdf, benchmarks/manual_questions.py)
# and gnuplot's documentation; and the benchmarks' own question files.
_R = r"(?<![a-z0-9])"  # "r" as a word of its own: not the end of "other", "her-", "user"
_EVALUATION_NAMES = re.compile(
    r"r-project|gnuplot|manual_questions|benchmarks/(?:data|results)/|fullrefman"
    + _R + r"r[ _-]?manuals?(?![a-z])|" + _R + r"r-doc|share/r/doc"
    + "|" + _R + r"r-(?:intro|data|admin|lang|exts|ints)(?![a-z])"
    + r"|an introduction to r(?![a-z])|" + _R + r"r (?:data import|installation and administration"
    r"|language definition|internals)|writing r extensions",
    re.I,
)


# benchmarks/data/EVALUATION_DOCUMENTS.txt (issue 25): the programs whose documentation the
# benchmarks read. "package P": any path with a component P or P_<version>... (a .deb);
# "program X": any path or title naming X as a word (case-sensitive for one letter: "R").
EVALUATION_DOCUMENTS = ROOT / "benchmarks" / "data" / "EVALUATION_DOCUMENTS.txt"


def _listed_evaluation_documents(path: Path = EVALUATION_DOCUMENTS) -> list[tuple[str, re.Pattern]]:
    out = []
    for line in path.read_text().splitlines():
        kind, _, name = line.split("#", 1)[0].strip().partition(" ")
        name = name.strip()
        if kind == "package" and name:
            out.append((line.strip(), re.compile(rf"(?:^|/){re.escape(name.lower())}(?:/|_|$)")))
        elif kind == "program" and name:
            word = rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])"
            out.append((line.strip(), re.compile(word, 0 if len(name) == 1 else re.I)))
    return out


_LISTED = _listed_evaluation_documents()


def assert_not_evaluation(source_name_or_path) -> None:
    """Refuse anything an evaluation uses, with an AssertionError (raised, so `python -O`
    keeps it): the documentation of every program and package in
    benchmarks/data/EVALUATION_DOCUMENTS.txt (R, gnuplot, Bash, Asymptote, Maxima: by path,
    file name or title), R's manuals by name, the benchmarks' data, a SQuAD test article
    (its title as in the file or with spaces, alone or after a path's '#', ':' or '/'), and
    any file under ../shared/data that is not one of TRAIN_SIDE_FILES."""
    raw = str(source_name_or_path).strip()
    low = raw.replace("\\", "/").lower()
    if _EVALUATION_NAMES.search(low):
        raise AssertionError(f"refusing evaluation material (R / gnuplot documentation, benchmark data): {raw}")
    for entry, rx in _LISTED:
        if rx.search(low if entry.startswith("package") else raw.replace("\\", "/")):
            raise AssertionError(f"refusing evaluation material ({entry}, benchmarks/data/EVALUATION_DOCUMENTS.txt): {raw}")
    for name in {raw, re.split(r"[#:/\\]", raw)[-1]}:
        if name.strip().replace(" ", "_") in TEST_TITLES:
            raise AssertionError(f"refusing a SQuAD test article (../shared/data/squad-dev/SPLIT.md): {raw}")
    marker = "shared/data/"
    if marker in low:
        rel = low.split(marker, 1)[1].split("#", 1)[0].strip("/")
        if rel not in TRAIN_SIDE_FILES:
            raise AssertionError(f"refusing a file that is not on the train side of the splits: {raw}")


CALIB_ARTICLES = 3  # v2.0 train articles 17, 18, 19: calibration and threshold choice only

ANTONYMS = dict(
    p.split("/")
    for p in (
        "first/last largest/smallest biggest/smallest highest/lowest most/least before/after early/late earliest/latest "
        "older/younger oldest/youngest north/south east/west increase/decrease increased/decreased rise/fall "
        "won/lost win/lose major/minor inside/outside maximum/minimum longest/shortest long/short upper/lower "
        "begin/end began/ended start/end started/ended more/less greater/smaller best/worst positive/negative "
        "private/public internal/external strong/weak strongest/weakest large/small high/low top/bottom "
        "ancient/modern northern/southern eastern/western above/below open/closed opened/closed rich/poor "
        "success/failure successful/unsuccessful allowed/forbidden legal/illegal same/different accept/reject "
        "accepted/rejected support/oppose supported/opposed primary/secondary common/rare fastest/slowest "
        "heaviest/lightest deepest/shallowest founded/dissolved born/died birth/death entered/left import/export "
        "imports/exports gain/loss".split()
    )
)
ANTONYMS.update({v: k for k, v in list(ANTONYMS.items())})
AUX = re.compile(r"\b(is|was|were|are|did|does|do|can|could|has|had|have|will|would)\b", re.I)
CAP = re.compile(r"(?<!^)\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)")
NUM = re.compile(r"\b\d[\d,.]*\b")
CONDITIONS = ["in 1850", "after 2050", "before the Roman era", "on the Moon", "in Antarctica", "in the 12th century",
              "according to Napoleon", "in 2099", "during the Bronze Age", "underwater"]


def norm_ws(s: str) -> str:
    return " ".join(s.split())


class Idf:
    def __init__(self, texts):
        self.df = Counter()
        for t in texts:
            self.df.update(set(analyze(t)))
        self.n = len(texts)

    def __call__(self, term):
        return math.log(1 + (self.n - self.df[term] + 0.5) / (self.df[term] + 0.5))


def overlap(idf: Idf, q: str, s: str) -> float:
    qt = list(dict.fromkeys(analyze(q)))
    if not qt:
        return 0.0
    st = set(analyze(s))
    tot = sum(idf(t) for t in qt) or 1.0
    return sum(idf(t) for t in qt if t in st) / tot


def kind(span: str) -> str:
    if re.search(r"\d", span):
        return "num"
    if span[:1].isupper():
        return "ent"
    return "other"


def swap_candidates(answer: str, paragraph: str, answers_here: list[str]) -> list[str]:
    """Spans of the same kind as the answer, from the paragraph, that are not the answer."""
    k = kind(answer)
    pool = [a for a in answers_here if kind(a) == k]
    if k == "num":
        pool += NUM.findall(paragraph)
    elif k == "ent":
        pool += CAP.findall(paragraph)
    low = answer.lower()
    return [p for p in dict.fromkeys(pool) if p.lower() not in low and low not in p.lower() and len(p) > 1]


def perturb(q: str, sent: str, article_caps: list[str], rng: random.Random) -> tuple[str, str] | None:
    """A near-miss of q that `sent` no longer answers (SQuAD-2's ways of writing them)."""
    ops = []
    caps = [c for c in CAP.findall(q) if c in sent]
    others = [c for c in article_caps if c not in sent and c not in q]
    if caps and others:
        ops.append("entity")
    nums = [n for n in NUM.findall(q) if n in sent]
    if nums:
        ops.append("number")
    words = re.findall(r"\b\w+\b", q)
    ants = [w for w in words if w.lower() in ANTONYMS]
    if ants:
        ops.append("antonym")
    if AUX.search(q) and (not ops or rng.random() < 0.4):
        ops.append("negation")  # kept rarer: "not" must not become a shortcut for "unanswerable"
    if not ops:
        if rng.random() < 0.5:
            return None
        ops.append("condition")  # crude; only where nothing subtler applies
    op = rng.choice(ops)
    if op == "entity":
        c = rng.choice(caps)
        return q.replace(c, rng.choice(others), 1), op
    if op == "number":
        n = rng.choice(nums)
        digits = n.replace(",", "")
        try:
            v = int(float(digits))
        except ValueError:
            return None
        new = str(v + rng.choice([-11, -7, -3, -2, 2, 3, 5, 13]) if v > 20 else v + rng.choice([1, 2, 3]))
        return q.replace(n, new, 1), op
    if op == "antonym":
        w = rng.choice(ants)
        rep = ANTONYMS[w.lower()]
        rep = rep.capitalize() if w[0].isupper() else rep
        return re.sub(rf"\b{re.escape(w)}\b", rep, q, count=1), op
    if op == "negation":
        m = AUX.search(q)
        return q[: m.end()] + " not" + q[m.end():], op
    stem = q.rstrip(" ?")
    return f"{stem} {rng.choice(CONDITIONS)}?", op


def train_file(*parts: str) -> Path:
    """A file under ../shared/data, refused unless it is on the train side."""
    path = SHARED.joinpath(*parts)
    assert_not_evaluation(path)
    return path


def squad_articles():
    v2 = json.loads(train_file("squad-dev", "dev-v2.0-reconstructed.json").read_text())["data"]
    v1 = json.loads(train_file("squad-dev", "dev-1.1-reconstructed.json").read_text())["data"]
    v2_train = v2[:20]
    assert not any(a["title"] in TEST_TITLES for a in v2_train)
    v2_titles = {a["title"] for a in v2}
    calib = v2_train[20 - CALIB_ARTICLES:]
    train = v2_train[: 20 - CALIB_ARTICLES]
    calib_titles = {a["title"] for a in calib}
    # v1.1 articles that v2.0 does not have (its other shared articles are the v2 ones,
    # whose answerable questions v2 carries too): more answerable questions.
    train += [a for a in v1 if a["title"] not in TEST_TITLES and a["title"] not in v2_titles]
    # v1.1 versions of the v2 train articles hold answerable questions v2 dropped
    v2_qtexts = {qa["question"].strip() for a in v2_train for p in a["paragraphs"] for qa in p["qas"]}
    extra = []
    for a in v1:
        if a["title"] in TEST_TITLES or a["title"] in calib_titles or a["title"] not in v2_titles:
            continue
        paras = []
        for p in a["paragraphs"]:
            qas = [qa for qa in p["qas"] if qa["question"].strip() not in v2_qtexts]
            if qas:
                paras.append({"context": p["context"], "qas": qas})
        if paras:
            extra.append({"title": a["title"], "paragraphs": paras})
    train += extra
    for a in train + calib:
        assert_not_evaluation(a["title"])
    return train, calib


def answers_text(title: str, s: str, sents: list[str], share: float, rng: random.Random) -> str:
    """An `answers` row's second text: with probability `share` the sentence read with its
    neighbours in `sents` (rag_core.reader.answer_input), else alone ("TITLE | SENTENCE")."""
    if share and s in sents and rng.random() < share:
        i = sents.index(s)
        return answer_input(title, s, sents[i - 1] if i else "", sents[i + 1] if i + 1 < len(sents) else "")
    return f"{title} | {s}"


def squad_pairs(articles, rng: random.Random, synth_per_q: float = 1.0, context_share: float = 0.0):
    """`context_share`: the share of `answers` rows whose sentence is read with its neighbours
    (rag_core.reader.answer_input); the rest read it alone, as the verifier asks."""
    idf = Idf([p["context"] for a in articles for p in a["paragraphs"]])
    out = []
    for art in articles:
        title = art["title"].replace("_", " ")
        article_caps = list(dict.fromkeys(c for p in art["paragraphs"] for c in CAP.findall(p["context"])))
        for p in art["paragraphs"]:
            ctx = p["context"]
            sents = [norm_ws(s) for s in split_sentences(ctx)]
            sents = [s for s in sents if len(s) >= 10] or [norm_ws(ctx)]
            answers_here = list(dict.fromkeys(a["text"] for qa in p["qas"] for a in qa.get("answers", [])))

            def b_of(s: str, title=title, sents=sents) -> str:
                return answers_text(title, s, sents, context_share, rng)

            for qa in p["qas"]:
                q = qa["question"].strip()
                golds = [a["text"] for a in qa.get("answers", [])]
                ranked = sorted(sents, key=lambda s: -overlap(idf, q, s))
                if qa.get("is_impossible") or not golds:
                    for s in ranked[:3]:
                        out.append(("answers", q, b_of(s), 0, "unanswerable"))
                    continue
                gold_sents = [s for s in sents if any(g in s for g in golds)]
                if not gold_sents:
                    continue  # answer spans a sentence boundary
                gs = gold_sents[0]
                out.append(("answers", q, b_of(gs), 1, "gold"))
                for s in [s for s in ranked if s not in gold_sents][:1]:
                    out.append(("answers", q, b_of(s), 0, "other_sentence"))
                if rng.random() < synth_per_q:
                    pert = perturb(q, gs, article_caps, rng)
                    if pert and pert[0] != q:
                        out.append(("answers", pert[0], b_of(gs), 0, f"nearmiss_{pert[1]}"))
                # supports: statement form and verbatim, each vs its swap
                g = golds[0]
                cands = swap_candidates(g, ctx, answers_here)
                stem = q.rstrip(" ?")
                src = gs
                idx = sents.index(gs)
                if rng.random() < 0.5 and idx > 0:
                    src = f"{sents[idx - 1]} {gs}"  # the evidence is often read with its neighbour
                out.append(("supports", f"{stem}: {g}.", src, 1, "statement"))
                if cands:
                    sw = rng.choice(cands)
                    out.append(("supports", f"{stem}: {sw}.", src, 0, "statement_swap"))
                    if g in gs and rng.random() < 0.5:
                        out.append(("supports", gs.replace(g, sw, 1), src, 0, "sentence_swap"))
                        out.append(("supports", gs, src, 1, "sentence"))
                other = [s for s in ranked if s not in gold_sents]
                if other and rng.random() < 0.5:
                    out.append(("supports", f"{stem}: {g}.", other[0], 0, "wrong_source"))
    return out


def scifact_pairs(rng: random.Random):
    corpus = {}
    for line in train_file("beir-scifact", "corpus.jsonl").open():
        d = json.loads(line)
        corpus[d["_id"]] = d
    rows = list(csv.DictReader(train_file("beir-scifact", "scifact-original-claims", "claims_train.csv").open()))
    out = []
    # BM25-ish hard negatives: idf-weighted overlap over the whole corpus via an inverted index
    docs = list(corpus.values())
    idf = Idf([f"{d['title']} {d['text']}" for d in docs])
    inv: dict[str, set[str]] = {}
    for d in docs:
        for t in set(analyze(f"{d['title']} {d['text']}")):
            inv.setdefault(t, set()).add(d["_id"])
    by_claim: dict[str, dict] = {}
    for r in rows:
        c = by_claim.setdefault(r["claim"], {"docs": set(), "ev": []})
        for did in re.findall(r"\d+", r["cited_doc_ids"] or ""):
            c["docs"].add(str(did))
        if r["evidence_doc_id"]:
            c["ev"].append((r["evidence_doc_id"], r["evidence_label"], [int(x) for x in re.findall(r"\d+", r["evidence_sentences"] or "")]))
    for claim, info in by_claim.items():
        relevant = {d for d, _, _ in info["ev"]} or info["docs"]
        qt = list(dict.fromkeys(analyze(claim)))
        score = Counter()
        for t in qt:
            w = idf(t)
            for did in inv.get(t, ()):
                score[did] += w
        hard = [d for d, _ in score.most_common(12) if d not in relevant][:4]
        for did in relevant:
            if did in corpus:
                d = corpus[did]
                out.append(("relevant", claim, f"{d['title']} | {d['text']}", 1, "scifact_rel"))
        for did in hard:
            d = corpus[did]
            out.append(("relevant", claim, f"{d['title']} | {d['text']}", 0, "scifact_hard"))
        for did, label, sent_idx in info["ev"]:
            if did not in corpus or not sent_idx:
                continue
            sents = split_sentences(corpus[did]["text"])
            ev = " ".join(sents[i] for i in sent_idx if i < len(sents))
            if ev:
                out.append(("supports", claim, ev, 1 if label == "SUPPORT" else 0, f"scifact_{label.lower()}"))
        if not info["ev"]:
            for did in list(info["docs"])[:1]:
                if did in corpus:
                    sents = split_sentences(corpus[did]["text"])
                    best = max(sents, key=lambda s: overlap(idf, claim, s)) if sents else ""
                    if best:
                        out.append(("supports", claim, best, 0, "scifact_nei"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "training" / "out" / "pairs"))
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--context-share", type=float, default=0.0,
                    help="share of answers rows read with their neighbouring sentences (issue 25 context reader)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train_arts, calib_arts = squad_articles()
    train = squad_pairs(train_arts, rng, context_share=args.context_share) + scifact_pairs(rng)
    calib = squad_pairs(calib_arts, random.Random(args.seed + 1), context_share=args.context_share)
    rng.shuffle(train)
    for name, rows in (("train", train), ("calib", calib)):
        with (out / f"{name}.jsonl").open("w") as fh:
            for task, a, b, y, src in rows:
                fh.write(json.dumps({"task": task, "a": a, "b": b, "label": y, "kind": src}) + "\n")
        c = Counter((r[0], r[4], r[3]) for r in rows)
        print(name, len(rows), json.dumps({f"{k[0]}/{k[1]}/{k[2]}": v for k, v in sorted(c.items())}))


if __name__ == "__main__":
    main()
