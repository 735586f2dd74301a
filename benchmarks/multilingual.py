"""Documents and questions in six languages: the same manual, the same questions.

The Debian Reference ships translated (Debian packages debian-reference-{en,de,fr,es,ja,
zh-cn}); its chapters 3–5 (boot, authentication, network) in each language make one knowledge
base per language. 30 questions with their gold section number (the same in every translation)
were written in English and translated into German, French, Spanish, Japanese and Chinese
(benchmarks/data/multilingual_questions.jsonl; written before this script ran, never used to
tune anything). A retrieved chunk is the gold one when the last heading of its section path
is the gold section ("4.3. Good password", "4.3. 良好なパスワード").

Per language it reports:
- recall@5 of the gold section by keyword, vector and hybrid search;
- the offline answer: answered with the gold section cited / the gold passage among the
  closest passages shown / a bare refusal (abstained, no passage shown) / wrong (anything else);
- ingest seconds and chunks, and query latency p50;
- the mixed knowledge base: English and German chapters together, each language's questions:
  share of top-5 passages in the question's own language, and recall@5 there.

    apt-get download debian-reference-{en,de,fr,es,ja,zh-cn}; dpkg -x each into DIR
    python benchmarks/multilingual.py --html DIR/usr/share/debian-reference --data-dir /tmp/ml
    [--embedder minilm|e5] [--languages en,de] [--out benchmarks/results/multilingual.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LANGS = ("en", "de", "fr", "es", "ja", "zh")
FILE_LANG = {"zh": "zh-cn"}
CHAPTERS = ("ch03", "ch04", "ch05")
QUESTIONS = Path(__file__).parent / "data" / "multilingual_questions.jsonl"


def section_of(chunk) -> str:
    """The section number of a chunk's deepest heading ("4.3"), or ""."""
    last = (chunk.section or "").split(" > ")[-1].strip()
    m = re.match(r"(\d+(?:\.\d+)+)\.\s", last)
    return m.group(1) if m else ""


def detection(questions) -> dict:
    """Language detection on the questions (short texts, 5–25 words): share detected right
    with no prior, and as the app reads them over English documents (prior "en": a question
    the model is unsure of takes the documents' language); time per question."""
    from rag_core.text.language import detect

    t = time.perf_counter()
    detect("the model loads once per process")
    res = {"load_ms": round((time.perf_counter() - t) * 1000, 1)}
    for lang in LANGS:
        texts = [q["questions"][lang] for q in questions]
        t = time.perf_counter()
        bare = sum(detect(x)[0] == lang for x in texts)
        ms = (time.perf_counter() - t) * 1000 / len(texts)
        prior = sum((detect(x, "en")[0] or "en") == lang for x in texts)
        res[lang] = {"accuracy": round(bare / len(texts), 3), "accuracy_with_prior_en": round(prior / len(texts), 3),
                     "ms_per_question": round(ms, 2)}
    return res


