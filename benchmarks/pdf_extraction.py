"""PDF extraction quality on real documents of five layouts, before and after issue 26's loader
(rag_core/ingest/loaders/pdf.py + pdf_layout.py: running lines out, code fenced, headings,
bullets, small recurring furniture out).

"before" is the loader as it was: pypdf's plain text per page, tidied (ligatures, spaces,
line-end hyphens), nothing removed, no structure. "after" is `load_file` today. Both are
chunked by the same chunker. Measured per document:
- debris: chunks holding a running head/foot or page number (manuals), or slide navigation;
- broken words: a word still split by a line-end hyphen ("col-\\numn") in prose;
- code intact: hand-made reference code blocks (read off the rendered pages) whose lines come
  out as consecutive lines of one chunk ("together"), and inside one ``` fence ("fenced");
- two-column paper: column one read before column two;
- scanned page: a manual page rendered to an image-only PDF at 200 dpi and OCR'd; share of
  the page's words (its text layer, the reference) found.

Running heads and feet:

The debris is recognised by patterns written by hand per manual from reading its pages (the
reference), independent of the loader's own detector, which looks at recurrence across pages:
- R manuals, Bash, Asymptote: "Chapter 3: Objects, their modes and attributes 15" (and Appendix);
- gnuplot: "gnuplot 5.4 31", "32 gnuplot 5.4", "CONTENTS gnuplot 5.4 3";
- the Maxima book: "CHAPTER 3. THE BASICS - WHAT YOU NEED TO KNOW TO OPERATE IN MAXIMA 30".
A chunk has debris when one of its lines is such a head (or a bare number line that equals a
page number of the chunk's pages). Reported: chunks, share with debris, before → after, and
the share of the text removed (what the loader threw away, as a check that it is small).

    python benchmarks/pdf_extraction.py --pdfs /tmp/manuals/usr --slides /tmp/slides \
        --out benchmarks/results/pdf_extraction.json

The manuals come from Debian's packages (pinned line in benchmarks/manual_questions.py). The
slides are beamer's own examples, from texlive-latex-recommended-doc=2022.20230122-3 (LPPL):
    mkdir -p /tmp/slides && cd /tmp/slides && apt-get download texlive-latex-recommended-doc \
      && dpkg -x texlive-latex-recommended-doc_*.deb x && cp x/usr/share/doc/texlive-doc/latex/beamer/\
      beamerexample-{conference-talk,lecture-beamer-version}.pdf . && rm -rf x
    # sha256 4b114251…b38d6 conference-talk, 282e8a68…a31b88 lecture-beamer-version
The two-column paper is ../shared/data/pdfs-py-pdf-sample-files/026-latex-multicolumn.
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


def before_doc(path: Path):
    """The loader before issue 26: pypdf plain text per page, tidied, nothing removed."""
    from pypdf import PdfReader

    from rag_core.ingest.loaders.pdf import _clean_line
    from rag_core.models import LoadedDocument

    def old_clean(text: str) -> str:  # the tidy-up as it was: every "a-\\nb" joined when b is lowercase
        text = "\n".join(_clean_line(x) for x in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
        text = re.sub(r"(?<=[^\W\d_])-\n(?=([^\W\d_]))", lambda m: "" if m.group(1).islower() else "-\n", text)
        return re.sub(r"\n{3,}", "\n\n", text).strip()

    pages = [old_clean(p.extract_text(extraction_mode="plain")) for p in PdfReader(path).pages]
    return LoadedDocument(source=path.name, title=path.stem, mime="application/pdf", pages=pages)


def chunks_of(path: Path, after: bool):
    from rag_core.ingest.chunker import chunk_document
    from rag_core.ingest.loaders import load_file

    doc = load_file(path)[0] if after else before_doc(path)
    return doc, chunk_document(doc, doc_id="d", kb_id="k")


# Hand-made references: code blocks as printed on these pages (read off the rendered page).
CODE = {
    ("R-intro.pdf", 80): [["> plot(x, y)", "> identify(x, y)"], ['par(c("col", "lty"))'], ["par(col=4, lty=2)"]],
    ("R-data.pdf", 31): [['zz <- file("ex.data", "w") # open an output file connection',
                          'cat("TITLE extra line", "2 3 5 7", "", "11 13 17",', 'file = zz, sep = "\\n")',
                          'cat("One more line\\n", file = zz)', "close(zz)"]],
    ("gnuplot.pdf", 120): [["plot ’file’ with errorlines", "plot ’file’ using 1:2:(sqrt($1)) with xerrorlines",
                            "plot ’file’ using 1:2:($1-$3):($1+$3):4:5 with xyerrorlines"],
                           ["approx(ang) = ang - ang**3 / (3*2)",
                            'plot sin(x) title "sin(x)", approx(x) title "approximation"'],
                           ["plot sin(t),t**2", "splot cos(u)*cos(v),cos(u)*sin(v),sin(u)"]],
    ("bashref.pdf", 40): [["$(( expression ))"]],
    ("asymptote.pdf", 30): [["pair z=(3,4);", "z=(z.x,-z.y);", "z=z.x-I*z.y;", "z=conj(z);"],
                            ["pair z=(3,4);", "length(z);"]],
    ("maximabook-19-Sept-2004.pdf", 30): [["GCL (GNU Common Lisp) Version(2.3.8) Wed Sep 5 08:00:22 CDT 2001",
                                           "Licensed under GNU Library General Public License",
                                           "Contains Enhancements by W. Schelter"]],
}


def _norm_lines(text: str) -> list[str]:
    return [" ".join(x.split()) for x in text.splitlines()]


def code_intact(chunks, page: int, block: list[str]) -> tuple[bool, bool]:
    """(together, fenced): the block's lines are consecutive lines of one chunk on that page;
    and they sit inside one ``` fence there."""
    want = [" ".join(x.split()) for x in block]
    together = fenced = False
    for c in chunks:
        if not c.page_start <= page <= c.page_end:
            continue
        lines = _norm_lines(c.text)
        for i in range(len(lines) - len(want) + 1):
            if lines[i:i + len(want)] == want:
                together = True
                before = [x for x in lines[:i] if x.startswith("```")]
                after = lines[i + len(want):]
                if len(before) % 2 == 1 and any(x.startswith("```") for x in after):
                    fenced = True
    return together, fenced


