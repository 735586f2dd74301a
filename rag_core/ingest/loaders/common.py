"""What every loader shares: titles, dates, text decoding, the light-Markdown helpers, and
the messages a user reads when a file cannot be loaded."""

from __future__ import annotations

import codecs
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from xml.etree import ElementTree

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
# Titles that PDF producers and word processors write when the author wrote none; the last
# two are what python-docx and python-pptx make up for a file without core properties.
_PLACEHOLDER_TITLES = frozenset({"untitled", "title", "document", "unknown", "none", "null", "slide 1",
                                 "word document", "powerpoint presentation"})
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


# --------------------------------------------------------------------------- dates

_EARLIEST_DATE = date(1900, 1, 1)
_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")
# PDF dates: D:YYYYMMDDHHmmSS+HH'mm', any part after the year optional. Producers drop the
# "D:" or the apostrophes, so both are optional; the time and zone are matched only so that
# other strings of digits and words are not taken for dates.
_PDF_DATE = re.compile(r"(?:D:)?(\d{4})(\d{2})?(\d{2})?(?:\d{2}){0,3}(?:[Zz+-](?:\d{2}'?){0,2})?")


def parse_date(value: object) -> str | None:
    """The calendar date `value` states, as "YYYY-MM-DD", or None.

    Takes date/datetime objects, ISO 8601 strings, PDF date strings, RFC 2822 strings,
    "YYYY" and "YYYY-MM" (the first day of the period), Unix timestamps in seconds, and a
    four-digit int as a year. A stated time zone is not converted: the date is the one the
    document's author saw. Dates before 1900 or more than a day ahead (UTC) are placeholders
    or clock errors, so None. Never raises: a bad date is no date.
    """
    try:
        day = _as_date(value)
    except (ValueError, TypeError, OverflowError, OSError):
        return None
    if day is None or not _EARLIEST_DATE <= day <= datetime.now(timezone.utc).date() + timedelta(days=1):
        return None
    return day.isoformat()


def _as_date(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, bool):  # an int to Python, never a timestamp in a document
        return None
    if isinstance(value, int) and 1000 <= value <= 9999:  # a year; as seconds it would be 1970-01-01
        return date(value, 1, 1)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, timezone.utc).date()
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        return datetime.fromisoformat(text).date()
    except ValueError:
        pass
    if m := _YEAR_MONTH.fullmatch(text):
        return date(int(m[1]), int(m[2] or 1), 1)
    if m := _PDF_DATE.fullmatch(text):
        return date(int(m[1]), int(m[2] or 1), int(m[3] or 1))
    return parsedate_to_datetime(text).date()


_DCTERMS = "{http://purl.org/dc/terms/}"
_MAX_CORE_XML = 1_000_000


def ooxml_date(path: Path) -> str | None:
    """The date in a DOCX/PPTX/XLSX file's core properties (docProps/core.xml): modified, as
    the version the text reflects, else created.

    Read from the zip rather than through python-docx, python-pptx or openpyxl: where the
    part or a field is missing those fill in the current time, which would pass for the
    document's own date."""
    try:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo("docProps/core.xml")
            if info.file_size > _MAX_CORE_XML:  # a bomb, not properties
                return None
            root = ElementTree.fromstring(zf.read(info))
    except Exception:  # noqa: BLE001 - the loader has read the file; a bad date is no date
        return None
    for field in ("modified", "created"):
        node = root.find(_DCTERMS + field)
        if node is not None and (day := parse_date(node.text)):
            return day
    return None


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
