"""CSV: one record per row, each with the column names (a chunk without its header means nothing)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rag_core.errors import LoadError
from rag_core.models import LoadedDocument

from .common import _TEXT_SAMPLE, LoadOptions, _decode_text, _squash, title_from_filename

EXTENSIONS = {".csv": "text/csv"}


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    return [_load_csv(path.read_bytes(), source)]


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
        mime=EXTENSIONS[".csv"],
        pages=["\n\n".join(records)],
        metadata={"rows": len(records), "columns": header},
    )
