"""How soon an offline answer starts, and where its time goes (issue 52, parts 1 and 2).

    python benchmarks/first_words.py --data-dir /tmp/gw-fw --out benchmarks/results/first_words.json
    python benchmarks/first_words.py --data-dir /tmp/gw-fw --code /work/before --out ...before.json
    python benchmarks/first_words.py --data-dir /tmp/gw-fw100k --pad-to 100000 --out ...100k.json

The knowledge base: three Debian manuals, R-intro, R-FAQ (r-doc-pdf) and gnuplot (gnuplot-doc),
about 1,700 chunks (see benchmarks/manual_questions.py for the pinned `apt-get download` line;
nothing is copied into the repository). `--pad-to N` adds synthetic chunks to the same knowledge
base until it holds N (benchmarks/scale.py's passages from ../shared/data, their vectors
perturbed), so the manuals' questions are searched among N chunks.

The questions: every question of benchmarks/data/manual_questions_v2.jsonl on R-intro or gnuplot
and all of benchmarks/data/r_manuals_questions.jsonl (answerable and near-miss alike), asked
one after another through `Workspace.answers.stream` (what the chat page and the API's stream
call), with the answer cache off. Per question: *first words* (the first "token" event: text
the user reads), *whole answer* (the final "answer" event, verified and decided), and the
chain's own per-stage timings (`Answer.timings_ms`). With `--cprofile` the run is profiled and
the functions with the most cumulative time are listed (slower: for finding, not for figures).

`--code DIR` imports rag_core from another checkout (a `git worktree` at the commit before a
change): the same script, questions and folder measure before and after. Every answer's text,
abstention and citations are written out (`answers`), so a faster version can be checked for
giving the same answers (`--compare OTHER.json`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANUALS = Path("/tmp/manuals/usr/share/doc")
PDFS = [MANUALS / "r-doc-pdf/manual/R-intro.pdf", MANUALS / "r-doc-pdf/manual/R-FAQ.pdf",
        MANUALS / "gnuplot/gnuplot.pdf"]
KB = "manuals3"


def questions() -> list[str]:
    qs = [r["question"] for r in map(json.loads, (HERE / "data/manual_questions_v2.jsonl").open())
          if r["manual"] in ("R-intro.pdf", "gnuplot.pdf")]
    qs += [r["question"] for r in map(json.loads, (HERE / "data/r_manuals_questions.jsonl").open())]
    return qs


def pct(xs: list[float], p: float) -> float | None:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 1) if xs else None


def build(ws, pdfs: list[Path], pad_to: int) -> int:
    from rag_core.access import Caller

    op = Caller.operator()
    if KB not in {k.name for k in ws.list_kbs(caller=op)}:
        ws.create_kb(KB, caller=op)
        stats = ws.ingest(KB, pdfs, caller=op)
        print(f"ingested {stats.documents} documents, {stats.chunks} chunks", file=sys.stderr, flush=True)
    chunks = ws.kb_counts(KB, caller=op)[1]
    if pad_to and ws.store.count() < pad_to:
        pad(ws, pad_to - ws.store.count())
    return chunks


def pad(ws, n: int) -> None:
    """n synthetic chunks in the manuals' knowledge base, as registered documents of 100 chunks."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from scale import DOC, NOISE, cached_embeddings, chunk_text

    from rag_core.access import Caller
    from rag_core.models import Chunk

    kb = ws.resolve_kbs([KB], caller=Caller.operator())[0]
    texts, base = cached_embeddings(Path.home() / ".cache" / "groundwork-scale")
    rng = np.random.default_rng(0)
    start = ws.store.count()
    for d in range(start, start + n, DOC):
        ids = range(d, min(start + n, d + DOC))
        doc = f"pad{d}"
        made = [chunk_text(i, texts) for i in ids]  # (title, text)
        chunks = [Chunk(chunk_id=f"{kb.kb_id}/{doc}#{i - d}", doc_id=doc, kb_id=kb.kb_id, text=text, title=title,
                        source=f"{doc}.txt", ordinal=i - d) for i, (title, text) in zip(ids, made)]
        v = base[[i % len(texts) for i in ids]] + rng.normal(scale=NOISE, size=(len(chunks), base.shape[1]))
        ws.store.add_chunks(chunks, (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32))
    print(f"padded to {ws.store.count()} chunks", file=sys.stderr, flush=True)


