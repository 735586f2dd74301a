"""What every loader shares: titles, text decoding, the light-Markdown helpers, and the
messages a user reads when a file cannot be loaded."""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag_core.errors import LoadError

EMPTY_FILE = "file is empty"
NOT_UTF8 = "not valid UTF-8 text"


@dataclass(frozen=True)
class LoadOptions:
    """What a caller may ask of every loader (each uses what applies to its format)."""

    max_pages: int = 5000
    password: str | None = None  # encrypted PDFs
    ocr: bool = False  # PDF pages without a text layer
    on_progress: Callable[[], None] | None = None  # called while slow work (OCR) moves on


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
