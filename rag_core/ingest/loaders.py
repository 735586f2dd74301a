"""File loaders: bytes on disk -> `LoadedDocument`s in light Markdown.

Every format is normalised to the same light Markdown (`#` headings, `- ` list items,
`| a | b |` table rows, ``` fences) so that one chunker sees structure for all of them.
Every failure surfaces as `LoadError` with a short reason a user can act on; library
exceptions never escape, because the upload page and the CLI report show the message as is.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path

from rag_core.errors import LoadError, MissingDependency, UnsupportedFileType
from rag_core.models import LoadedDocument

__all__ = ["SUPPORTED_EXTENSIONS", "clean_pdf_text", "load_file", "title_from_filename"]

log = logging.getLogger(__name__)

_MIME = {
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".csv": "text/csv",
    ".jsonl": "application/jsonl",
}
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(_MIME)

EMPTY_FILE = "file is empty"
NOT_UTF8 = "not valid UTF-8 text"
PDF_NEEDS_PASSWORD = "encrypted PDF: a password is required"
PDF_WRONG_PASSWORD = "encrypted PDF: the password is wrong"
PDF_INVALID = "not a valid PDF (file is damaged or not a PDF)"
PDF_ONLY_IMAGES = "no text found (the PDF has only images; OCR is switched off: RAG_OCR)"
PDF_ONLY_IMAGES_OCR = "no text found (the PDF has only images, and OCR found no text in them)"
PDF_NO_TEXT_LAYER = "no text found (the PDF has no text layer; OCR is switched off: RAG_OCR)"
PDF_NO_TEXT_OCR = "no text found (the PDF has no text layer, and OCR found no text on its pages)"
DOCX_INVALID = "not a valid DOCX file"


# --------------------------------------------------------------------------- entry point


def load_file(
    path: Path,
    *,
    display_name: str | None = None,
    max_pages: int = 5000,
    password: str | None = None,
    ocr: bool = False,
    on_progress: Callable[[], None] | None = None,
) -> list[LoadedDocument]:
    """Load one file into documents (one per file; one per record for JSONL).

    The format comes from the extension of `path`, or of `display_name` when `path` has
    none we know: uploads are often saved under a temporary name, while the name the
    user gave keeps the real extension. `password` is used for encrypted PDFs only. `ocr`
    reads PDF pages that have no text layer with OCR; `on_progress` is called after each
    OCR'd page (slow work that is still moving, for the caller's time limit).
    """
    path = Path(path)
    source = display_name or path.name
    ext = _pick_extension(path, display_name)
    if ext not in SUPPORTED_EXTENSIONS:
        shown = f"'{ext}'" if ext else "(the file name has no extension)"
        raise UnsupportedFileType(
            f"unsupported file type {shown} (supported: {', '.join(sorted(SUPPORTED_EXTENSIONS))})"
        )
    try:
        if path.is_dir():
            raise LoadError("is a folder, not a file")
        if path.stat().st_size == 0:
            raise LoadError(EMPTY_FILE)
    except FileNotFoundError:
        raise LoadError("file not found") from None
    except PermissionError:
        raise LoadError("cannot read the file: permission denied") from None

    try:
        if ext == ".pdf":
            return [_load_pdf(path, source, max_pages=max_pages, password=password, ocr=ocr,
                              on_progress=on_progress)]
        if ext == ".docx":
            return [_load_docx(path, source)]
        data = path.read_bytes()
        if ext in (".html", ".htm"):
            return [_load_html(data, source)]
        if ext == ".jsonl":
            return _load_jsonl(data, source)
        if ext == ".csv":
            return [_load_csv(data, source)]
        return [_load_text(data, source, mime=_MIME[ext], markdown=ext in (".md", ".markdown"))]
    except LoadError:
        raise
    except PermissionError:
        raise LoadError("cannot read the file: permission denied") from None
    except Exception as exc:
        # A safety net for inputs no loader anticipated: the user gets a reason, the log
        # keeps the traceback for us.
        log.warning("unexpected error loading %s", source, exc_info=True)
        raise LoadError(f"could not read the file ({type(exc).__name__})") from exc


def _pick_extension(path: Path, display_name: str | None) -> str:
    ext = path.suffix.lower()
    if ext not in SUPPORTED_EXTENSIONS and display_name:
        alt = Path(display_name).suffix.lower()
        if alt in SUPPORTED_EXTENSIONS:
            return alt
    return ext


# --------------------------------------------------------------------------- titles

_FILENAME_SEPARATORS = re.compile(r"[-_.\s]+")
# Titles that PDF producers and word processors write when the author wrote none.
_PLACEHOLDER_TITLES = frozenset({"untitled", "title", "document", "unknown", "none", "null", "slide 1"})
_FILE_LIKE_TITLE = re.compile(r"\.(pdf|docx?|odt|rtf|txt|tex|dvi|ps|html?|pptx?|xlsx?)$", re.I)


def title_from_filename(name: str) -> str:
    """'rajiv-pant-biography.md' -> 'rajiv pant biography'."""
    stem = Path(name).stem or name
    words = [w for w in _FILENAME_SEPARATORS.split(stem) if w]
    return " ".join(words) or stem


def _meaningful_title(raw: object, source: str) -> str | None:
    """`raw` if it reads like a real title, else None (caller falls back to another source)."""
    if not isinstance(raw, str):
        return None
    title = " ".join(raw.replace("\x00", "").split())
    title = re.sub(r"^Microsoft (Word|PowerPoint) - ", "", title)
    if len(title) < 2 or title.lower() in _PLACEHOLDER_TITLES or _FILE_LIKE_TITLE.search(title):
        return None
    # Tools such as ImageMagick store the file name as the title: no better than our own.
    if title.lower() == Path(source).stem.lower():
        return None
    return title


# --------------------------------------------------------------------------- text decoding

_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_TEXT_SAMPLE = 65536
# Share of control characters above which "text" is really binary. Legitimate text has
# almost none; random or compressed bytes have ~12%.
_MAX_CONTROL_SHARE = 0.01


def _decode_text(data: bytes) -> str:
    """Bytes of a text file -> str with '\\n' line ends and no NULs, or a LoadError."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # Windows "Unicode" text files; without this they would be rejected as binary.
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise LoadError("not valid UTF-16 text") from None
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            # Legacy Windows/Latin files are common; binary files must still be refused,
            # and every byte decodes in latin-1, so the control-character test decides.
            try:
                text = data.decode("cp1252")
            except UnicodeDecodeError:
                text = data.decode("latin-1")
            if _looks_binary(text):
                raise LoadError(NOT_UTF8) from None
    if _looks_binary(text):
        raise LoadError("not a text file (it contains binary data)")
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    if not text.strip():
        raise LoadError(EMPTY_FILE)
    return text