def llm_mode(args, ws, questions, langs) -> dict:
    """The first N questions of each language answered by a local Qwen2.5 model (it speaks
    these languages): gold section cited, abstained, or wrong; and whether the answer is in
    the question's language (detected on the answer's text, markers removed)."""
    from benchmarks.qwen_gguf import gguf
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.text.language import detect
    from rag_core.workspace import Workspace

    me = Caller.operator()
    llm_ws = Workspace(get_settings(ws.settings.data_dir, llm_gguf=gguf(args.llm), llm_threads=2, llm_timeout=600,
                                    llm_retries=0, llm_max_tokens=200))
    res: dict = {"model": f"qwen2.5-coder-{args.llm}", "n": args.llm_n}
    try:
        for lang in langs:
            row = {"correct": 0, "abstained": 0, "wrong": 0, "in_question_language": 0, "seconds": []}
            for q in questions[: args.llm_n]:
                t = time.perf_counter()
                a = llm_ws.ask([f"debref-{lang}"], q["questions"][lang], caller=me)
                row["seconds"].append(round(time.perf_counter() - t, 1))
                if a.abstained:
                    row["abstained"] += 1
                    continue
                got = {section_of(c) for c in ws.store.get_chunks([c.chunk_id for c in a.citations])}
                row["correct" if q["gold_section"] in got else "wrong"] += 1
                said = re.sub(r"\[\d+\]|`[^`]*`", " ", a.text)
                row["in_question_language"] += detect(said)[0] == lang
            row["p50_s"] = statistics.median(row.pop("seconds"))
            res[lang] = row
            print("llm", lang, json.dumps(row), flush=True)
    finally:
        llm_ws.close()
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--html", required=True, type=Path)
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--embedder", default="minilm", choices=["minilm", "e5"])
    ap.add_argument("--languages", default=",".join(LANGS))
    ap.add_argument("--no-mixed", action="store_true")
    ap.add_argument("--only-mixed", action="store_true", help="the mixed knowledge base alone")
    ap.add_argument("--fresh", action="store_true",
                    help="delete and ingest the knowledge bases again (vectors come from the folder's embedding cache)")
    ap.add_argument("--skip-offline", action="store_true", help="retrieval only (with --llm: LLM mode only)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--llm", default=None, choices=["0.5b", "1.5b"], help="also answer with a local Qwen2.5 model")
    ap.add_argument("--llm-n", type=int, default=5, help="questions per language in LLM mode (the first N)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    os.environ["RAG_DATA_DIR"] = str(args.data_dir / args.embedder)
    os.environ["RAG_EMBEDDING_PROVIDER"] = args.embedder
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings())
    me = Caller.operator()
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    langs = args.languages.split(",")
    out: dict = {"embedder": args.embedder, "questions": len(questions), "languages": {}}
    if args.out and args.out.exists():  # a run over some languages adds to the earlier ones
        out = json.loads(args.out.read_text())

    if not args.skip_offline:
        out["detection"] = detection(questions)
        print("detection", json.dumps(out["detection"]), flush=True)

    fresh_done: set[str] = set()

    def kb_for(name: str, files: list[Path]) -> dict:
        have = {kb.name for kb in ws.list_kbs(caller=me)}
        if args.fresh and name in have and name not in fresh_done:
            ws.delete_kb(name, caller=me)
            have.discard(name)
        fresh_done.add(name)
        info = {}
        if name not in have:
            ws.create_kb(name, caller=me)
            t = time.perf_counter()
            st = ws.ingest(name, files, caller=me)
            info = {"ingest_s": round(time.perf_counter() - t, 1), "chunks": st.chunks}
        return info

    for lang in ([] if args.only_mixed or args.skip_offline else langs):
        files = [args.html / f"{ch}.{FILE_LANG.get(lang, lang)}.html" for ch in CHAPTERS]
        name = f"debref-{lang}"
        row: dict = kb_for(name, files)
        docs = ws.list_documents(name, caller=me)
        row["detected"] = sorted({d.language for d in docs})
        rec = {m: 0 for m in ("keyword", "vector", "hybrid")}
        lat = []
        outcome = {"correct": 0, "closest_with_gold": 0, "bare_refusal": 0, "wrong": 0}
        for q in questions:
            text, gold = q["questions"][lang], q["gold_section"]
            for mode in rec:
                t = time.perf_counter()
                res = ws.search([name], text, k=5, mode=mode, caller=me)
                if mode == "hybrid":
                    lat.append((time.perf_counter() - t) * 1000)
                rec[mode] += any(section_of(r.chunk) == gold for r in res.results)
            a = ws.ask([name], text, caller=me)
            chunks = {c.chunk_id for c in (a.closest if a.abstained else a.citations)}
            got = {section_of(c) for c in ws.store.get_chunks(list(chunks))}
            if not a.abstained:
                outcome["correct" if gold in got else "wrong"] += 1
            elif not a.closest:
                outcome["bare_refusal"] += 1
            else:
                outcome["closest_with_gold" if gold in got else "wrong"] += 1
        n = len(questions)
        row.update({f"recall5_{m}": round(v / n, 3) for m, v in rec.items()})
        row["offline"] = outcome
        row["hybrid_p50_ms"] = round(statistics.median(lat), 1)
        out["languages"][lang] = row
        print(lang, json.dumps(row), flush=True)

    if not args.no_mixed and not args.skip_offline and {"en", "de"} <= set(langs):
        name = "debref-en-de"
        files = [args.html / f"{ch}.{lg}.html" for lg in ("en", "de") for ch in CHAPTERS]
        kb_for(name, files)
        mixed = {}
        for lang in ("en", "de"):
            own = rec5 = 0
            for q in questions:
                res = ws.search([name], q["questions"][lang], k=5, mode="hybrid", caller=me).results
                own += sum((r.chunk.language or "en") == lang for r in res) / max(len(res), 1)
                rec5 += any(section_of(r.chunk) == q["gold_section"] and r.chunk.language == lang for r in res)
            mixed[lang] = {"own_language_share_top5": round(own / len(questions), 3),
                           "recall5_own_language": round(rec5 / len(questions), 3)}
        # cross-language: each German question over the English chapters alone
        cross = sum(any(section_of(r.chunk) == q["gold_section"] for r in
                        ws.search(["debref-en"], q["questions"]["de"], k=5, mode="hybrid", caller=me).results)
                    for q in questions)
        mixed["de_questions_over_en_recall5"] = round(cross / len(questions), 3)
        out["mixed"] = mixed
        print("mixed", json.dumps(mixed), flush=True)
    if args.llm:
        out["llm"] = llm_mode(args, ws, questions, langs)
    ws.close()
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
