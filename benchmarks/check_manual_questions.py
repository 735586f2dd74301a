"""Check benchmarks/data/manual_questions_v2.jsonl against the manuals themselves.

Reads every manual the set names with the app's own PDF loader (the text the app indexes,
page numbers 1-based PDF page indices, as cited) and fails (exit 1) when
  - an answerable question has an expect phrase that is on none of its gold pages, or a gold
    page that holds none of its expect phrases;
  - a near-miss question's `absent` pattern (a regex for the term that would answer it) is
    found on any page of that program's manuals (judgement stays with the writer; this is
    the grep that backs it);
  - the set breaks its shape: < 80 questions, a program with < 16 questions, < 8 answerable
    or < 4 how-to, an unknown kind, a missing field.
Phrases are matched case-insensitively with whitespace collapsed (pypdf breaks lines).

    python benchmarks/check_manual_questions.py --pdfs /tmp/manuals
(--pdfs: a folder holding the PDFs, flat or nested; a name.pdf.gz is unpacked when no
name.pdf is there. How to get them: see the top of benchmarks/manual_questions.py.)
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUESTIONS_V2 = Path(__file__).resolve().parent / "data" / "manual_questions_v2.jsonl"
# Every manual the v2 run ingests into one knowledge base, with its program. R-admin and
# R-lang carry no questions of their own: they are there as neighbours (and a near-miss
# about R must not be answered by them either).
MANUALS_V2 = {
    "R-intro.pdf": "R", "R-data.pdf": "R", "R-admin.pdf": "R", "R-lang.pdf": "R",
    "gnuplot.pdf": "gnuplot", "bashref.pdf": "Bash", "asymptote.pdf": "Asymptote",
    "maximabook-19-Sept-2004.pdf": "Maxima",
}
KINDS = {"howto", "factual", "near_miss"}
FIELDS = ("id", "manual", "program", "question", "answerable", "kind", "expect", "pages")


def norm(text: str) -> str:
    return " ".join(text.split()).lower()


def load_questions(path: Path = QUESTIONS_V2) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def find_manuals(root: Path, names) -> dict[str, Path]:
    """name -> path for each manual under root (flat or nested); name.pdf.gz is unpacked to a
    temporary folder when no name.pdf exists. Raises SystemExit naming what is missing."""
    root = Path(root)
    found: dict[str, Path] = {}
    missing = []
    for name in sorted(set(names)):
        hits = sorted(root.rglob(name))
        if not hits:
            gz = sorted(root.rglob(name + ".gz"))
            if gz:
                out = Path(tempfile.mkdtemp(prefix="manuals-")) / name
                with gzip.open(gz[0], "rb") as src, out.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
                hits = [out]
        if hits:
            found[name] = hits[0]
        else:
            missing.append(name)
    if missing:
        raise SystemExit(f"not found under {root}: {', '.join(missing)}")
    return found


def pdf_pages(path: Path) -> list[str]:
    """The page texts exactly as the app's loader produces them (index 0 = page 1)."""
    import logging

    from rag_core.ingest.loaders.common import LoadOptions
    from rag_core.ingest.loaders.pdf import load

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    return load(path, path.name, LoadOptions())[0].pages


def check(qs: list[dict], pages_by_manual: dict[str, list[str]]) -> list[str]:
    errors: list[str] = []
    seen = set()
    for q in qs:
        missing = [f for f in FIELDS if f not in q]
        if missing:
            errors.append(f"{q.get('id')}: missing {missing}")
            continue
        if q["id"] in seen:
            errors.append(f"{q['id']}: duplicate id")
        seen.add(q["id"])
        if q["kind"] not in KINDS or (q["kind"] == "near_miss") == bool(q["answerable"]):
            errors.append(f"{q['id']}: kind {q['kind']!r} does not fit answerable={q['answerable']}")
        pages = pages_by_manual[q["manual"]]
        if MANUALS_V2.get(q["manual"]) != q["program"]:
            errors.append(f"{q['id']}: {q['manual']} is not a {q['program']} manual")
        if q["answerable"]:
            if not q["expect"] or not q["pages"]:
                errors.append(f"{q['id']}: answerable without expect/pages")
                continue
            texts = {}
            for p in q["pages"]:
                if not 1 <= p <= len(pages):
                    errors.append(f"{q['id']}: page {p} outside 1..{len(pages)} of {q['manual']}")
                    continue
                texts[p] = norm(pages[p - 1])
            for e in q["expect"]:
                if not any(norm(e) in t for t in texts.values()):
                    where = [i + 1 for i, t in enumerate(pages) if norm(e) in norm(t)][:8]
                    errors.append(f"{q['id']}: {e!r} is on no gold page {q['pages']} (it is on {where})")
            for p, t in texts.items():
                if not any(norm(e) in t for e in q["expect"]):
                    errors.append(f"{q['id']}: gold page {p} holds none of {q['expect']}")
        else:
            if not q.get("note"):
                errors.append(f"{q['id']}: near-miss without a note")
            program_manuals = [m for m in pages_by_manual if MANUALS_V2.get(m) == q["program"]]
            for pattern in q.get("absent", []):
                rx = re.compile(pattern, re.I)
                for m in program_manuals:
                    hits = [i + 1 for i, t in enumerate(pages_by_manual[m]) if rx.search(" ".join(t.split()))]
                    if hits:
                        errors.append(f"{q['id']}: /{pattern}/ occurs in {m} on pages {hits[:8]}")
    if len(qs) < 80:
        errors.append(f"only {len(qs)} questions (need >= 80)")
    by_program: dict[str, list[dict]] = defaultdict(list)
    for q in qs:
        by_program[q["program"]].append(q)
    for prog, rows in sorted(by_program.items()):
        n_ans = sum(q["answerable"] for q in rows)
        n_how = sum(q["kind"] == "howto" for q in rows)
        if len(rows) < 16 or n_ans < 8 or n_how < 4:
            errors.append(f"{prog}: {len(rows)} questions, {n_ans} answerable, {n_how} how-to "
                          f"(need >= 16, >= 8, >= 4)")
    return errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", required=True, help="folder holding the manuals (flat or nested)")
    ap.add_argument("--questions", default=str(QUESTIONS_V2))
    args = ap.parse_args()
    qs = load_questions(Path(args.questions))
    paths = find_manuals(Path(args.pdfs), set(MANUALS_V2) | {q["manual"] for q in qs})
    pages_by_manual = {name: pdf_pages(path) for name, path in paths.items()}
    errors = check(qs, pages_by_manual)
    counts: dict[tuple, int] = defaultdict(int)
    for q in qs:
        counts[(q["program"], q["manual"], q["kind"])] += 1
    for key in sorted(counts):
        print(" ".join(map(str, key)), counts[key])
    print(f"{len(qs)} questions: {sum(q['answerable'] for q in qs)} answerable, "
          f"{sum(not q['answerable'] for q in qs)} near-miss; manuals: "
          + ", ".join(f"{n} ({len(p)} pages)" for n, p in sorted(pages_by_manual.items())))
    for e in errors:
        print("FAIL", e)
    if errors:
        sys.exit(1)
    print("OK: every expect phrase is on a gold page; no near-miss term found in its program's manuals")


if __name__ == "__main__":
    main()