def run(ws, qs: list[str], cprofile: bool) -> dict:
    from rag_core.access import Caller

    op = Caller.operator()
    ws.answers.answer(ws.answer_request([KB], qs[0], caller=op, no_cache=True))  # warm-up, as after the first render
    first, whole, stages, answers = [], [], {}, []
    prof = None
    if cprofile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    for q in qs:
        req = ws.answer_request([KB], q, caller=op, no_cache=True)
        t = time.perf_counter()
        got_first, answer = None, None
        for ev in ws.answers.stream(req):
            if ev["type"] == "token" and got_first is None and ev["text"].strip():
                got_first = time.perf_counter() - t
            if ev["type"] == "answer":
                answer = ev["answer"]
        total = time.perf_counter() - t
        whole.append(total * 1000)
        # an abstention has no words streamed: its first words are the refusal, shown at the end
        first.append((got_first if got_first is not None else total) * 1000)
        for k, v in answer.timings_ms.items():
            if isinstance(v, (int, float)):
                stages.setdefault(k, []).append(v)
        answers.append({"question": q, "abstained": answer.abstained,
                        "text": hashlib.sha256(answer.text.encode()).hexdigest()[:16],
                        "citations": sorted({f"{c.source}#{c.page}" for c in answer.citations}),
                        "scores": [round(answer.grounding_score, 3), answer.answers_question and round(answer.answers_question, 3),
                                   [c.label for c in answer.claims]],
                        "first_ms": round(first[-1], 1), "whole_ms": round(total * 1000, 1)})
    out = {"questions": len(qs),
           "first_words_ms": {"p50": pct(first, 50), "p95": pct(first, 95), "max": pct(first, 100)},
           "whole_answer_ms": {"p50": pct(whole, 50), "p95": pct(whole, 95), "max": pct(whole, 100)},
           "abstained": sum(a["abstained"] for a in answers),
           "stages_ms": {k: {"p50": pct(v, 50), "p95": pct(v, 95), "n": len(v)} for k, v in sorted(stages.items())},
           "answers": answers}
    if prof is not None:
        import io
        import pstats

        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(45)
        out["cprofile_top"] = s.getvalue().splitlines()
    return out


def compare(mine: dict, other: dict) -> dict:
    a = {r["question"]: r for r in mine["answers"]}
    b = {r["question"]: r for r in other["answers"]}
    both = [q for q in a if q in b]
    return {"questions": len(both),
            "same_text": sum(a[q]["text"] == b[q]["text"] for q in both),
            "same_abstention": sum(a[q]["abstained"] == b[q]["abstained"] for q in both),
            "same_citations": sum(a[q]["citations"] == b[q]["citations"] for q in both),
            "same_scores_and_labels": sum(a[q].get("scores") == b[q].get("scores") for q in both)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--code", type=Path, default=HERE.parent, help="the checkout whose rag_core is measured")
    ap.add_argument("--pdfs", nargs="+", type=Path, default=PDFS)
    ap.add_argument("--pad-to", type=int, default=0)
    ap.add_argument("--n", type=int, default=0, help="the first n questions (default all)")
    ap.add_argument("--cprofile", action="store_true")
    ap.add_argument("--compare", type=Path, help="another run's JSON: how many answers are the same")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    sys.path.insert(0, str(a.code.resolve()))
    os.environ.setdefault("RAG_ANSWER_CACHE", "false")
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    t = time.perf_counter()
    ws = Workspace(get_settings(a.data_dir))
    try:
        manual_chunks = build(ws, a.pdfs, a.pad_to)
        _ = ws.answers
        load_s = time.perf_counter() - t
        qs = questions()[: a.n or None]
        res = {"code": str(a.code.resolve()), "commit": os.popen(f"git -C {a.code} rev-parse --short HEAD").read().strip(),
               "kb_chunks": ws.store.count(), "manual_chunks": manual_chunks, "mode": ws.answers.mode,
               "workspace_load_s": round(load_s, 2), **run(ws, qs, a.cprofile),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the end"}
    finally:
        ws.close()
    if a.compare:
        res["same_as"] = {"file": str(a.compare), **compare(res, json.loads(a.compare.read_text()))}
    text = json.dumps(res, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k not in ("answers", "cprofile_top")}, indent=1))
    if a.out:
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
