"""How answers from manuals look (issue 40): everyday how-to questions a newcomer asked of R's and
gnuplot's manuals (benchmarks/data/newcomer_questions.jsonl, written for this benchmark; no
threshold is fitted on them), asked offline through `ask` on the manual-questions knowledge
base (benchmarks/manual_questions.py --set v2 builds it). Per question, of what is shown first
(the answer, or on an abstention the first closest passage as the chat renders it):

- `expect_shown`: an expected command appears;
- `code_as_block`: where the expected command is shown inside code, it is inside a fenced
  block of the rendered Markdown (never escaped prose);
- `starts_in_code`: the shown text begins inside a code block (a closing fence, or code with
  no opening);
- `announces_without_block`: its last sentence announces code ("… as follows:") with nothing
  after it.

    python benchmarks/newcomer_shapes.py --data-dir /tmp/gw-manuals-v3
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.render import answer_markdown, passage_markdown  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "newcomer_questions.jsonl"
OUT = Path(__file__).resolve().parent / "results" / "newcomer_shapes.json"
KB = "manuals-v2"
_ANNOUNCES = re.compile(r"(:|\b(as follows|like this|the command is|could fit this as|as))\s*(\[\d+\])*\s*$", re.I)


def blocks(md: str) -> list[str]:
    return re.findall(r"```[^\n]*\n(.*?)\n```", md, re.S)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True)
    args = ap.parse_args()
    op = Caller.operator()
    ws = Workspace(get_settings(args.data_dir))
    rows = []
    for q in [json.loads(x) for x in DATA.read_text().splitlines() if x.strip()]:
        a = ws.ask([KB], q["question"], caller=op)
        if a.abstained:
            first = a.closest[0] if a.closest else None
            raw = (first.passage or first.snippet) if first else ""
            md = passage_markdown(raw, first.snippet) if first else ""
        else:
            raw, md = a.text, answer_markdown(a)
        shown = [e for e in q["expect"] if e in raw]
        in_code = [e for e in shown if any(e in b for b in blocks(md))]
        fences = [m.group(0) for m in re.finditer(r"(?m)^[ \t]*```", raw)]
        stripped = raw.strip()
        rows.append({
            "id": q["id"], "question": q["question"], "abstained": a.abstained, "decided_by": a.decided_by,
            "expect_shown": bool(shown),
            # a command shown inside code must be in a block; one quoted inline in prose is fine
            "code_as_block": (not shown) or bool(in_code) or not any(e in "".join(blocks(raw + "\n```")) for e in shown),
            "starts_in_code": stripped.startswith("```") and len(fences) % 2 == 1,
            "announces_without_block": bool(_ANNOUNCES.search(stripped)) and not stripped.endswith("```"),
            "cited": [f"{c.source}:{c.page}" for c in (a.citations or a.closest)[:2]],
            "shown": raw[:300],
        })
        print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    ws.close()
    n = len(rows)
    summary = {"questions": n, **{k: sum(bool(r[k]) for r in rows) for k in
                                  ("abstained", "expect_shown", "code_as_block", "starts_in_code", "announces_without_block")}}
    OUT.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
