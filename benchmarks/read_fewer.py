"""Read less, answer the same? (issue 52, part 2: "read fewer candidate sentences with the same
result (measure it)"). The offline answer's first words wait for two reader passes: the
reranker reads the top `depth` passages (ReaderReranker.depth, 12) and the answerer reads the
`max_read` most promising sentences of the top 4 (ExtractiveAnswerer.max_read, 24). This asks
the same questions with smaller settings and reports, per setting, answer quality and how
often the answer is the very one of the shipped setting.

    python benchmarks/read_fewer.py --data-dir /tmp/gw-squad --split calib      # choose here
    python benchmarks/read_fewer.py --data-dir /tmp/gw-squad --split test --n 150   # confirm

SQuAD 2.0 dev as benchmarks/answer_quality.py builds it (one knowledge base of all 1,204
paragraphs; the split of ../shared/data/squad-dev/SPLIT.md): a setting is chosen on `calib`
(train side) and confirmed on `test`. Per setting: answerable correct (the answer holds a gold
answer and cites the gold paragraph), unanswerable abstained, same answer as the shipped
setting (text and abstention), reader tokens per question, and time to the answer's first words.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

SETTINGS = [(12, 24), (12, 16), (8, 24), (8, 16)]  # (rerank depth, sentences read)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--split", choices=("calib", "test"), default="calib")
    ap.add_argument("--n", type=int, default=0, help="answerable and unanswerable each (0: all of calib)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    os.environ["RAG_ANSWER_CACHE"] = "false"
    from answer_quality import KB, SQUAD, build_kb, norm, questions

    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.reader import Reader
    from rag_core.workspace import Workspace

    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    ws = Workspace(get_settings(a.data_dir))
    build_kb(ws, data)
    answerable, impossible = questions(data, a.split, a.n or None)
    eng = ws.answers
    reranker = eng.kit.retrieval.reranker
    tokens = [0]
    real = Reader.logits

    def counted(self, task, firsts, seconds):
        tokens[0] += sum(len(e.ids) for e in self._tok[task].encode_batch(
            [(f"{task}: {x}", y or " ") for x, y in zip(firsts, seconds)]))
        return real(self, task, firsts, seconds)

    Reader.logits = counted
    base: dict[str, tuple] = {}
    out = []
    try:
        for depth, max_read in SETTINGS:
            reranker.depth, eng.extractive.max_read = depth, max_read
            ok = ab = same = 0
            first, n_tok = [], 0
            for label, items in (("answerable", answerable), ("impossible", impossible)):
                for qid, q, gold_doc, golds in items:
                    req = ws.answer_request([KB], q, caller=Caller.operator(), no_cache=True)
                    tokens[0] = 0
                    t, got, ans = time.perf_counter(), None, None
                    for ev in eng.stream(req):
                        if ev["type"] == "token" and got is None:
                            got = time.perf_counter() - t
                        if ev["type"] == "answer":
                            ans = ev["answer"]
                    first.append((got if got is not None else time.perf_counter() - t) * 1000)
                    n_tok += tokens[0]
                    key = (ans.text, ans.abstained)
                    base.setdefault(qid, key)
                    same += base[qid] == key
                    if label == "answerable":
                        ok += (not ans.abstained and any(norm(g) in norm(ans.text) for g in golds)
                               and any(c.doc_id == gold_doc for c in ans.citations))
                    else:
                        ab += ans.abstained
            first.sort()
            row = {"rerank_depth": depth, "max_read": max_read, "split": a.split,
                   "answerable_correct": round(ok / len(answerable), 4),
                   "unanswerable_abstained": round(ab / len(impossible), 4),
                   "same_answer_as_shipped": round(same / (len(answerable) + len(impossible)), 4),
                   "reader_tokens_per_question": round(n_tok / (len(answerable) + len(impossible))),
                   "first_words_ms_p50": round(first[len(first) // 2]),
                   "first_words_ms_p95": round(first[min(len(first) - 1, int(0.95 * len(first)))]),
                   "questions": [len(answerable), len(impossible)], "load": round(os.getloadavg()[0], 1)}
            print(json.dumps(row), flush=True)
            out.append(row)
    finally:
        Reader.logits = real
        ws.close()
    if a.out:
        a.out.write_text("\n".join(json.dumps(r) for r in out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