# a word cut by a line-end hyphen: its first part holds no hyphen of its own (a compound's
# "state-of-the-\\nart" keeps its hyphen rightly)
_BROKEN = re.compile(r"(?<![\w-])[a-z]+-\n ?[a-z]")


def broken_words(chunks) -> int:
    """Words still split by a line-end hyphen in prose (code between fences left out)."""
    n = 0
    for c in chunks:
        prose = re.sub(r"```.*?```", " ", c.text, flags=re.S)
        n += len(_BROKEN.findall(prose))
    return n


# The lecture deck's navigation sidebar and footline, as printed on every slide (hand-made).
SLIDE_FURNITURE = {"Till Tantau", "LOGIK", "Ziele und Inhalt", "Was ist Syntax?", "Was ist Semantik?",
                   "Grundlage der", "Syntax: Text", "Zusammenfassung", "natürlicher Sprachen"}


def slide_debris(chunk) -> bool:
    return sum(x in SLIDE_FURNITURE for x in _norm_lines(chunk.text)) >= 3


def scanned_page(path: Path, page: int) -> dict:
    """A manual page as a scan: rendered at 200 dpi into an image-only PDF, loaded with OCR."""
    import tempfile

    import pypdfium2 as pdfium

    from rag_core.ingest.loaders import load_file

    doc = pdfium.PdfDocument(str(path))
    ref = doc[page - 1].get_textpage().get_text_range()
    img = doc[page - 1].render(scale=200 / 72).to_pil().convert("RGB")
    doc.close()
    with tempfile.TemporaryDirectory() as tmp:
        scan = Path(tmp) / "scan.pdf"
        img.save(scan, "PDF", resolution=200)
        got = load_file(scan, ocr=True)[0]
    ref_words = re.findall(r"\w+", ref.lower())
    have = {}
    for w in re.findall(r"\w+", "\n".join(got.pages).lower()):
        have[w] = have.get(w, 0) + 1
    found = 0
    for w in ref_words:
        if have.get(w, 0) > 0:
            have[w] -= 1
            found += 1
    return {"pdf": path.name, "page": page, "reference_words": len(ref_words),
            "word_recall": round(found / max(1, len(ref_words)), 4), "ocr_pages": got.metadata.get("ocr_pages")}


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
    ap.add_argument("--slides", type=Path, help="folder holding the beamer example decks")
    ap.add_argument("--paper", type=Path, default=ROOT.parent / "shared" / "data" / "pdfs-py-pdf-sample-files"
                    / "026-latex-multicolumn" / "multicolumn.pdf")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    found = {p.name: p for p in args.pdfs.rglob("*.pdf")}
    for gz in args.pdfs.rglob("*.pdf.gz"):  # the Maxima book ships gzipped
        dest = Path("/tmp") / gz.name[:-3]
        if not dest.exists():
            import gzip
            dest.write_bytes(gzip.decompress(gz.read_bytes()))
        found.setdefault(dest.name, dest)
    rows = []
    for name, pattern in REFERENCE.items():
        if name not in found:
            print(f"missing {name}", file=sys.stderr)
            continue
        row = {"pdf": name, "layout": "manual"}
        for label, after in (("before", False), ("after", True)):
            doc, chunks = chunks_of(found[name], after)
            bad = sum(debris(c, pattern) for c in chunks)
            codes = [code_intact(chunks, pg, b) for (m, pg), blocks in CODE.items() if m == name for b in blocks]
            row[label] = {"pages": len(doc.pages), "chunks": len(chunks), "debris_chunks": bad,
                          "debris_share": round(bad / max(1, len(chunks)), 4),
                          "broken_words": broken_words(chunks),
                          "code_blocks": len(codes), "code_together": sum(t for t, _ in codes),
                          "code_fenced": sum(f for _, f in codes),
                          "chars": sum(len(p) for p in doc.pages)}
        row["text_removed_share"] = round(1 - row["after"]["chars"] / row["before"]["chars"], 4)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.slides:
        for deck in sorted(args.slides.glob("beamerexample-*.pdf")):
            row = {"pdf": deck.name, "layout": "slides"}
            for label, after in (("before", False), ("after", True)):
                doc, chunks = chunks_of(deck, after)
                bad = sum(slide_debris(c) for c in chunks)
                row[label] = {"pages": len(doc.pages), "chunks": len(chunks), "debris_chunks": bad,
                              "debris_share": round(bad / max(1, len(chunks)), 4), "broken_words": broken_words(chunks)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    paper = None
    if args.paper.exists():
        paper = {"pdf": args.paper.name, "layout": "two-column paper"}
        for label, after in (("before", False), ("after", True)):
            doc, chunks = chunks_of(args.paper, after)
            first = doc.pages[0]
            paper[label] = {"chunks": len(chunks), "broken_words": broken_words(chunks),
                            "columns_in_order": 0 <= first.find("Nam dui ligula") < first.find("Phasellus adipiscing")}
        print(json.dumps(paper), flush=True)
    scan = scanned_page(found["R-intro.pdf"], 80) if "R-intro.pdf" in found else None
    if scan:
        print(json.dumps({"layout": "scanned page", **scan}), flush=True)
    manuals = [r for r in rows if r["layout"] == "manual"]
    total = {k: sum(r[k]["debris_chunks"] for r in manuals) / max(1, sum(r[k]["chunks"] for r in manuals))
             for k in ("before", "after")}
    code = {k: {"blocks": sum(r[k]["code_blocks"] for r in manuals),
                "together": sum(r[k]["code_together"] for r in manuals),
                "fenced": sum(r[k]["code_fenced"] for r in manuals)} for k in ("before", "after")}
    broken = {k: sum(r[k]["broken_words"] for r in rows) for k in ("before", "after")}
    out = {"pdfs": rows, "paper": paper, "scanned": scan,
           "debris_share_manuals": {k: round(v, 4) for k, v in total.items()},
           "code_blocks_manuals": code, "broken_words_all": broken, "command": " ".join(sys.argv)}
    print(json.dumps({k: out[k] for k in ("debris_share_manuals", "code_blocks_manuals", "broken_words_all")}))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
