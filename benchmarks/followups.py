"""Follow-up questions condensed offline: does "When was it built?" find the paragraph that
"When was the Eiffel Tower built?" finds?

    python benchmarks/followups.py --data-dir /work/gw/squad [--n 300] [--shift]

Multi-turn examples are written from the train side of the SQuAD split (v2.0 dev articles
0–19, SPLIT.md): a conversation opens with one question about a paragraph; a second question
about the same paragraph that names the first question's topic becomes the follow-up by
putting a pronoun in place of that name ("it"/"its", or "they"/"their" for a plural).
The standalone form is the original second question. With --shift the second question is
about another paragraph of the same article: the conversation moves on, the topic stays
(where carrying the earlier question's words over pulls towards the earlier paragraph). Each form is searched over all 1,204
v2.0 paragraphs with the product's retrieval (hybrid + reranker); reported per form: the
gold paragraph at rank 1 and in the top 5, and how often the top passage is the one the
standalone question gets. Forms: the raw follow-up, the previous method (the earlier
question's key terms appended), the current one (generation/condense.py), the standalone.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.answer_quality import KB, SQUAD, build_kb  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.generation.condense import condense, topic  # noqa: E402
from rag_core.retrieval.query import key_terms  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402
from rag_core.access import Caller

TRAIN_ARTICLES = range(0, 20)
OUT = Path(__file__).resolve().parent / "results"
_DEPENDENT = re.compile(r"\b(it|its|they|them|their|this|that|these|those|he|she|him|her|his|hers|there)\b", re.I)


def previous_method(question: str, history: list[tuple[str, str]]) -> str:
    """What the chain did before: the earlier question's key terms appended to a dependent
    follow-up."""
    last_user = next((t for r, t in reversed(history) if r == "user"), None)
    if last_user and (_DEPENDENT.search(question) or len(question.split()) < 5):
        extra = [t for t in key_terms(last_user) if t.lower() not in question.lower()]
        if extra:
            return f"{question} ({' '.join(extra[:8])})"
    return question


_AFTER = set("is was are were has have had do does did can could will would should may might "
             "in of to for on at with by from and or as than that when while after before during about "
             "into over under between against become became begin began use used make made get got "
             "first last most".split())


def pronoun_for(name: str, possessive: bool) -> str:
    plural = name.lower().endswith("s") and not name.lower().endswith("ss")
    if possessive:
        return "their" if plural else "its"
    return "they" if plural else "it"


def make_followup(q2: str, name: str) -> str | None:
    m = re.search(r"\b(the\s+)?" + re.escape(name.removeprefix("the ").removeprefix("The ")) + r"('s|’s)?\b", q2, re.I)
    if not m:
        return None
    poss = bool(m.group(2))
    # Only where a person would put a pronoun: not as a modifier ("the Rankine cycle",
    # "a function problem") or after an article.
    before = q2[: m.start()].split()[-1:] or [""]
    nxt = re.match(r"\s*([\w']+|\S)?", q2[m.end():]).group(1) or ""
    if before[0].lower() in {"a", "an"} or (not poss and nxt and nxt not in "?,.;:" and nxt.lower() not in _AFTER):
        return None
    return q2[: m.start()] + pronoun_for(name, poss) + q2[m.end():]


def examples(data: dict, n: int, seed: int = 0, shift: bool = False) -> list[dict]:
    """`shift`: the follow-up asks about another paragraph of the same article than the
    opening question did (the conversation moves on; the topic stays)."""
    out = []
    for ai in TRAIN_ARTICLES:
        art = data["data"][ai]
        paras = [[qa for qa in p["qas"] if not qa.get("is_impossible") and qa["answers"]] for p in art["paragraphs"]]
        for pi, qas in enumerate(paras):
            for i, q1 in enumerate(qas):
                name = topic(q1["question"])
                if not name or len(name) < 3:
                    continue
                if shift:
                    later = [(pj, q) for pj in range(len(paras)) if pj != pi for q in paras[pj]]
                    random.Random(hash((ai, pi, i)) & 0xFFFF).shuffle(later)
                else:
                    later = [(pi, q) for q in qas[i + 1:]]
                for pj, q2 in later:
                    fu = make_followup(q2["question"], name)
                    if fu and fu != q2["question"]:
                        out.append({"doc": f"{ai}-{pj}", "q1": q1["question"], "a1": q1["answers"][0]["text"],
                                    "standalone": q2["question"], "followup": fu})
                        break
    random.Random(seed).shuffle(out)
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--shift", action="store_true", help="the follow-up is about another paragraph than the opening question")
    args = ap.parse_args()
    ws = Workspace(get_settings(args.data_dir))
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    build_kb(ws, data)
    exs = examples(data, args.n, shift=args.shift)
    forms = ("followup", "previous_method", "condensed", "standalone")
    stats = {f: {"gold_at_1": 0, "gold_in_5": 0, "same_top_as_standalone": 0} for f in forms}
    t = time.perf_counter()
    samples = []
    for ex in exs:
        history = [("user", ex["q1"]), ("assistant", ex["a1"])]
        qs = {"followup": ex["followup"], "previous_method": previous_method(ex["followup"], history),
              "condensed": condense(ex["followup"], history), "standalone": ex["standalone"]}
        tops = {}
        for f, q in qs.items():
            docs = [r.chunk.doc_id for r in ws.search([KB], q, k=5, caller=Caller.operator()).results]
            tops[f] = docs[0] if docs else None
            stats[f]["gold_at_1"] += bool(docs) and docs[0] == ex["doc"]
            stats[f]["gold_in_5"] += ex["doc"] in docs
        for f in forms:
            stats[f]["same_top_as_standalone"] += tops[f] == tops["standalone"]
        if len(samples) < 12:
            samples.append(qs)
    n = len(exs)
    res = {"examples": n, "source": "SQuAD v2.0 dev articles 0-19 (train side)",
           "follow_up_about": "another paragraph of the article" if args.shift else "the same paragraph", "seconds": round(time.perf_counter() - t, 1),
           **{f: {k: round(v / n, 4) for k, v in s.items()} for f, s in stats.items()},
           "condensed_equals_standalone_text": round(sum(
               condense(e["followup"], [("user", e["q1"]), ("assistant", e["a1"])]).lower() == e["standalone"].lower()
               for e in exs) / n, 4)}
    print(json.dumps(res, indent=2))
    for s in samples:
        print(json.dumps(s, ensure_ascii=False))
    OUT.mkdir(exist_ok=True)
    (OUT / f"followups{'_shift' if args.shift else ''}.json").write_text(json.dumps({**res, "samples": samples}, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
