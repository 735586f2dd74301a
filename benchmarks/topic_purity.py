"""How well Analytics groups unanswered questions into topics (issue 40: "add a title" and
"Excel chart" came out as one topic). A small labelled set written for this benchmark
(benchmarks/data/topic_questions.jsonl: 16 topics of 4 newcomer-style questions; 8 topics
train, 8 other topics test) is grouped by rag_core.gaps' clustering at each similarity line, on
the question as asked ("raw", what rag_core.gaps embeds) and on its topic words only
("content": question words and stop words dropped). Purity: the share of
questions in the majority topic of their group (1.0 = no group mixes topics); inverse purity:
the share of each topic's questions found in its largest group (1.0 = no topic split); F:
their harmonic mean. Chosen on the train topics: the variant and line with the best inverse
purity among those that mix no topics (purity 1.0; the higher line on a tie); the test topics
report it.

    python benchmarks/topic_purity.py
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.config import get_settings  # noqa: E402
from rag_core.embeddings import get_embedder  # noqa: E402
from rag_core.gaps import _QUESTION_WORDS, _WORD, SIM, _cluster  # noqa: E402
from rag_core.text.analysis import STOPWORDS  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "topic_questions.jsonl"
OUT = Path(__file__).resolve().parent / "results" / "topic_purity.json"
GRID = [round(x, 2) for x in np.arange(0.3, 0.91, 0.05)]


def topic_text(question: str) -> str:
    """A question's topic words only ("How do I add a title to my plot?" -> "add title plot")."""
    words = [w for w in _WORD.findall(question.lower()) if w not in STOPWORDS and w not in _QUESTION_WORDS]
    return " ".join(words) or question


def scores(gold: list[str], groups: list[int]) -> dict:
    n = len(gold)
    by_group: dict[int, Counter] = {}
    by_topic: dict[str, Counter] = {}
    for t, g in zip(gold, groups):
        by_group.setdefault(g, Counter())[t] += 1
        by_topic.setdefault(t, Counter())[g] += 1
    purity = sum(c.most_common(1)[0][1] for c in by_group.values()) / n
    inverse = sum(c.most_common(1)[0][1] for c in by_topic.values()) / n
    f = 2 * purity * inverse / (purity + inverse)
    return {"purity": round(purity, 4), "inverse_purity": round(inverse, 4), "f": round(f, 4), "groups": len(by_group)}


def main() -> None:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    emb = get_embedder(get_settings("/tmp/gw-topic-purity"))
    out: dict = {"set": str(DATA.name), "questions": len(rows), "shipped_sim_before": 0.55, "variants": {}}
    for variant, text in (("raw", lambda q: q), ("content", topic_text)):
        for split in ("train", "test"):
            part = [r for r in rows if r["split"] == split]
            vecs = np.asarray(emb.embed_array([text(r["question"]) for r in part]), dtype=np.float32)
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
            out["variants"].setdefault(variant, {})[split] = {
                str(s): scores([r["topic"] for r in part], _cluster(vecs, s)) for s in GRID}
    pure = [(v, s) for v in out["variants"] for s in map(str, GRID) if out["variants"][v]["train"][s]["purity"] == 1.0]
    best_v, best_s = max(pure, key=lambda k: (out["variants"][k[0]]["train"][k[1]]["inverse_purity"], float(k[1])))
    out["chosen_on_train"] = {"variant": best_v, "sim": float(best_s), "train": out["variants"][best_v]["train"][best_s],
                              "test": out["variants"][best_v]["test"][best_s]}
    out["before_on_test"] = out["variants"]["raw"]["test"]["0.55"]
    out["shipped"] = {"variant": "raw", "sim": SIM, "test": out["variants"]["raw"]["test"].get(str(SIM))}
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: out[k] for k in ("chosen_on_train", "before_on_test", "shipped")}, indent=2))


if __name__ == "__main__":
    main()
