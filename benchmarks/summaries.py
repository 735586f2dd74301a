"""Whole-document summaries against the summaries documents carry themselves.

Documents:
- SQuAD v2.0 dev articles (Wikipedia): the lead paragraph is the article's own summary; it is
  removed, and the rest is what is read. Calib = articles 0–19, test = 20–34 (SPLIT.md).
- Manuals with an introduction chapter (R's manuals, bash's and gnuplot's, from a data folder
  that holds them): the first chapter titled Introduction / Overview / Preface is the reference;
  the other chapters are read. An outside check: nothing is chosen on them.

Measures:
- key-term coverage: the reference's 10 most characteristic terms (tf × idf over the set's
  documents, stemmed, stop words out) found in the summary;
- supported: the share of the summary's sentences the verifier finds backed by their citations;
- time to the first words (the chain's first token) and in all.

    python benchmarks/summaries.py methods --split calib          # outline methods, pure functions
    python benchmarks/summaries.py methods --split test
    python benchmarks/summaries.py manuals --data-dir /tmp/gw-manuals-v4
    python benchmarks/summaries.py chain --split test --data-dir D [--llm 0.5b --limit 5]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_core.generation import document_reader as docread  # noqa: E402
from rag_core.models import Chunk  # noqa: E402
from rag_core.text.analysis import analyze  # noqa: E402

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad-dev" / "dev-v2.0-reconstructed.json"
KEY_TERMS = 10
_INTRO = re.compile(r"^\s*(\d+\s+|chapter \d+\.?\s*)?(introduction|overview|preface)\b", re.I)


def squad_articles(split: str) -> list[tuple[str, str, list[str]]]:
    """(title, lead paragraph, the other paragraphs) per article of the split."""
    data = json.loads(SQUAD.read_text())["data"]
    rows = data[:20] if split == "calib" else data[20:35]
    return [(a["title"], a["paragraphs"][0]["context"], [p["context"] for p in a["paragraphs"][1:]]) for a in rows]


def chunks_of(title: str, paragraphs: list[str]) -> list[Chunk]:
    """The article as the chunker would cut it: ~1000-character chunks of whole paragraphs."""
    out, cur = [], ""
    for p in paragraphs:
        if cur and len(cur) + len(p) > 1000:
            out.append(cur)
            cur = ""
        cur = f"{cur}\n\n{p}" if cur else p
    if cur:
        out.append(cur)
    return [Chunk(chunk_id=f"{title}#{i}", doc_id=title, kb_id="k", text=t, title=title, source=f"{title}.md",
                  ordinal=i, language="en") for i, t in enumerate(out)]


def key_terms(reference: str, df: Counter, n_docs: int) -> list[str]:
    tf = Counter(analyze(reference, "en"))
    score = {t: c * math.log(n_docs / df[t]) for t, c in tf.items() if df.get(t) and df[t] < n_docs and len(t) > 2}
    return [t for t, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:KEY_TERMS]]


def coverage(summary: str, keys: list[str]) -> float:
    have = set(analyze(summary, "en"))
    return sum(k in have for k in keys) / max(len(keys), 1)


def doc_lead(chunks: list[Chunk], k: int) -> list[tuple[int, str, Chunk]]:
    """Baseline: the document's first k eligible sentences."""
    from rag_core.text.sentences import split_sentences

    out = []
    for c in chunks:
        for s in split_sentences(c.text):
            if docread._eligible(s) and len(out) < k:
                out.append((0, " ".join(s.split()), c))
    return out


def run_methods(docs: list[tuple[str, str, list[Chunk]]], limit: int) -> dict:
    df = Counter()
    for _, ref, chunks in docs:
        df.update(set(analyze(ref + " " + " ".join(c.text for c in chunks), "en")))
    n = len(docs)
    res: dict[str, list[float]] = {}
    lengths: dict[str, list[int]] = {}
    for title, ref, chunks in docs:
        keys = key_terms(ref, df, n)
        for name, per in (("centroid", 1), ("lead", 1), ("centroid-2", 2), ("lead-2", 2)):
            method = name.split("-")[0]
            _, picks = docread.outline(chunks, limit, "en", method=method, per_section=per)
            text = " ".join(s for _, s, _ in picks)
            res.setdefault(name, []).append(coverage(text, keys))
            lengths.setdefault(name, []).append(len(picks))
        k = len(docread.outline(chunks, limit, "en")[1])
        text = " ".join(s for _, s, _ in doc_lead(chunks, k))
        res.setdefault("document-lead", []).append(coverage(text, keys))
        lengths.setdefault("document-lead", []).append(k)
    return {m: {"key_term_coverage": round(statistics.mean(v), 4), "sentences": round(statistics.mean(lengths[m]), 1)}
            for m, v in res.items()}


def cmd_methods(args) -> dict:
    docs = [(t, lead, chunks_of(t, rest)) for t, lead, rest in squad_articles(args.split)]
    return {"set": f"squad-{args.split}", "documents": len(docs), "methods": run_methods(docs, args.limit_sections)}


