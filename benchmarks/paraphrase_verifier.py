"""Does support verification read meaning and check facts? Sentence pairs from the realistic-model
harness (benchmarks/data/paraphrase_harness/, written for the project on train-side documents
only: the answer-policy calibration set and SQuAD 2.0 v2 articles 0–19), each judged against
the passage it would cite:

- the source's own sentence (a copy): must read supported;
- a faithful paraphrase (same facts, other words): must read supported;
- the paraphrase with one fact swapped (number, unit, date, name, code, option, frequency,
  negation): must read unsupported;
- an invented extra sentence the document does not state: must read unsupported;
- a near-miss question's confident answer from general knowledge, against the passage it cites:
  must read unsupported.

Halves: `fit` = calibration documents d01–d23 and SQuAD articles 0–9 (where any line is
chosen); `check` = d24–d45 and SQuAD articles 10–19 (reported, never tuned on); `confirm` = the 13
SQuAD v1.1-only articles (train side, squad11_confirm.jsonl, written by a helper and never read
here): where a rule found on the fit half must hold before it is kept.

    python benchmarks/paraphrase_verifier.py [--half fit|check|all] [--out F]

Prints, per half and per kind, the share read supported, and the swapped facts caught per kind.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import numpy as np
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_core.config import get_settings  # noqa: E402
from rag_core.embeddings import bundled_embedder  # noqa: E402
from rag_core.generation.calibrate import SET_PATH, load_set  # noqa: E402
from rag_core.grounding import verify as V  # noqa: E402
from rag_core.grounding.facts import missing as facts_missing  # noqa: E402
from rag_core.grounding.verify import Verifier  # noqa: E402
from rag_core.reader import get_reader  # noqa: E402

DATA = Path(__file__).parent / "data" / "paraphrase_harness"
SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad-dev" / "dev-v2.0-reconstructed.json"
SQUAD11 = SQUAD.with_name("dev-1.1-reconstructed.json")
QUOTES = False  # --quotes: each sentence comes with the source sentence its writer quoted (evidence spans)
KINDS = ("copy", "paraphrase", "swapped", "extra", "near_miss")
WANT_SUPPORTED = {"copy": True, "paraphrase": True, "swapped": False, "extra": False, "near_miss": False}


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of a Markdown document, split at its headings."""
    out, head, buf = [], "", []
    for line in text.splitlines():
        if re.match(r"#{1,6}\s", line):
            if "".join(buf).strip():
                out.append((head, "\n".join(buf).strip()))
            head, buf = line.lstrip("#").strip(), []
        else:
            buf.append(line)
    if "".join(buf).strip():
        out.append((head, "\n".join(buf).strip()))
    return out


def passage_of(sentence: str, secs: list[tuple[str, str]]) -> tuple[str, str]:
    for head, body in secs:
        if sentence[:60] in body:
            return head, body
    return secs[0]


def pairs(half: str) -> list[dict]:
    """{kind, claim, passage, heading, question, half, id, swap_kind?} for every judged sentence."""
    docs, _, _ = load_set(SET_PATH)
    text = {d["id"]: d["text"] for d in docs}
    title = {d["id"]: d["title"] for d in docs}
    out = []
    for name in ("calibration_a.jsonl", "calibration_b.jsonl", "squad_calib.jsonl", "squad11_confirm.jsonl"):
        path = DATA / name
        if not path.exists():
            continue
        squad = json.loads(SQUAD.read_text())["data"] if name == "squad_calib.jsonl" else None
        v11 = {a["title"]: a for a in json.loads(SQUAD11.read_text())["data"]} if name.startswith("squad11") else None
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if v11 is not None:
                h = "confirm"
                art = v11[r["title"]]
                secs = [(art["title"].replace("_", " "), art["paragraphs"][r["paragraph"]]["context"])]
            elif squad is not None:
                h = "fit" if r["article"] < 10 else "check"
                art = squad[r["article"]]
                head, body = art["title"].replace("_", " "), art["paragraphs"][r["paragraph"]]["context"]
                secs = [(head, body)]
            else:
                n = int(r["doc"][1:])
                h = "fit" if n <= 23 else "check"
                secs = sections(text[r["doc"]])
            if half != "all" and h != half:
                continue
            base = {"id": r["id"], "question": r["question"], "half": h, "quote": r.get("evidence") or r.get("cites")}
            if r["answerable"]:
                head, body = passage_of(r["evidence"], secs)
                # a chunk's heading is its document's title and section path, as the store keeps it
                head = " > ".join(x for x in (title.get(r.get("doc"), ""), head) if x)
                for kind, claim in (("copy", r["evidence"]), ("paraphrase", r["paraphrase"]),
                                    ("swapped", r["swapped"]), ("extra", r.get("extra"))):
                    if claim:
                        out.append({**base, "kind": kind, "claim": claim, "passage": body, "heading": head,
                                    "swap_kind": r.get("swap_kind") if kind == "swapped" else None})
            else:
                head, body = passage_of(r["cites"], secs)
                head = " > ".join(x for x in (title.get(r.get("doc"), ""), head) if x)
                out.append({**base, "kind": "near_miss", "claim": r["confident"], "passage": body, "heading": head})
    return out


