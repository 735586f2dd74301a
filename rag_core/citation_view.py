"""The evidence behind a citation, where it is: the cited PDF page rendered as an image with
the passage highlighted, or, for other formats, the passage inside its neighbouring text.

The passage text comes from our loader (pypdf), the boxes from PDFium's text layer; the two
extract the same page with different spacing, hyphenation and line order, so the passage is
aligned to the page word by word (difflib's longest matching blocks), not searched as a string.
"""

from __future__ import annotations

import ctypes
import difflib
import io
import json
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError
from .ingest.loaders.pdf import MIN_CHARS_PER_PAGE
from .stores.adjacent import head_after, tail_before

_WORD = re.compile(r"\w+")
# PDFium is not thread-safe (its docs and pypdfium2's say so) and Streamlit serves every
# session from its own thread: one lock around every PDFium call.
_PDFIUM = threading.Lock()
HIGHLIGHT_FILL = (255, 214, 0, 90)  # translucent yellow over the passage
HIGHLIGHT_EDGE = (230, 120, 0, 255)  # an orange outline, so the box shows on yellow paper too


@dataclass
class PageView:
    png: bytes
    page: int  # 1-based
    pages: int
    width: int
    height: int
    boxes: list[tuple[int, int, int, int]] = field(default_factory=list)  # highlight (x0, y0, x1, y1) in pixels
    matched: float = 0.0  # share of the passage's words found on this page
    has_text_layer: bool = True
    span: tuple[int, int] = (0, 0)  # pages the cited passage runs over (set by the caller that knows the chunk)
    ocr: bool = False  # the page has no text layer; the highlight sits on OCR'd text lines


def _import_pdfium():
    try:
        import pypdfium2 as pdfium
        import pypdfium2.raw as raw
    except ImportError as exc:  # pragma: no cover - it is in requirements.txt
        raise InputError("the page viewer needs pypdfium2: pip install -r requirements.txt") from exc
    return pdfium, raw


def _words(text: str) -> list[tuple[str, int, int]]:
    """(normalised word, start, end) with offsets into `text`. Each character is NFKC-folded on
    its own, so ligatures (ﬁ) and Arabic presentation forms, which PDFium returns as drawn and
    pypdf as letters, compare equal while offsets still point into the original text."""
    norm, where = [], []
    for i, ch in enumerate(text):
        folded = unicodedata.normalize("NFKC", ch).lower() if ord(ch) > 127 else ch.lower()
        norm.append(folded)
        where.extend([i] * len(folded))
    flat = "".join(norm)
    return [(m.group(), where[m.start()], where[m.end() - 1] + 1) for m in _WORD.finditer(flat)]


def align(page_text: str, passage: str, min_block: int = 3) -> tuple[list[tuple[int, int]], float]:
    """Character ranges of `page_text` that hold the passage, and the share of the passage's
    words they cover. Blocks shorter than `min_block` words are chance matches ("of the")
    unless the whole passage is that short."""
    pw, qw = _words(page_text), _words(passage)
    if not pw or not qw:
        return [], 0.0
    sm = difflib.SequenceMatcher(None, [w for w, _, _ in pw], [w for w, _, _ in qw], autojunk=False)
    need = min(min_block, len(qw))
    ranges, covered = [], 0
    for a, _b, size in sm.get_matching_blocks():
        if size >= need:
            end = pw[a + size - 1][2]
            while end < len(page_text) and page_text[end] in ".,;:!?)]\"'’”":  # the sentence's own stop
                end += 1
            ranges.append((pw[a][1], end))
            covered += size
    return ranges, covered / len(qw)


def _page_text(raw, textpage) -> str:
    """The page's characters indexed exactly as PDFium indexes them (get_text_range can
    differ in length where the page has characters outside the BMP)."""
    n = raw.FPDFText_CountChars(textpage)
    return "".join(chr(raw.FPDFText_GetUnicode(textpage, i) or 32) for i in range(max(n, 0)))


def _line_rects(raw, textpage, start: int, end: int) -> list[tuple[float, float, float, float]]:
    """PDFium merges a character range into one rectangle per line: (left, top, right, bottom) in page points."""
    n = raw.FPDFText_CountRects(textpage, start, end - start)
    out = []
    for i in range(n):
        l, t, r, b = (ctypes.c_double() for _ in range(4))
        if raw.FPDFText_GetRect(textpage, i, l, t, r, b):
            out.append((l.value, t.value, r.value, b.value))
    return out


