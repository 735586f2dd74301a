"""Text for pages that have none: scanned and photographed pages.

RapidOCR runs PaddleOCR's PP-OCRv4 detection and recognition models through onnxruntime;
the models ship inside the `rapidocr-onnxruntime` wheel (DESIGN.md §8), so this works offline.
Its recogniser was trained mostly on Chinese and often drops the spaces between English
words ("Checktheoil"); `restore_spaces` puts them back with wordninja's English word-frequency
model, only inside runs of letters that are not words themselves.

Only pages without a text layer are read (a page's own text is always better than OCR of it).
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from functools import lru_cache

from ..errors import MissingDependency

# Pages are rendered at 144 dpi (scale 2): PP-OCR's detector is trained on text about 32 px
# high; at 1.5 the recogniser misread "1,500" as "1,5o0" on a rendered 11 pt page.
OCR_SCALE = 2.0
log = logging.getLogger(__name__)
_RUN = re.compile(r"[A-Za-z]{2,}")


@dataclass
class OcrLine:
    text: str
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in the image's pixels
    score: float


class OcrEngine:
    """One RapidOCR instance per process (loading costs ~0.5 s); calls are serialised because
    one onnxruntime session already uses the machine's cores."""

    def __init__(self):
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:  # also a missing libGL under opencv
            raise MissingDependency(
                f"OCR needs rapidocr-onnxruntime (pip install -r requirements.txt): {exc}"
            ) from exc
        self._engine = RapidOCR()
        self._lock = threading.Lock()

    def read(self, image) -> list[OcrLine]:
        """Text lines of an image (PIL image or RGB array), in reading order."""
        import numpy as np

        arr = np.asarray(image.convert("RGB")) if hasattr(image, "convert") else image
        if min(arr.shape[:2]) < 32:  # a thumbnail-sized page holds no readable text (and the detector fails on it)
            return []
        try:
            with self._lock:
                result, _ = self._engine(arr)
        except MemoryError:
            raise  # no room under the reader's memory cap: not "no text" (the reader says so, or retries)
        except Exception as exc:  # noqa: BLE001 - one unreadable image is a page without text, not a failed file
            if "alloc" in str(exc).lower():  # onnxruntime's own out-of-memory errors
                raise MemoryError(str(exc)) from exc
            log.warning("OCR failed on a %sx%s image", arr.shape[1], arr.shape[0], exc_info=True)
            return []
        lines = []
        for quad, text, score in result or []:
            xs, ys = [p[0] for p in quad], [p[1] for p in quad]
            if text.strip():
                lines.append(OcrLine(restore_spaces(text.strip()), (min(xs), min(ys), max(xs), max(ys)), float(score)))
        return reading_order(lines)


@lru_cache(maxsize=1)
def get_engine() -> OcrEngine:
    return OcrEngine()


def reading_order(lines: list[OcrLine]) -> list[OcrLine]:
    """Top to bottom, and left to right within a row (boxes whose vertical centres lie within
    half a line height of each other form a row)."""
    rows: list[list[OcrLine]] = []
    for ln in sorted(lines, key=lambda l: (l.box[1] + l.box[3]) / 2):
        mid = (ln.box[1] + ln.box[3]) / 2
        if rows:
            last = rows[-1][0]
            h = last.box[3] - last.box[1]
            if abs(mid - (last.box[1] + last.box[3]) / 2) < 0.5 * h:
                rows[-1].append(ln)
                continue
        rows.append([ln])
    return [ln for row in rows for ln in sorted(row, key=lambda l: l.box[0])]


def lines_text(lines: list[OcrLine]) -> str:
    return "\n".join(ln.text for ln in lines)


def restore_spaces(text: str) -> str:
    """"Checktheoil level" -> "Check the oil level": split a run of letters only when it is
    not a word itself and every piece is a known word of two or more letters ("a", "I" aside)."""
    try:
        import wordninja
    except ImportError:  # spaces stay as OCR gave them
        return text
    model = wordninja.DEFAULT_LANGUAGE_MODEL
    known = model._wordcost  # noqa: SLF001 - the word list is the model

    def fix(m: re.Match) -> str:
        run = m.group()
        if run.lower() in known or len(run) < 5:
            return run
        parts = model.split(run)
        if len(parts) < 2 or "".join(parts) != run:
            return run
        if all(p.lower() in known and (len(p) > 1 or p.lower() in ("a", "i")) for p in parts):
            return " ".join(parts)
        return run

    return _RUN.sub(fix, text)


def ocr_pdf_page(page, scale: float = OCR_SCALE) -> list[OcrLine]:
    """OCR one pypdfium2 page, rendered at `scale` (boxes are in that image's pixels)."""
    return get_engine().read(page.render(scale=scale).to_pil())