def judge(verifier: Verifier, p: dict, llm=None) -> dict:
    """The verifier's verdict on one sentence citing its passage (each sentence of a two-sentence
    claim judged; the claim reads supported only when all of them do). With `llm`, the model then
    judges every sentence in one structured call (generation/judge.py, exactly as the chain calls
    it: quote checked against the passage, facts still veto, an unusable reply keeps the local labels)."""
    claims, _ = verifier.verify(_cited(p["claim"]), [p["passage"]], question=p["question"], titles=[p["heading"]],
                                evidence=[[p["quote"]]] if QUOTES and p.get("quote") else None)
    extra = {}
    if llm is not None and claims:
        from rag_core.generation.judge import judge as model_judge
        from rag_core.models import Chunk, ScoredChunk

        src = [ScoredChunk(Chunk(chunk_id="c1", doc_id=p["id"], kb_id="kb", text=p["passage"], section=p["heading"]), 1.0)]
        t = time.perf_counter()
        try:
            got = model_judge(llm, claims, src, None)
        except Exception as exc:  # noqa: BLE001 - a failed call is counted as unusable
            got, extra["error"] = None, str(exc)[:200]
        extra["judge_s"] = round(time.perf_counter() - t, 2)
        extra["judge"] = "unusable" if got is None else got.note
        extra["local_labels"] = [c.label for c in claims]
        extra["verdicts"] = got.verdicts if got is not None else None
        if got is not None:
            claims = got.claims
    labels = [c.label for c in claims]
    return {"labels": labels, "scores": [c.score for c in claims],
            "supported": bool(labels) and all(x == "supported" for x in labels), **extra}