def _looks_binary(text: str) -> bool:
    sample = text[:_TEXT_SAMPLE]
    return len(_CONTROL_CHARS.findall(sample)) > _MAX_CONTROL_SHARE * max(len(sample), 1)


# --------------------------------------------------------------------------- TXT / Markdown

_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _load_text(data: bytes, source: str, *, mime: str, markdown: bool) -> LoadedDocument:
    text = _decode_text(data)
    title = (_first_markdown_heading(text) if markdown else None) or title_from_filename(source)
    return LoadedDocument(source=source, title=title, mime=mime, pages=[text])


def _first_markdown_heading(text: str) -> str | None:
    """Text of the first level-1 ATX heading outside code fences."""
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is None:
            h = _ATX_HEADING.match(line)
            if h and len(h.group(1)) == 1:
                return h.group(2).strip()
    return None


# --------------------------------------------------------------------------- PDF

# Average visible characters per page below which a PDF with images is treated as a scan:
# scans often carry a stray text object ("Background", a page number) and nothing else.
_MIN_CHARS_PER_PAGE = 10
# Ligatures would hide "filled" from a keyword search for it; soft hyphens and NULs are noise.
_LIGATURES = str.maketrans(
    {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st", "\u00ad": None, "\x00": None}
)
_INLINE_SPACE = re.compile(r"[ \t\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=([^\W\d_]))")
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

    pages: list[str] = []
    failed: list[int] = []
    for number, page in enumerate(reader.pages, start=1):
        try:
            # "plain" follows the content stream, which is reading order for typeset
            # documents; "layout" interleaves the columns of multi-column pages line by line
            # (measured on the py-pdf multicolumn sample), which scrambles every sentence.
            raw = page.extract_text(extraction_mode="plain")
        except Exception:
            # One damaged page should not sink a long document; it is reported instead.
            log.info("%s: text extraction failed on page %d", source, number, exc_info=True)
            raw = ""
            failed.append(number)
        pages.append(clean_pdf_text(raw))

    if len(failed) == page_count:
        raise LoadError("could not extract text from any page (the PDF is damaged)")
    ocr_pages: list[int] = []
    blank = [i for i, p in enumerate(pages) if len("".join(p.split())) < _MIN_CHARS_PER_PAGE]
    if ocr and blank:  # scans, and text drawn as outlines: OCR reads both
        ocr_pages = _ocr_pages(path, password, blank, pages, on_progress)
    visible = sum(len("".join(p.split())) for p in pages)
    if visible < _MIN_CHARS_PER_PAGE * page_count:
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
    return LoadedDocument(source=source, title=title, mime=_MIME[".pdf"], pages=pages, metadata=metadata)


def _ocr_pages(path: Path, password: str | None, blank: list[int], pages: list[str],
               on_progress: Callable[[], None] | None) -> list[int]:
    """OCR the pages (0-based) that have no text layer, in place; the 1-based numbers of the
    pages that got text from it. Without the OCR engine the pages stay empty (and the file
    is refused as image-only, as before)."""
    from .ocr import lines_text, ocr_pdf_page

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
                text = clean_pdf_text(lines_text(ocr_pdf_page(page)))
                page.close()
            except MissingDependency:
                log.warning("OCR is not available; image-only pages are skipped", exc_info=True)
                return done
            if len("".join(text.split())) >= _MIN_CHARS_PER_PAGE:
                pages[i] = text
                done.append(i + 1)
            if on_progress:
                on_progress()
    finally:
        pdf.close()
    return done


def clean_pdf_text(text: str) -> str:
    """Tidy pypdf output: ligatures and NULs out, spaces collapsed, end-of-line hyphens joined.

    A hyphen at a line end is removed only when the next line starts lowercase
    ("exam-\\nple" -> "example"), so "Baden-\\nWürttemberg" and "2013-\\n2014" survive.
    """
    text = text.translate(_LIGATURES).replace("\r\n", "\n").replace("\r", "\n")
    lines = [_INLINE_SPACE.sub(" ", line).strip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = _LINE_END_HYPHEN.sub(lambda m: "" if m.group(1).islower() else "-\n", text)
    return _MANY_BLANK_LINES.sub("\n\n", text).strip()


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


# --------------------------------------------------------------------------- HTML

_HTML_SKIP = frozenset(
    {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "embed", "canvas", "select"}
)
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_BLOCKS = frozenset(
    {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "blockquote",
     "ul", "ol", "li", "dl", "dt", "dd", "figure", "figcaption", "form", "fieldset", "address",
     "details", "summary", "hr", "body", "html", "center", "caption"}
)


def _load_html(data: bytes, source: str) -> LoadedDocument:
    from bs4 import BeautifulSoup

    # Bytes, not str: BeautifulSoup honours <meta charset> and BOMs when it decodes itself.
    try:
        soup = BeautifulSoup(data, "lxml")
    except Exception:
        try:
            soup = BeautifulSoup(data, "html.parser")
        except Exception as exc:
            raise LoadError("not a readable HTML file") from exc
    try:
        text = _HtmlToMarkdown().convert(soup)
        title_tag = soup.find("title")
        h1 = soup.find("h1")
    except RecursionError:
        raise LoadError("the HTML is nested too deeply to read") from None
    if not text.strip():
        raise LoadError("no text found in the HTML page")
    title = (
        _meaningful_title(title_tag.get_text() if title_tag else None, source)
        or _meaningful_title(h1.get_text() if h1 else None, source)
        or title_from_filename(source)
    )
    return LoadedDocument(source=source, title=title, mime=_MIME[".html"], pages=[text])


def _squash(text: str) -> str:
    return " ".join(text.split())


def _fenced(code: str) -> str:
    code = code.strip("\n")
    fence = "~~~~" if "```" in code else "```"
    return f"{fence}\n{code}\n{fence}"


def _pipe_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _pipe_table(rows: list[list[str]]) -> str:
    """Rows -> Markdown table; the first row is the header, followed by its separator."""
    rows = [r for r in rows if any(c for c in r)]
    if not rows:
        return ""
    lines = [_pipe_row(rows[0]), _pipe_row(["---"] * len(rows[0]))]
    lines += [_pipe_row(r) for r in rows[1:]]
    return "\n".join(lines)


class _HtmlToMarkdown:
    """Walks the tree with an explicit stack: recursion would overflow on deeply nested pages."""

    def __init__(self) -> None:
        self._out: list[tuple[str, str]] = []  # (kind, text); kind "item" lines stay adjacent
        self._inline: list[str] = []
        self._list_depth = 0
        self._pending_item = False

    def convert(self, soup) -> str:
        from bs4 import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction

        skip_strings = (Comment, Declaration, Doctype, ProcessingInstruction)
        end = object()
        stack: list[tuple[str, object]] = [("", iter(soup.contents))]
        while stack:
            name, children = stack[-1]
            node = next(children, end)
            if node is end:
                stack.pop()
                self._leave(name)
                continue
            if isinstance(node, NavigableString):
                if not isinstance(node, skip_strings):
                    self._inline.append(str(node))
                continue
            tag = node.name
            if tag in _HTML_SKIP or node.has_attr("hidden"):
                continue
            if tag in _HTML_HEADINGS:
                self._flush()
                text = _squash(node.get_text())
                if text:
                    self._out.append(("block", "#" * _HTML_HEADINGS[tag] + " " + text))
            elif tag == "pre":
                self._flush()
                if node.get_text().strip():
                    self._out.append(("block", _fenced(node.get_text())))
            elif tag == "table":
                self._flush()
                self._table(node)
            elif tag == "br":
                self._inline.append("\n")
            elif tag == "code" and "\n" not in node.get_text():
                self._inline.append(f"`{node.get_text()}`")
            elif tag == "img":
                alt = node.get("alt")
                if isinstance(alt, str) and alt.strip():
                    self._inline.append(f" {alt.strip()} ")
            else:
                self._enter(tag)
                stack.append((tag, iter(node.contents)))
        self._flush()
        return self._join()

    def _enter(self, tag: str) -> None:
        if tag in _HTML_BLOCKS or tag == "code":
            self._flush()
        if tag in ("ul", "ol"):
            self._list_depth += 1
        elif tag == "li":
            self._pending_item = True

    def _leave(self, tag: str) -> None:
        if tag in _HTML_BLOCKS:
            self._flush()
        if tag in ("ul", "ol"):
            self._list_depth = max(0, self._list_depth - 1)
        elif tag == "li":
            self._pending_item = False

    def _flush(self) -> None:
        if not self._inline:
            return
        lines = [_squash(line) for line in "".join(self._inline).split("\n")]
        self._inline = []
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        indent = "  " * min(max(0, self._list_depth - 1), 6)  # deep nesting: cap, don't drift right
        if self._pending_item:
            self._pending_item = False
            self._out.append(("item", indent + "- " + text.replace("\n", " ")))
        elif self._list_depth:
            self._out.append(("item", indent + "  " + text.replace("\n", " ")))
        else:
            self._out.append(("block", text))

    def _table(self, table) -> None:
        caption = table.find("caption")
        if caption is not None and caption.find_parent("table") is table:
            if text := _squash(caption.get_text()):
                self._out.append(("block", text))
        rows = [
            [_squash(cell.get_text(" ")) for cell in tr.find_all(["td", "th"], recursive=False)]
            for tr in table.find_all("tr")
            if tr.find_parent("table") is table  # nested tables are flattened into their cell
        ]
        if md := _pipe_table(rows):
            self._out.append(("block", md))

    def _join(self) -> str:
        parts: list[str] = []
        prev = ""
        for kind, text in self._out:
            if parts:
                parts.append("\n" if kind == prev == "item" else "\n\n")
            parts.append(text)
            prev = kind
        return "".join(parts)


# --------------------------------------------------------------------------- DOCX

_DOCX_HEADING = re.compile(r"^heading (\d)$", re.I)


def _load_docx(path: Path, source: str) -> LoadedDocument:
    import docx
    from docx.table import Table

    try:
        document = docx.Document(str(path))
    except Exception as exc:
        raise LoadError(DOCX_INVALID) from exc

    blocks: list[tuple[str, str]] = []
    first_heading: str | None = None
    try:
        # iter_inner_content walks document.element.body's children, so paragraphs and
        # tables come out interleaved in reading order.
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                if md := _pipe_table(_docx_rows(item)):
                    blocks.append(("block", md))
                continue
            text = "\n".join(_squash(line) for line in item.text.split("\n") if line.strip())
            if not text:
                continue
            kind, level = _docx_paragraph_kind(item)
            if kind == "heading":
                text = _squash(text)
                first_heading = first_heading or text
                blocks.append(("block", "#" * level + " " + text))
            elif kind == "item":
                blocks.append(("item", "- " + _squash(text)))
            else:
                blocks.append(("block", text))
        raw_title = document.core_properties.title
    except Exception as exc:
        raise LoadError(f"{DOCX_INVALID} (its content could not be read)") from exc

    if not blocks:
        raise LoadError("no text found in the document")
    parts: list[str] = []
    for i, (kind, text) in enumerate(blocks):
        if i:
            parts.append("\n" if kind == blocks[i - 1][0] == "item" else "\n\n")
        parts.append(text)
    title = _meaningful_title(raw_title, source) or first_heading or title_from_filename(source)
    return LoadedDocument(source=source, title=title, mime=_MIME[".docx"], pages=["".join(parts)])


def _docx_paragraph_kind(paragraph) -> tuple[str, int]:
    try:
        style = (paragraph.style.name or "") if paragraph.style is not None else ""
    except Exception:
        style = ""
    if style == "Title":
        return "heading", 1
    if m := _DOCX_HEADING.match(style):
        return "heading", min(max(int(m.group(1)), 1), 6)
    p_pr = paragraph._p.pPr
    # Lists made with the toolbar carry numbering properties rather than a "List" style.
    if "List" in style or (p_pr is not None and p_pr.numPr is not None):
        return "item", 0
    return "paragraph", 0


def _docx_rows(table) -> list[list[str]]:
    rows = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            # A merged cell is returned once per grid column it spans; keep it once.
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(_squash(cell.text))
        rows.append(cells)
    return rows


# --------------------------------------------------------------------------- CSV


def _load_csv(data: bytes, source: str) -> LoadedDocument:
    text = _decode_text(data)
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:_TEXT_SAMPLE], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    header: list[str] | None = None
    records: list[str] = []
    try:
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [_squash(h) or f"column {i + 1}" for i, h in enumerate(row)]
                continue
            names = header + [f"column {i + 1}" for i in range(len(header), len(row))]
            values = row + [""] * (len(names) - len(row))
            # One record per row, rows separated by blank lines: the chunker then packs
            # whole rows into chunks and never cuts one in half unless it alone is too long.
            records.append("\n".join(f"{n}: {_squash(v)}".rstrip() for n, v in zip(names, values)))
    except csv.Error as exc:
        raise LoadError(f"not a valid CSV file (line {reader.line_num}: {exc})") from None
    if not records:
        raise LoadError("no rows found (the CSV has only a header)")
    return LoadedDocument(
        source=source,
        title=title_from_filename(source),
        mime=_MIME[".csv"],
        pages=["\n\n".join(records)],
        metadata={"rows": len(records), "columns": header},
    )


# --------------------------------------------------------------------------- JSONL

_JSONL_RESERVED = ("_id", "id", "title", "text")


def _load_jsonl(data: bytes, source: str) -> list[LoadedDocument]:
    """One document per record {"_id"|"id", "title", "text", ...}.

    Strict on purpose: the first line that is not a JSON object with a "text" field, or
    that repeats an id, fails the whole file, so a corpus is never half-imported silently.
    Blank lines, and records whose text and title are both empty, are skipped. A record
    without an id gets doc_id None: the caller derives one as for any other document.
    """
    text = _decode_text(data)
    docs: list[LoadedDocument] = []
    seen: dict[str, int] = {}
    mime = _MIME[".jsonl"]
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise LoadError(f"line {line_no}: not valid JSON") from None
        if not isinstance(record, dict):
            raise LoadError(f"line {line_no}: expected a JSON object")
        if "text" not in record:
            raise LoadError(f'line {line_no}: no "text" field')
        body = _as_text(record["text"])
        title = _as_text(record.get("title"))
        if not body.strip() and not title.strip():
            continue
        raw_id = record.get("_id", record.get("id"))
        doc_id = _as_text(raw_id) or None
        if doc_id is not None:
            if doc_id in seen:
                raise LoadError(f"line {line_no}: duplicate id '{doc_id}' (first on line {seen[doc_id]})")
            seen[doc_id] = line_no
        docs.append(
            LoadedDocument(
                source=source,
                title=title,
                mime=mime,
                pages=[body if body.strip() else title],
                doc_id=doc_id,
                metadata={k: v for k, v in record.items() if k not in _JSONL_RESERVED},
            )
        )
    if not docs:
        raise LoadError("no records found (every line is blank or has no text)")
    return docs


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)

