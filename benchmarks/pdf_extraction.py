"""Running-header/footer debris in the chunks of real manuals, before and after the PDF loader
removes running lines (rag_core/ingest/loaders/pdf.py: strip_running_lines).

The debris is recognised by patterns written by hand per manual from reading its pages (the
reference), independent of the loader's own detector, which looks at recurrence across pages:
- R manuals, Bash, Asymptote: "Chapter 3: Objects, their modes and attributes 15" (and Appendix);
- gnuplot: "gnuplot 5.4 31", "32 gnuplot 5.4", "CONTENTS gnuplot 5.4 3";
- the Maxima book: "CHAPTER 3. THE BASICS - WHAT YOU NEED TO KNOW TO OPERATE IN MAXIMA 30".
A chunk has debris when one of its lines is such a head (or a bare number line that equals a
page number of the chunk's pages). Reported: chunks, share with debris, before → after, and
the share of the text removed (what the loader threw away, as a check that it is small).

    python benchmarks/pdf_extraction.py --pdfs /tmp/manuals/usr --out benchmarks/results/pdf_extraction.json

The manuals come from Debian's packages (pinned line in benchmarks/manual_questions.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHAPTER = re.compile(r"^(Chapter|Appendix) [0-9A-Z]{1,2}: .+ \d{1,4}$")
REFERENCE = {
    "R-intro.pdf": CHAPTER, "R-data.pdf": CHAPTER, "bashref.pdf": CHAPTER, "asymptote.pdf": CHAPTER,
    "gnuplot.pdf": re.compile(r"^(\d{1,4} gnuplot 5\.4( CONTENTS)?|(CONTENTS )?gnuplot 5\.4 \d{1,4})$"),
    "maximabook-19-Sept-2004.pdf": re.compile(r"^CHAPTER \d+\. .+ \d{1,4}$"),
}


def chunks_of(path: Path, strip: bool):
    import rag_core.ingest.loaders.pdf as pdf
    from rag_core.ingest.chunker import chunk_document
    from rag_core.ingest.loaders import load_file

    keep = pdf.strip_running_lines
    if not strip:
        pdf.strip_running_lines = lambda pages: pages
    try:
        doc = load_file(path)[0]
    finally:
        pdf.strip_running_lines = keep
    return doc, chunk_document(doc, doc_id="d", kb_id="k")


def debris(chunk, pattern) -> bool:
    pages = {str(p) for p in range(chunk.page_start, chunk.page_end + 1)}
    for line in chunk.text.splitlines():
        line = " ".join(line.split())
        if pattern.match(line) or line in pages:
            return True
    return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdfs", type=Path, required=True, help="folder holding the manuals (searched recursively)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    found = {p.name: p for p in args.pdfs.rglob("*.pdf")}
    rows = []
    for name, pattern in REFERENCE.items():
        if name not in found:
            print(f"missing {name}", file=sys.stderr)
            continue
        row = {"pdf": name}
        for label, strip in (("before", False), ("after", True)):
            doc, chunks = chunks_of(found[name], strip)
            bad = sum(debris(c, pattern) for c in chunks)
            row[label] = {"pages": len(doc.pages), "chunks": len(chunks), "debris_chunks": bad,
                          "debris_share": round(bad / max(1, len(chunks)), 4),
                          "chars": sum(len(p) for p in doc.pages)}
        row["text_removed_share"] = round(1 - row["after"]["chars"] / row["before"]["chars"], 4)
        print(json.dumps(row), flush=True)
        rows.append(row)
    total = {k: sum(r[k]["debris_chunks"] for r in rows) / max(1, sum(r[k]["chunks"] for r in rows))
             for k in ("before", "after")}
    out = {"pdfs": rows, "debris_share_all": {k: round(v, 4) for k, v in total.items()},
           "command": " ".join(sys.argv)}
    print(json.dumps(out["debris_share_all"]))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