def _cited(text: str) -> str:
    """Every sentence of the claim cites passage [1], as the harness's model writes it."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z`\"])", text.strip())
    return " ".join(re.sub(r"([.!?])$", r" [1]\1", s) if re.search(r"[.!?]$", s) else s + " [1]" for s in parts)


def dump_features(verifier: Verifier, reader, embed, ps: list[dict], out: str) -> None:
    """Per written sentence (copies left out): the reader's best support over the passage's
    windows, the best cosine, the weighted term share, and whether a fact is missing: what the
    meaning line is fitted on (fit half) and checked with (check half)."""
    rows = []
    for p in ps:
        if p["kind"] == "copy":
            continue
        for sent in re.split(r"(?<=[.!?])\s+(?=[A-Z`\"])", p["claim"].strip()):
            sents = verifier._sentences(p["passage"])
            wins = verifier._windows(sents)
            r = float(np.max(reader.supports([sent] * len(wins), wins)))
            vec = embed([sent] + wins)
            cos = float(np.max(vec[1:] @ vec[0]))
            ov = verifier._term_share(sent, f"{p['heading']} {p['passage']}")  # idf None here, as fitted
            best = wins[int(np.argmax(vec[1:] @ vec[0]))]
            lost = facts_missing(sent, p["passage"], p["heading"], "en", best)
            rows.append({"kind": p["kind"], "half": p["half"], "id": p["id"], "reader": round(r, 4),
                         "cosine": round(cos, 4), "overlap": round(ov, 4), "facts": [f.kind for f in lost],
                         "sentence": sent})
    Path(out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} rows -> {out}")


def fit_meaning(verifier: Verifier, reader, embed) -> None:
    """The meaning line (verify.MEANING): a logistic regression on the fit half's written
    sentences whose facts all match, faithful paraphrases (1) against invented extra sentences,
    swapped-fact sentences the fact check missed and general-knowledge answers (0); L2 1e-3,
    plain gradient descent (no library beyond numpy)."""
    tmp = Path("/tmp/paraphrase_fit_features.jsonl")
    dump_features(verifier, reader, embed, pairs("fit"), str(tmp))
    rows = [json.loads(x) for x in tmp.read_text().splitlines()]
    rows = [r for r in rows if not r["facts"]]
    X = np.array([[1.0, r["reader"], r["cosine"], r["overlap"]] for r in rows])
    y = np.array([1.0 if r["kind"] == "paraphrase" else 0.0 for r in rows])
    w = np.zeros(4)
    for _ in range(30000):
        p = 1 / (1 + np.exp(-X @ w))
        w -= (X.T @ (p - y) / len(y) + 1e-3 * np.r_[0, w[1:]])
    print(json.dumps({"bias": round(w[0], 3), "reader": round(w[1], 3), "cosine": round(w[2], 3),
                      "overlap": round(w[3], 3), "rows": len(rows)}))


def report(rows: list[dict]) -> dict:
    out: dict = {}
    for half in sorted({r["half"] for r in rows}):
        rs = [r for r in rows if r["half"] == half]
        per = {}
        for kind in KINDS:
            ks = [r for r in rs if r["kind"] == kind]
            if ks:
                per[kind] = {"n": len(ks), "read_supported": round(sum(r["supported"] for r in ks) / len(ks), 4),
                             "read_unsupported": round(sum("unsupported" in r["labels"] for r in ks) / len(ks), 4),
                             "score_050": round(sum(min(r["scores"] or [0]) >= 0.5 for r in ks) / len(ks), 4)}
        by_swap = defaultdict(list)
        for r in rs:
            if r["kind"] == "swapped":
                by_swap[r["swap_kind"]].append(not r["supported"])
        per["swapped_caught_by_kind"] = {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_swap.items())}
        out[half] = per
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--half", choices=("fit", "check", "confirm", "all"), default="all")
    ap.add_argument("--out", default=None)
    ap.add_argument("--misses", type=int, default=0, help="print this many misses per kind")
    ap.add_argument("--variant", choices=("reader", "facts", "full"), default="full",
                    help="reader: the reader's support alone (before issue 49); facts: plus the facts that must "
                         "match; full: plus the meaning line (the shipped verifier)")
    ap.add_argument("--judge", default=None, help="a local model judges too: a GGUF path, or 0.5b / 1.5b "
                    "(benchmarks/qwen_gguf.py)")
    ap.add_argument("--quotes", action="store_true", help="each sentence with its quoted evidence: the harness's "
                    "evidence sentence (a near-miss answer's: the sentence it leans on), as an evidence span")
    ap.add_argument("--per-kind", type=int, default=0, help="only the first N pairs of each kind and half")
    ap.add_argument("--fit", action="store_true", help="fit the meaning line on the fit half's features and print it")
    ap.add_argument("--features", default=None, help="write (kind, half, reader, cosine, overlap, facts) rows here")
    args = ap.parse_args()
    global QUOTES
    QUOTES = args.quotes
    settings = get_settings("/tmp/gw-paraphrase-verifier")
    reader = get_reader(settings.reader_threads)
    embed = bundled_embedder(settings).embed_array
    if args.variant == "reader":
        V.FACT_MISSING = 1.0
    if args.variant != "full":
        V.MEANING = {k: 0.0 for k in V.MEANING}
        embed = None
    verifier = Verifier(reader=reader, embed=embed)
    if args.fit:
        return fit_meaning(verifier, reader, bundled_embedder(settings).embed_array)
    if args.features:
        return dump_features(verifier, reader, bundled_embedder(settings).embed_array, pairs(args.half), args.features)
    llm = None
    if args.judge:
        from benchmarks.qwen_gguf import MODELS, gguf
        from rag_core.generation.llm import make_chat_model

        path = gguf(args.judge) if args.judge in MODELS else Path(args.judge)
        from langchain_core.output_parsers import StrOutputParser

        llm = make_chat_model(get_settings("/tmp/gw-paraphrase-verifier", llm_gguf=path, llm_threads=2,
                                           llm_ctx=4096, llm_timeout=600, llm_max_tokens=400)) | StrOutputParser()
    ps = pairs(args.half)
    if args.per_kind:
        seen: Counter = Counter()
        ps = [p for p in ps if (seen.update([(p["half"], p["kind"])]) or seen[p["half"], p["kind"]] <= args.per_kind)]
    rows = []
    t = time.perf_counter()
    for p in ps:
        rows.append({**p, **judge(verifier, p, llm)})
        if llm is not None:
            print(p["kind"], rows[-1]["labels"], rows[-1].get("judge"), rows[-1].get("judge_s"), flush=True)
    summary = {"pairs": len(rows), "seconds": round(time.perf_counter() - t, 1), "by_half": report(rows),
               "counts": Counter(r["kind"] for r in rows)}
    print(json.dumps(summary, indent=1))
    if args.misses:
        for kind in KINDS:
            bad = [r for r in rows if r["kind"] == kind and r["supported"] != WANT_SUPPORTED[kind]]
            for r in bad[: args.misses]:
                print(f"[{kind}] {r['labels']} {r['scores']} :: {r['claim']}\n    src: {r['passage'][:200]}")
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


if __name__ == "__main__":
    main()
