"""A newcomer's questions in a real browser (issue 50's trial, repeated): Debian's Chromium driven by
Playwright against `streamlit run`, with R-intro, R-FAQ and gnuplot's manual in one knowledge
base and five short documents in German, French, Spanish, Japanese and Chinese in another.

Questions: benchmarks/data/newcomer_browser_questions.jsonl (15 answerable, 5 not) and the
two questions per language of benchmarks/data/five_languages.json; both written for this
benchmark, nothing is fitted on them. Per question, measured from outside the app (Playwright
polls the page every 50 ms):

- `shown_s`: until the reply shows anything (the waiting line counts: a blank space does not);
- `first_words_s`: until the answer's own text shows (not the waiting line);
- `done_s`: until the finished answer (its Timing button) is drawn;
- what the reply shows: an expected phrase, a refusal and which one, raw Markdown ("##",
  "```"), arrows drawn for `<-`/`->`, words glued together ("user's.GlobalEnv").

Each reply is saved as a screenshot under test-output/newcomer_browser/<mode>/.

    python benchmarks/newcomer_browser.py --manuals /tmp/manuals/usr/share/doc --data-dir /tmp/nb-data
    python benchmarks/newcomer_browser.py ... --gguf ~/.cache/groundwork-bench/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\
        --limit 10 --mode qwen0.5b
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402
from tests.browser.test_e2e import CHROMIUM, ask_in_chat, streamlit_app  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
MANUALS = ("r-doc-pdf/manual/R-intro.pdf", "r-doc-pdf/manual/R-FAQ.pdf", "gnuplot/gnuplot.pdf")
REFUSALS = {"absent": "I don't have information about that", "unconfirmed": "I could not confirm an answer"}
# the refusal's first line in the five languages (text/messages.py), to tell which one was shown
UNCONFIRMED = ("could not confirm", "keine Antwort bestätigen", "pas pu confirmer", "No pude confirmar", "確認できません",
               "无法在所选知识库中确认")
ABSENT = ("I don't have information", "keine Informationen", "pas d'information", "No tengo información", "情報がありません",
          "没有关于此问题的信息")

_PROBE = """el => {
  const body = Array.from(el.querySelectorAll('[data-testid=stMarkdownContainer]'))
    .filter(x => !x.closest('[data-testid=stCaptionContainer]') && !x.closest('button'))
    .map(x => x.innerText).join('\\n');
  return {all: el.innerText.trim().length, body: body.trim().length};
}"""


def build(data: Path, manuals: Path) -> None:
    if (data / "groundwork.db").exists():
        return
    op = Caller.operator()
    ws = Workspace(get_settings(data))
    try:
        ws.create_kb("Manuals", caller=op)
        rep = ws.ingest("Manuals", [manuals / m for m in MANUALS], caller=op)
        assert all(r.status == "ingested" for r in rep.reports), [(r.source, r.status, r.error) for r in rep.reports]
        docs = data.parent / "five-languages"
        docs.mkdir(exist_ok=True)
        spec = json.loads((DATA / "five_languages.json").read_text())
        for d in spec["docs"]:
            (docs / d["name"]).write_text(d["text"])
        ws.create_kb("Languages", caller=op)
        ws.ingest("Languages", [docs / d["name"] for d in spec["docs"]], caller=op)
    finally:
        ws.close()


def questions() -> list[dict]:
    rows = [json.loads(x) for x in (DATA / "newcomer_browser_questions.jsonl").read_text().splitlines() if x.strip()]
    for d in json.loads((DATA / "five_languages.json").read_text())["docs"]:
        rows += [{"id": f"{d['language']}{i + 1}", "question": q["q"], "expect": q["expect"], "language": d["language"]}
                 for i, q in enumerate(d["questions"])]
    return rows


def select_all_kbs(page) -> None:
    page.get_by_role("button", name="New chat").first.click()
    page.get_by_text("Answering from:").first.wait_for()
    for name in ("Manuals", "Languages"):
        if page.get_by_text("Answering from:").filter(has_text=name).count() == 0:
            page.locator("[data-testid=stSidebar] [data-testid=stMultiSelect]").first.click()
            page.get_by_role("option", name=name, exact=True).click()
            page.keyboard.press("Escape")
        page.get_by_text("Answering from:").filter(has_text=name).wait_for()


def ask(page, row: dict, shots: Path, timeout_s: float) -> dict:
    page.get_by_role("button", name="New chat").first.click()
    page.wait_for_timeout(800)
    t0 = time.perf_counter()
    reply = ask_in_chat(page, row["question"])
    shown = first = done = None
    while time.perf_counter() - t0 < timeout_s:
        now = time.perf_counter() - t0
        try:
            probe = reply.evaluate(_PROBE) if reply.count() else {"all": 0, "body": 0}
        except Exception:  # noqa: BLE001 - the element is being redrawn
            probe = {"all": 0, "body": 0}
        if shown is None and probe["all"]:
            shown = now
        if first is None and probe["body"]:
            first = now
        if reply.count() and reply.get_by_role("button", name="Timing").count():
            done = now
            break
        page.wait_for_timeout(50)
    text = reply.inner_text() if reply.count() else ""
    reply.screenshot(path=str(shots / f"{row['id']}.png"))
    # the first line a person reads (the avatar's icon name comes first in innerText)
    head = next((ln for ln in text.splitlines() if ln.strip() and ln.strip() not in ("smart_toy", "face")), "")
    expect = row.get("expect") or []
    return {
        "id": row["id"], "question": row["question"], "answerable": row.get("answerable", True),
        "shown_s": round(shown, 2) if shown is not None else None,
        "first_words_s": round(first, 2) if first is not None else None,
        "done_s": round(done, 2) if done is not None else None,
        "expect_shown": any(e in text for e in expect) if expect else None,
        "refusal": "unconfirmed" if any(x in head for x in UNCONFIRMED) else "absent" if any(x in head for x in ABSENT)
        else None,
        "raw_markdown": "\n## " in "\n" + text or "```" in text,
        "arrows": "←" in text or "→" in text,
        "glued": "user's.GlobalEnv" in text or "user’s.GlobalEnv" in text,
        "cut_notice": "answer was cut" in text,
        "first_line": head[:160],
    }


def pct(xs: list[float], p: float) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 2) if xs else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--manuals", required=True, help="a folder holding r-doc-pdf/manual/ and gnuplot/ (Debian's docs)")
    ap.add_argument("--data-dir", required=True, help="the app's data folder (built on the first run, then reused)")
    ap.add_argument("--gguf", help="a local GGUF model (RAG_LLM_GGUF); without it the app answers offline")
    ap.add_argument("--mode", default="offline")
    ap.add_argument("--limit", type=int, default=0, help="only the first N answerable manual questions")
    ap.add_argument("--timeout", type=float, default=400.0)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    data = Path(args.data_dir)
    build(data, Path(args.manuals))
    rows = questions()
    if args.limit:
        rows = [r for r in rows if r["id"].startswith("b")][:args.limit]
    shots = ROOT / "test-output" / "newcomer_browser" / args.mode
    shots.mkdir(parents=True, exist_ok=True)
    env = {"RAG_ANSWER_CACHE": "false"}
    if args.gguf:
        env["RAG_LLM_GGUF"] = str(Path(args.gguf).expanduser())
    out = []
    with streamlit_app(data, env=env) as (url, started), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(url)
        select_all_kbs(page)
        for row in rows:
            r = ask(page, row, shots, args.timeout)
            out.append(r)
            print(json.dumps(r, ensure_ascii=False), flush=True)
        browser.close()
    ans = [r for r in out if r["answerable"]]
    summary = {
        "mode": args.mode, "questions": len(out), "app_start_s": round(started, 1),
        "shown_s_p50": pct([r["shown_s"] for r in out], 50), "shown_s_max": pct([r["shown_s"] for r in out], 100),
        "first_words_s_p50": pct([r["first_words_s"] for r in out], 50),
        "first_words_s_p95": pct([r["first_words_s"] for r in out], 95),
        "done_s_p50": pct([r["done_s"] for r in out], 50), "done_s_max": pct([r["done_s"] for r in out], 100),
        "not_done": sum(r["done_s"] is None for r in out),
        "answerable_expect_shown": f"{sum(bool(r['expect_shown']) for r in ans)}/{len(ans)}",
        "refusal_absent_on_answerable": sum(r["refusal"] == "absent" for r in ans),
        "refusal_unconfirmed_on_answerable": sum(r["refusal"] == "unconfirmed" for r in ans),
        "unanswerable_refused": f"{sum(bool(r['refusal']) for r in out if not r['answerable'])}/"
                                f"{sum(not r['answerable'] for r in out)}",
        "raw_markdown": sum(r["raw_markdown"] for r in out), "arrows": sum(r["arrows"] for r in out),
        "glued": sum(r["glued"] for r in out), "cut_notices": sum(r["cut_notice"] for r in out),
        "median_done_s_all": statistics.median([r["done_s"] for r in out if r["done_s"] is not None] or [0]),
    }
    print(json.dumps(summary, indent=1))
    res = ROOT / "benchmarks" / "results" / f"newcomer_browser_{args.mode}.json"
    res.write_text(json.dumps({"summary": summary, "rows": out}, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
