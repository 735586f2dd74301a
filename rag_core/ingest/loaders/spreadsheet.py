"""XLSX: one page per sheet; every row a record "column: value" (so each chunk carries the
header it needs), grouped under "Rows a–b" headings so a citation names the sheet and rows
(openpyxl, read-only, cached values rather than formulas)."""

from __future__ import annotations

from pathlib import Path

from rag_core.errors import LoadError
from rag_core.models import LoadedDocument

from .common import LoadOptions, _meaningful_title, _squash, ooxml_date, title_from_filename

EXTENSIONS = {".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
XLSX_INVALID = "not a valid XLSX file"
# Rows per "Rows a–b" group: roughly one chunk of text, so a chunk's section names its rows.
GROUP_CHARS = 800


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    try:
        from openpyxl import load_workbook
    except ImportError as exc:  # pragma: no cover - in requirements.txt
        raise LoadError("XLSX files need openpyxl: pip install -r requirements.txt") from exc
    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:
        raise LoadError(XLSX_INVALID) from exc
    try:
        pages, rows_total = [], 0
        for ws in wb.worksheets:
            text, n = _sheet(ws)
            if n:
                pages.append(text)
                rows_total += n
        raw_title = wb.properties.title if wb.properties else None
    finally:
        wb.close()
    if not pages:
        raise LoadError("no rows found (the workbook's sheets are empty or hold only a header)")
    if len(pages) > opts.max_pages:
        raise LoadError(f"too many sheets: {len(pages)} (the limit is {opts.max_pages})")
    title = _meaningful_title(raw_title, source) or title_from_filename(source)
    metadata: dict = {"rows": rows_total}
    if stated := ooxml_date(path):
        metadata["date"] = stated
    return [LoadedDocument(source=source, title=title, mime=EXTENSIONS[".xlsx"], pages=pages, metadata=metadata)]


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return _squash(str(v))


def _sheet(ws) -> tuple[str, int]:
    """The sheet as "# name" with "## Rows a–b" groups of records; (text, data rows)."""
    header: list[str] | None = None
    groups: list[str] = []
    group: list[str] = []
    first = last = 0
    size = 0
    rows = 0
    for number, row in enumerate(ws.iter_rows(values_only=True), start=1):
        cells = [_cell(v) for v in row]
        if not any(cells):
            continue
        if header is None:
            header = [c or f"column {i + 1}" for i, c in enumerate(cells)]
            continue
        names = header + [f"column {i + 1}" for i in range(len(header), len(cells))]
        record = "\n".join(f"{n}: {v}" for n, v in zip(names, cells) if v)
        if not group:
            first = number
        group.append(record)
        last = number
        size += len(record)
        rows += 1
        if size >= GROUP_CHARS:
            groups.append(f"## Rows {first}–{last}\n\n" + "\n\n".join(group))
            group, size = [], 0
    if group:
        groups.append(f"## Rows {first}–{last}\n\n" + "\n\n".join(group))
    return f"# {ws.title}\n\n" + "\n\n".join(groups), rows
