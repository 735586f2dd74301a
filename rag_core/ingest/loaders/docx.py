"""DOCX: paragraphs with their heading levels, lists and tables (python-docx)."""

from __future__ import annotations

import re
from pathlib import Path

from rag_core.errors import LoadError
from rag_core.models import LoadedDocument

from .common import LoadOptions, _meaningful_title, _pipe_table, _squash, ooxml_date, title_from_filename

EXTENSIONS = {".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
DOCX_INVALID = "not a valid DOCX file"


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    return [_load_docx(path, source)]


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
    stated = ooxml_date(path)
    return LoadedDocument(source=source, title=title, mime=EXTENSIONS[".docx"], pages=["".join(parts)],
                          metadata={"date": stated} if stated else {})


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
