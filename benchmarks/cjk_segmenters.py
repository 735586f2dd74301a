"""Character bigrams against dictionary segmenters for Chinese and Japanese keyword search.

The same questions and chapters as benchmarks/multilingual.py (the Debian Reference in ja and
zh-cn, 30 questions with their gold section), keyword search only (the store's BM25 over the
analysed terms), with the CJK runs of documents and questions turned into terms by:
- bigram: overlapping character bigrams (what rag_core/text/analysis.py ships);
- dictionary: jieba (zh, search mode) and MeCab with UniDic-lite through fugashi (ja), single
  kana and punctuation dropped;
- both: the dictionary's words plus the bigrams.
Each variant indexes into its own data folder. Reports recall@5 and recall@1 of the gold
section, index terms per chunk and analysis time.

    pip install jieba==0.42.1 fugashi==1.5.2 unidic-lite==1.0.8     # measurement only
    python benchmarks/cjk_segmenters.py --html DIR/usr/share/debian-reference --data-dir /tmp/cjk
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.multilingual import CHAPTERS, FILE_LANG, QUESTIONS, section_of  # noqa: E402

_KANA1 = re.compile(r"^[\u3040-\u30ff]$")


def dictionary_terms():
    import fugashi
    import jieba

    jieba.setLogLevel(60)
    tagger = fugashi.Tagger()

    def words(run: str, lang: str) -> list[str]:
        if lang == "zh":
            toks = jieba.lcut_for_search(run)
        elif lang == "ja":
            toks = [w.surface for w in tagger(run)]
        else:
            return []
        return [t for t in toks if t.strip() and not _KANA1.match(t)]
    return words


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--html", required=True, type=Path)
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    from rag_core.text import analysis

    words = dictionary_terms()
    variants = {
        "bigram": lambda run, lang: analysis.bigrams(run),
        "dictionary": lambda run, lang: words(run, lang) or analysis.bigrams(run),
        "both": lambda run, lang: words(run, lang) + analysis.bigrams(run),
    }
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    out = {}
    for variant, fn in variants.items():
        analysis.cjk_terms = fn  # the one place CJK runs become terms (documents and questions alike)
        os.environ["RAG_DATA_DIR"] = str(args.data_dir / variant)
        from rag_core.access import Caller
        from rag_core.config import get_settings
        from rag_core.workspace import Workspace

        ws = Workspace(get_settings())
        me = Caller.operator()
        for lang in ("ja", "zh"):
            name = f"debref-{lang}"
            if name not in {kb.name for kb in ws.list_kbs(caller=me)}:
                ws.create_kb(name, caller=me)
                ws.ingest(name, [args.html / f"{ch}.{FILE_LANG.get(lang, lang)}.html" for ch in CHAPTERS],
                          caller=me, language=lang)
            kb = ws.get_kb(name, caller=me)
            chunks = ws.chunks(kb.kb_id, caller=me)
            t = time.perf_counter()
            n_terms = sum(len(analysis.analyze(c.text, lang)) for c in chunks)
            analyse_ms = (time.perf_counter() - t) * 1000
            r5 = r1 = 0
            for q in questions:
                res = ws.search([name], q["questions"][lang], k=5, mode="keyword", rerank=False, caller=me).results
                secs = [section_of(r.chunk) for r in res]
                r5 += q["gold_section"] in secs
                r1 += bool(secs) and secs[0] == q["gold_section"]
            row = {"recall5": round(r5 / len(questions), 3), "recall1": round(r1 / len(questions), 3),
                   "terms_per_chunk": round(n_terms / len(chunks), 1), "analyse_ms_per_chunk": round(analyse_ms / len(chunks), 2)}
            out.setdefault(variant, {})[lang] = row
            print(variant, lang, json.dumps(row), flush=True)
        ws.close()
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