def manual_docs(data_dir: str) -> list[tuple[str, str, list[Chunk]]]:
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(data_dir))
    op = Caller.operator()
    out = []
    try:
        for kb in ws.list_kbs(caller=op):
            for d in ws.list_documents(kb.name, caller=op):
                chunks = ws.store.document_chunks(d.kb_id, d.doc_id)
                secs = docread.sections(chunks)  # the level the outline reads
                intro = next((s for s in secs if _INTRO.match(s.heading)), None)
                if intro is None:
                    continue
                ref = " ".join(c.text for c in intro.chunks)
                ids = {c.chunk_id for c in intro.chunks}
                rest = [c for c in chunks if c.chunk_id not in ids]
                if len(ref) > 500 and rest:
                    out.append((d.source, ref, rest))
    finally:
        ws.close()
    return out


def cmd_manuals(args) -> dict:
    from rag_core.grounding.verify import Verifier
    from rag_core.reader import get_reader

    docs = manual_docs(args.data_dir)
    verifier = Verifier(reader=get_reader())
    supported = []
    for _, _, chunks in docs:
        _, picks = docread.outline(chunks, args.limit_sections, "en")
        srcs = list(dict.fromkeys(c.chunk_id for _, _, c in picks))
        by_id = {c.chunk_id: c for _, _, c in picks}
        text = " ".join(f"{s.rstrip('.')} [{srcs.index(c.chunk_id) + 1}]." for _, s, c in picks)
        claims, _ = verifier.verify(text, [by_id[i].text for i in srcs], titles=[by_id[i].heading for i in srcs])
        supported.append(sum(c.label == "supported" for c in claims) / max(len(claims), 1))
    return {"set": "manuals (introduction chapter as reference)", "documents": [d[0] for d in docs],
            "methods": run_methods(docs, args.limit_sections),
            "centroid_supported": round(statistics.mean(supported), 4) if supported else None}


def cmd_chain(args) -> dict:
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    op = Caller.operator()
    arts = squad_articles(args.split)[: args.limit or None]
    root = Path(args.data_dir)
    docs_dir = root / "docs"
    docs_dir.mkdir(parents=True, exist_ok=True)
    extra = {}
    if args.llm:
        from benchmarks.qwen_gguf import gguf

        extra = {"llm_gguf": gguf(args.llm), "llm_threads": 2, "llm_ctx": 4096, "llm_timeout": 600, "llm_crag": False}
    ws = Workspace(get_settings(root / "data", **extra))
    try:
        if "squad" not in {k.name for k in ws.list_kbs(caller=op)}:
            ws.create_kb("squad", caller=op)
            paths = []
            for title, _, rest in squad_articles(args.split):
                p = docs_dir / f"{title}.md"
                p.write_text(f"# {title.replace('_', ' ')}\n\n" + "\n\n".join(rest) + "\n")
                paths.append(p)
            ws.ingest("squad", paths, caller=op)
        df = Counter()
        all_arts = squad_articles(args.split)
        for _, lead, rest in all_arts:
            df.update(set(analyze(lead + " " + " ".join(rest), "en")))
        rows = []
        for title, lead, rest in arts:
            req = ws.answer_request(["squad"], f"Summarize {title}.md", caller=op, no_cache=True)
            t0 = time.perf_counter()
            first = None
            answer = None
            for ev in ws.answers.chain.stream(req):
                if ev.kind == "token" and first is None:
                    first = (time.perf_counter() - t0) * 1000
                if ev.kind == "answer":
                    answer = ev.answer
            total = (time.perf_counter() - t0) * 1000
            keys = key_terms(lead, df, len(all_arts))
            labels = [c.label for c in answer.claims]
            rows.append({"title": title, "route": answer.route, "mode": answer.mode, "abstained": answer.abstained,
                         "coverage": round(coverage(answer.text, keys), 4),
                         "supported": round(sum(x == "supported" for x in labels) / max(len(labels), 1), 4),
                         "sentences": len(labels), "citations": len(answer.citations),
                         "first_words_ms": round(first or total, 1), "total_ms": round(total, 1),
                         "read": answer.signals.get("read", ""), "llm_error": answer.models.get("llm_error", "")})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        ws.close()
    mean = lambda k: round(statistics.mean(r[k] for r in rows), 4)  # noqa: E731
    med = lambda k: round(statistics.median(r[k] for r in rows), 1)  # noqa: E731
    return {"set": f"squad-{args.split}", "mode": f"llm {args.llm}" if args.llm else "offline", "documents": len(rows),
            "routed_document": sum(r["route"] == "document" for r in rows), "key_term_coverage": mean("coverage"),
            "supported": mean("supported"), "first_words_ms_median": med("first_words_ms"),
            "total_ms_median": med("total_ms"), "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("methods", "manuals", "chain"))
    ap.add_argument("--split", choices=("calib", "test"), default="calib")
    ap.add_argument("--data-dir")
    ap.add_argument("--llm", choices=("0.5b", "1.5b"))
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--limit-sections", type=int, default=10)
    ap.add_argument("--out")
    args = ap.parse_args()
    res = {"methods": cmd_methods, "manuals": cmd_manuals, "chain": cmd_chain}[args.what](args)
    print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
