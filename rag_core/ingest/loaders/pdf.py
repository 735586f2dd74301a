"""PDF: pypdf's text per page; pages without a text layer read by OCR (ocr.py)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path

from rag_core.errors import LoadError, MissingDependency, OcrUnavailable
from rag_core.models import LoadedDocument

from . import pdf_layout
from .common import LoadOptions, _meaningful_title, parse_date, title_from_filename
from .pdf_layout import Line

log = logging.getLogger(__name__)
EXTENSIONS = {".pdf": "application/pdf"}
PDF_NEEDS_PASSWORD = "encrypted PDF: a password is required"
PDF_WRONG_PASSWORD = "encrypted PDF: the password is wrong"
PDF_INVALID = "not a valid PDF (file is damaged or not a PDF)"
PDF_ONLY_IMAGES = "no text found (the PDF has only images; OCR is switched off: RAG_OCR)"
PDF_ONLY_IMAGES_OCR = "no text found (the PDF has only images, and OCR found no text in them)"
PDF_NO_TEXT_LAYER = "no text found (the PDF has no text layer; OCR is switched off: RAG_OCR)"
PDF_NO_TEXT_OCR = "no text found (the PDF has no text layer, and OCR found no text on its pages)"


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    return [_load_pdf(path, source, max_pages=opts.max_pages, password=opts.password, ocr=opts.ocr,
                      on_progress=opts.on_progress)]


# Average visible characters per page below which a PDF with images is treated as a scan:
# scans often carry a stray text object ("Background", a page number) and nothing else.
MIN_CHARS_PER_PAGE = 10
# Ligatures would hide "filled" from a keyword search for it; soft hyphens and NULs are noise.
_LIGATURES = str.maketrans(
    {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st", "\u00ad": None, "\x00": None}
)
_INLINE_SPACE = re.compile(r"[ \t\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_LINE_END_HYPHEN = re.compile(r"(\S*[^\W\d_])-\n(?=([^\W\d_]))")
_MANY_BLANK_LINES = re.compile(r"\n{3,}")


def _load_pdf(path: Path, source: str, *, max_pages: int, password: str | None, ocr: bool = False,
              on_progress: Callable[[], None] | None = None) -> LoadedDocument:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            # Many "encrypted" PDFs only restrict permissions and open with an empty password.
            if not reader.decrypt(password or ""):
                raise LoadError(PDF_WRONG_PASSWORD if password else PDF_NEEDS_PASSWORD)
        page_count = len(reader.pages)
    except LoadError:
        raise
    except FileNotDecryptedError:
        raise LoadError(PDF_NEEDS_PASSWORD) from None
    except DependencyError:
        raise LoadError("encrypted PDF: decrypting it needs the 'cryptography' package") from None
    except Exception as exc:
        raise LoadError(PDF_INVALID) from exc

    if page_count == 0:
        raise LoadError("the PDF has no pages")
    if page_count > max_pages:
        raise LoadError(f"too many pages: {page_count} (the limit is {max_pages})")

    page_lines: list[list[Line]] = []
    failed: list[int] = []
    for number, page in enumerate(reader.pages, start=1):
        try:
            # "plain" follows the content stream, which is reading order for typeset
            # documents; "layout" interleaves the columns of multi-column pages line by line
            # (measured on the py-pdf multicolumn sample), which scrambles every sentence.
            lines = pdf_layout.page_lines(page)
        except Exception as exc:
            # One damaged page should not sink a long document; it is reported instead: the
            # page numbers go into the document's warnings, which the ingest report shows.
            log.warning("%s: text extraction failed on page %d (%s: %s)", source, number, type(exc).__name__, exc)
            log.debug("page %d of %s", number, source, exc_info=True)
            lines = []
            failed.append(number)
        for x in lines:
            x.text = _clean_line(x.text)
        page_lines.append(lines)

    if len(failed) == page_count:
        raise LoadError("could not extract text from any page (the PDF is damaged)")
    pages = structured_pages(page_lines)
    ocr_pages: list[int] = []
    ocr_lines: dict[str, list] = {}
    blank = [i for i, p in enumerate(pages) if len("".join(p.split())) < MIN_CHARS_PER_PAGE]
    if ocr and blank:  # scans, and text drawn as outlines: OCR reads both
        ocr_pages = _ocr_pages(path, password, blank, pages, on_progress, ocr_lines)
    visible = sum(len("".join(p.split())) for p in pages)
    if visible < MIN_CHARS_PER_PAGE * page_count:
        has_images = _pdf_has_images(reader)
        if visible == 0 or has_images:
            if ocr:
                raise LoadError(PDF_ONLY_IMAGES_OCR if has_images else PDF_NO_TEXT_OCR)
            raise LoadError(PDF_ONLY_IMAGES if has_images else PDF_NO_TEXT_LAYER)

    try:
        raw_title = (reader.metadata or {}).get("/Title")
    except Exception:  # broken /Info dictionaries are common and harmless
        raw_title = None
    title = _meaningful_title(raw_title, source) or title_from_filename(source)
    metadata: dict = {"failed_pages": failed} if failed else {}
    if ocr_pages:
        metadata["ocr_pages"] = ocr_pages
        # the lines and their boxes, kept with the original: the page viewer marks a citation
        # on them without reading the page again (citation_view.render_pdf_page)
        metadata["ocr_lines"] = ocr_lines
    if stated := _pdf_date(reader):
        metadata["date"] = stated
    unread = [n for n in failed if n not in ocr_pages]  # OCR may have read a page pypdf could not
    if unread:
        metadata["ingest_warnings"] = [failed_pages_warning(unread)]
    return LoadedDocument(source=source, title=title, mime=EXTENSIONS[".pdf"], pages=pages, metadata=metadata)


def _pdf_date(reader) -> str | None:
    """/ModDate, else /CreationDate, else the same two from the XMP packet. Modification
    first: it dates the version whose text was read."""
    getters = (
        lambda: reader.metadata.modification_date_raw,
        lambda: reader.metadata.creation_date_raw,
        lambda: reader.xmp_metadata.xmp_modify_date,
        lambda: reader.xmp_metadata.xmp_create_date,
    )
    for get in getters:
        try:
            if stated := parse_date(get()):
                return stated
        except Exception:  # noqa: BLE001 - broken /Info and XMP are common; a bad date is no date
            continue
    return None


def failed_pages_warning(pages: list[int]) -> str:
    """The line the ingest report shows for pages whose text could not be read."""
    shown = ", ".join(map(str, pages[:20])) + (f" and {len(pages) - 20} more" if len(pages) > 20 else "")
    many = len(pages) > 1
    return (f"text could not be extracted from page{'s' if many else ''} {shown} (damaged page content); "
            f"{'they are' if many else 'it is'} left out")


def _ocr_pages(path: Path, password: str | None, blank: list[int], pages: list[str],
               on_progress: Callable[[], None] | None, lines_out: dict[str, list] | None = None) -> list[int]:
    """OCR the pages (0-based) that have no text layer, in place; the 1-based numbers of the
    pages that got text from it. `lines_out` receives each such page's OCR lines as
    {"<page>": [[text, [x0, y0, x1, y1]], …]} (boxes in OCR_SCALE pixels). Without the OCR
    engine the pages stay empty (and the file is refused as image-only, as before)."""
    from ..ocr import lines_text, ocr_pdf_page

    try:
        import pypdfium2 as pdfium

        pdf = pdfium.PdfDocument(str(path), password=password)
    except Exception:  # noqa: BLE001 - pypdf read it; if PDFium cannot, there is nothing to OCR
        log.info("%s: PDFium could not open it for OCR", path.name, exc_info=True)
        return []
    done = []
    try:
        for i in blank:
            try:
                page = pdf[i]
                lines = ocr_pdf_page(page)
                text = clean_pdf_text(lines_text(lines))
                page.close()
            except MissingDependency as exc:
                if len(blank) == len(pages):
                    # An image-only file with no OCR is not a file without text: say so (the
                    # isolated reader retries it once in a fresh process, where an import that
                    # found no room under the memory cap usually succeeds).
                    raise OcrUnavailable(f"OCR could not start ({str(exc)[:80]})") from exc
                log.warning("OCR is not available; image-only pages are skipped", exc_info=True)
                return done
            if len("".join(text.split())) >= MIN_CHARS_PER_PAGE:
                pages[i] = text
                done.append(i + 1)
                if lines_out is not None:
                    lines_out[str(i + 1)] = [[ln.text, [round(float(v), 1) for v in ln.box]] for ln in lines]
            if on_progress:
                on_progress()
    finally:
        pdf.close()
    return done


_EDGE_LINES = 2  # running heads and feet live in a page's first and last lines
_MAX_RUNNING_WORDS = 16  # they are short; a longer recurring line is content (a table row, a log line)
_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–—]?\s*(\d{1,5}|[ivxlcdm]{1,7})\s*[-–—]?(?:\s*(?:of|/)\s*\d+)?$", re.I)
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def _edge_key(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.lower().split()))


def _shape(key: str) -> str | None:
    """A chapter head's template, its title aside: "chapter #: … #" for every chapter's
    "Chapter 9: Grouping, loops 41", so a chapter of one or two pages is recognised too."""
    t = key.split()
    return f"{t[0]} {t[1]} … #" if len(t) >= 3 and t[-1] == "#" and "#" in t[1] else None


def _number(line: str) -> int | None:
    """The page number a bare page-number line shows ("17", "- 3 -", "Page 2 of 9", "xiv")."""
    m = _PAGE_NUMBER.match(" ".join(line.split()))
    if not m:
        return None
    tok = m.group(1).lower()
    if tok.isdigit():
        return int(tok)
    vals = [_ROMAN[ch] for ch in tok]
    return sum(-v if i + 1 < len(vals) and v < vals[i + 1] else v for i, v in enumerate(vals))


def _recurring(at: list[int]) -> bool:
    """On at least 3 pages, and on at least 30% of the pages from the first to the last."""
    return len(at) >= 3 and len(at) >= 0.3 * (at[-1] - at[0] + 1)


def running_lines(split: list[list[str]]) -> list[set[int]]:
    """Running headers and footers out, page by page. A line among a page's first or last two
    lines goes when
    - its text, digits aside ("Chapter 3: Objects 15", "gnuplot 5.4 31"), recurs at a page edge
      on at least 3 pages and on at least 30% of the pages from its first to its last occurrence
      (a chapter's head on every page, or on every other page for facing pages), or its
      template does ("chapter #: … #", for chapters too short to repeat their own head), or
    - it is a bare page number ("17", "- 3 -", "Page 2 of 9", "xiv") that keeps step with the
      page: the same number-minus-page offset on 3 or more pages by the same rule. A lone "6" at
      the foot of a page of maths output does not, and stays.
    The same line recurring rarely at a page top ("Example") is content and stays; so do
    footnotes. Spliced into passages such lines ended up inside answers."""
    if len(split) < 3:
        return [set() for _ in split]

    def edges(lines: list[str]) -> list[str]:
        return [x for x in lines[:_EDGE_LINES] + lines[-_EDGE_LINES:] if x.strip()]

    seen: dict[str, list[int]] = {}
    offsets: dict[int, list[int]] = {}
    for i, lines in enumerate(split):
        edge = edges(lines)
        keys = {_edge_key(x) for x in edge}
        for k in keys | {sh for k in keys if (sh := _shape(k))}:
            seen.setdefault(k, []).append(i)
        for off in {n - i for x in edge if (n := _number(x)) is not None}:
            offsets.setdefault(off, []).append(i)
    running = {k for k, at in seen.items()
               if _recurring(at) and any(ch.isalpha() for ch in k) and len(k.split()) <= _MAX_RUNNING_WORDS}
    steps = {off for off, at in offsets.items() if _recurring(at)}

    def debris(x: str, i: int) -> bool:
        n, k = _number(x), _edge_key(x)
        return k in running or _shape(k) in running or (n is not None and n - i in steps)

    drops = []
    for i, lines in enumerate(split):
        n = len(lines)
        drop = {j for j, x in enumerate(lines)
                if (j < _EDGE_LINES or j >= n - _EDGE_LINES) and x.strip() and debris(x, i)}
        # a page that is nothing but such lines keeps them
        drops.append(drop if any(x.strip() for j, x in enumerate(lines) if j not in drop) else set())
    return drops


def structured_pages(page_lines: list[list[Line]]) -> list[str]:
    """Each page's text as light Markdown (pdf_layout.render: code fenced, headings, bullets),
    running heads and feet out, end-of-line hyphens joined outside code."""
    body = pdf_layout.body_size(page_lines)
    drops = running_lines([[x.text for x in lines] for lines in page_lines])
    for drop, small in zip(drops, pdf_layout.recurring_small_lines(page_lines, body)):
        drop |= small
    levels = pdf_layout.heading_levels(page_lines, body)
    out = []
    for i, lines in enumerate(page_lines):
        kept = [x for j, x in enumerate(lines) if j not in drops[i]]
        out.append(_join_hyphens(pdf_layout.render(kept, body, levels)))
    _join_page_hyphens(out)
    return out


_PAGE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-$")
_PAGE_START_WORD = re.compile(r"[^\W\d_A-Z]\w*[.,;:!?)]*[ \t]*")


def _join_page_hyphens(pages: list[str]) -> None:
    """A word hyphenated over a page break ("hex-" | "adecimal RGB …") is made whole on the
    first page: the next page's first word moves back, so the word is searchable and a page
    still cites the text it shows (less one word)."""
    for i in range(len(pages) - 1):
        m = _PAGE_END_HYPHEN.search(pages[i])
        n = _PAGE_START_WORD.match(pages[i + 1]) if m else None
        if m and n:
            pages[i] = pages[i][:m.start()] + n.group(0).rstrip()
            pages[i + 1] = pages[i + 1][n.end():].lstrip(" \t")


def _clean_line(line: str) -> str:
    return _INLINE_SPACE.sub(" ", line.translate(_LIGATURES).replace("\r", "")).strip()


def _hyphen(m: re.Match) -> str:
    """Join "exam-|ple"; keep the hyphen of a compound or an option that already has one
    ("state-of-the-|art", "--with-|internal-wcwidth") and before a capital ("Baden-|Württemberg")."""
    word = m.group(1)
    return word + ("" if m.group(2).islower() and "-" not in word else "-\n")


def _join_hyphens(text: str) -> str:
    """A hyphen at a line end is removed only when the next line starts lowercase
    ("exam-\\nple" -> "example"), so "Baden-\\nWürttemberg" and "2013-\\n2014" survive; code
    between ``` fences is left exactly as set."""
    parts = re.split(r"(^```\n.*?\n```$)", text, flags=re.S | re.M)
    for k in range(0, len(parts), 2):
        parts[k] = _SPACED_ELLIPSIS.sub("…", _LINE_END_HYPHEN.sub(_hyphen, parts[k]))
    return _MANY_BLANK_LINES.sub("\n\n", "".join(parts)).strip()


# TeX's \dots set as ". . ." read as three sentence ends: "local files, . . .)" split into
# fragments and drew citation markers between the dots (issue 50). One ellipsis character.
_SPACED_ELLIPSIS = re.compile(r"(?<![.\w])\.(?:[ \u00a0]\.){2}(?![ \u00a0]?\.)")


def clean_pdf_text(text: str) -> str:
    """Tidy text from a PDF (OCR'd pages too): ligatures and NULs out, spaces collapsed,
    end-of-line hyphens joined (`_join_hyphens`)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _join_hyphens("\n".join(_clean_line(line) for line in text.split("\n")))


def _pdf_has_images(reader) -> bool:
    for page in reader.pages:
        try:
            resources = page.get("/Resources")
            xobjects = resources.get_object().get("/XObject") if resources else None
            if not xobjects:
                continue
            xobjects = xobjects.get_object()
            if any(xobjects[name].get_object().get("/Subtype") == "/Image" for name in xobjects):
                return True
        except Exception:
            continue
    return False