def _to_pixels(raw, page, rect, width: int, height: int) -> tuple[int, int, int, int]:
    """Page points to image pixels, honouring the crop box and the page's rotation."""
    xs, ys = [], []
    for px, py in ((rect[0], rect[1]), (rect[2], rect[3])):
        dx, dy = ctypes.c_int(), ctypes.c_int()
        raw.FPDF_PageToDevice(page, 0, 0, width, height, 0, px, py, dx, dy)
        xs.append(dx.value)
        ys.append(dy.value)
    return min(xs), min(ys), max(xs), max(ys)


def merge_boxes(boxes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Glyph boxes to one box per run of text on a line (some PDFs place every glyph as its
    own object, so PDFium's per-line rectangles come back per glyph)."""
    lines: list[list[tuple[int, int, int, int]]] = []
    for b in sorted(boxes, key=lambda b: (b[1] + b[3]) / 2):
        if lines:
            top = min(x[1] for x in lines[-1])
            bottom = max(x[3] for x in lines[-1])
            if min(b[3], bottom) - max(b[1], top) > 0.5 * min(b[3] - b[1], bottom - top):
                lines[-1].append(b)
                continue
        lines.append([b])
    out = []
    for line in lines:
        run: list[int] | None = None
        for x0, y0, x1, y1 in sorted(line):
            if run and x0 - run[2] < 1.5 * max(run[3] - run[1], 1):
                run[:] = [min(run[0], x0), min(run[1], y0), max(run[2], x1), max(run[3], y1)]
            else:
                if run:
                    out.append(tuple(run))
                run = [x0, y0, x1, y1]
        out.append(tuple(run))
    return out


def stored_ocr_lines(path: Path, page: int) -> list | None:
    """The OCR lines ingestion kept for this page of a stored original (ingest.pipeline's
    sidecar), as OcrLine; None when none were kept (a file ingested before, or a text page)."""
    from .ingest.ocr import OcrLine
    from .ingest.pipeline import ocr_sidecar

    side = ocr_sidecar(path)
    try:
        lines = json.loads(side.read_text()).get(str(page)) if side.exists() else None
    except (OSError, ValueError):
        return None
    if not isinstance(lines, list):
        return None
    return [OcrLine(str(t), tuple(float(v) for v in box), 1.0) for t, box in lines]


def render_pdf_page(path: Path, page: int, passage: str, scale: float = 1.6, ocr: bool = True) -> PageView:
    """One page of a PDF as a PNG, with the passage (when it is on this page) highlighted.
    A page without a text layer is marked on the OCR lines ingestion kept for it, or, where it
    kept none, read by OCR again (when `ocr`), as ingestion read it."""
    from PIL import Image, ImageDraw

    pdfium, raw = _import_pdfium()
    scan = None
    kept = None
    with _PDFIUM:
        pdf = pdfium.PdfDocument(str(path))
        try:
            pages = len(pdf)
            if not 1 <= page <= pages:
                raise InputError(f"page {page} is outside this document (1–{pages})")
            pg = pdf[page - 1]
            img = pg.render(scale=scale, rotation=0).to_pil().convert("RGBA")
            textpage = pg.get_textpage()
            text = _page_text(raw, textpage.raw)
            has_text = len("".join(text.split())) >= MIN_CHARS_PER_PAGE  # as the loader decides it
            boxes = []
            if has_text:
                ranges, matched = align(text, passage)
                for start, end in ranges:
                    for rect in _line_rects(raw, textpage.raw, start, end):
                        boxes.append(_to_pixels(raw, pg.raw, rect, img.width, img.height))
            elif ocr:
                from .ingest.ocr import OCR_SCALE

                kept = stored_ocr_lines(path, page)
                if kept is None:
                    scan = pg.render(scale=OCR_SCALE).to_pil()
            textpage.close()
            pg.close()
        finally:
            pdf.close()
    if kept is not None:
        from .ingest.ocr import OCR_SCALE

        boxes, matched = _ocr_boxes(kept, passage, scale / OCR_SCALE)
    elif scan is not None:  # OCR outside the PDFium lock: it takes a second and needs no PDFium
        from .ingest.ocr import OCR_SCALE, get_engine

        try:
            lines = get_engine().read(scan)
        except Exception:  # noqa: BLE001 - no OCR engine here: show the page unmarked
            lines = []
        boxes, matched = _ocr_boxes(lines, passage, scale / OCR_SCALE)
    elif not has_text:
        matched = 0.0
    boxes = merge_boxes(boxes)
    if boxes:
        overlay = Image.new("RGBA", img.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        for x0, y0, x1, y1 in boxes:
            draw.rectangle((x0 - 2, y0 - 2, x1 + 2, y1 + 2), fill=HIGHLIGHT_FILL, outline=HIGHLIGHT_EDGE, width=2)
        img = Image.alpha_composite(img, overlay)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="PNG", optimize=False)
    return PageView(buf.getvalue(), page, pages, img.width, img.height, boxes, matched, has_text,
                    ocr=scan is not None or kept is not None)


def highlight_band(view: PageView, margin: int = 60, min_height: int = 240) -> bytes | None:
    """The page's full-width band around the highlighted lines, as a PNG: the cited
    sentences shown first and in view (a tall page scaled to the dialog's width put them
    below the fold). None when nothing is highlighted."""
    if not view.boxes:
        return None
    from PIL import Image

    top = max(min(b[1] for b in view.boxes) - margin, 0)
    bottom = min(max(b[3] for b in view.boxes) + margin, view.height)
    if bottom - top < min_height:  # a line or two: some context above and below
        grow = (min_height - (bottom - top)) // 2
        top, bottom = max(top - grow, 0), min(bottom + grow, view.height)
    img = Image.open(io.BytesIO(view.png))
    buf = io.BytesIO()
    img.crop((0, top, view.width, bottom)).save(buf, format="PNG")
    return buf.getvalue()


def _ocr_boxes(lines, passage: str, factor: float) -> tuple[list[tuple[int, int, int, int]], float]:
    """Boxes for the passage over OCR lines: the matched characters' share of each line's
    width (OCR gives a box per line, not per character)."""
    text, spans, at = [], [], 0
    for ln in lines:
        spans.append((at, at + len(ln.text), ln))
        text.append(ln.text)
        at += len(ln.text) + 1
    ranges, matched = align("\n".join(text), passage)
    boxes = []
    for a, b in ranges:
        for start, end, ln in spans:
            lo, hi = max(a, start), min(b, end)
            if lo >= hi:
                continue
            x0, y0, x1, y1 = ln.box
            n = max(end - start, 1)
            left = x0 + (x1 - x0) * (lo - start) / n
            right = x0 + (x1 - x0) * (hi - start) / n
            boxes.append((int(left * factor), int(y0 * factor), int(right * factor), int(y1 * factor)))
    return boxes, matched


def page_shares(path: Path, first: int, last: int, passage: str) -> dict[int, float]:
    """For each page of first..last, the share of the passage's words found on it (a passage
    that starts at the foot of page 3 has part of its words on page 4)."""
    pdfium, raw = _import_pdfium()
    out = {}
    with _PDFIUM:
        pdf = pdfium.PdfDocument(str(path))
        try:
            for n in range(max(first, 1), min(max(last, first), len(pdf)) + 1):
                pg = pdf[n - 1]
                tp = pg.get_textpage()
                out[n] = align(_page_text(raw, tp.raw), passage)[1]
                tp.close()
                pg.close()
        finally:
            pdf.close()
    return out


def best_page(path: Path, first: int, last: int, passage: str) -> int:
    """The page of first..last that holds most of the passage."""
    if last <= first:
        return first
    return best_of(page_shares(path, first, last, passage), first)


def best_of(shares: dict[int, float], default: int) -> int:
    """The page holding the largest share of the passage; the earlier page on a tie."""
    return max(shares, key=lambda n: (shares[n], -n)) if shares else default


class PageCache:
    """Rendered pages, newest kept: a person flips back and forth between the same few pages,
    and every Streamlit rerun of the viewer asks again. Keyed by the file's identity
    (path, size, mtime) so a replaced file is never shown stale."""

    def __init__(self, max_items: int = 48):
        self.max_items = max_items
        self._items: OrderedDict[tuple, PageView] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, path: Path, page: int, passage: str, scale: float = 1.6, ocr: bool = True) -> PageView:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns, page, passage, scale, ocr)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
        view = render_pdf_page(path, page, passage, scale, ocr)
        with self._lock:
            self.misses += 1
            self._items[key] = view
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
        return view


def highlight_in_context(prev, chunk, nxt, snippet: str = "") -> list[tuple[str, bool]]:
    """For sources without pages: (text, is_cited) segments showing the cited words inside
    the passage and its neighbours. Chunks overlap; their character offsets in the document
    cut the repeated text so nothing reads twice."""
    before = tail_before(prev, chunk) if prev else ""
    after = head_after(chunk, nxt) if nxt else ""
    text = chunk.text
    at = text.find(snippet.strip()) if snippet.strip() else -1
    if at < 0:  # the snippet is the whole passage, or was normalised: mark the passage
        parts = [(before, False), (text, True), (after, False)]
    else:
        end = at + len(snippet.strip())
        parts = [(before + text[:at], False), (text[at:end], True), (text[end:] + after, False)]
    return [(t, hit) for t, hit in parts if t]
