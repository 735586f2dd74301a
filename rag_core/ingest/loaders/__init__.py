"""File loaders: bytes on disk -> `LoadedDocument`s in light Markdown.

One module per format, each with the same small interface: `EXTENSIONS` (extension → MIME
type) and `load(path, source, opts) -> list[LoadedDocument]`. Every format is normalised to
the same light Markdown (`#` headings, `- ` list items, `| a | b |` table rows, ``` fences)
so that one chunker sees structure for all of them. Every failure surfaces as `LoadError`
with a short reason a user can act on; library exceptions never escape, because the upload
page and the CLI report show the message as is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from rag_core.errors import LoadError, UnsupportedFileType
from rag_core.models import LoadedDocument

from . import code, delimited, docx, epub, html, jsonl, pdf, slides, spreadsheet, text
from .common import EMPTY_FILE, LoadOptions, title_from_filename
from .pdf import clean_pdf_text

__all__ = ["SUPPORTED_EXTENSIONS", "LoadOptions", "clean_pdf_text", "load_file", "title_from_filename"]

log = logging.getLogger(__name__)

_FORMATS = (pdf, docx, slides, spreadsheet, epub, html, text, delimited, jsonl, code)
_BY_EXT = {ext: fmt for fmt in _FORMATS for ext in fmt.EXTENSIONS}
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(_BY_EXT)


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

    opts = LoadOptions(max_pages=max_pages, password=password, ocr=ocr, on_progress=on_progress)
    try:
        return _BY_EXT[ext].load(path, source, opts)
    except LoadError:
        raise
    except PermissionError:
        raise LoadError("cannot read the file: permission denied") from None
    except MemoryError:
        raise  # the isolated reader reports its memory cap (and retries in a fresh process)
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
