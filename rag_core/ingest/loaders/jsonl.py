"""JSONL: one document per record (BEIR-style `_id`, `title`, `text`, optional `date`; other fields
kept as metadata)."""

from __future__ import annotations

import json
from pathlib import Path

from rag_core.errors import LoadError
from rag_core.models import LoadedDocument

from .common import LoadOptions, _decode_text, parse_date

EXTENSIONS = {".jsonl": "application/jsonl"}


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    return _load_jsonl(path.read_bytes(), source)


_JSONL_RESERVED = ("_id", "id", "title", "text", "date")


def _load_jsonl(data: bytes, source: str) -> list[LoadedDocument]:
    """One document per record {"_id"|"id", "title", "text", "date", ...}.

    Strict on purpose: a line that is not a JSON object with a "text" field, or that repeats
    an id, fails the whole file, so a corpus is never half-imported silently. The whole file
    is read first and every such line is named (the first ten, and how many in all), so one
    round of fixes does it.
    Blank lines, and records whose text and title are both empty, are skipped. A record
    without an id gets doc_id None: the caller derives one as for any other document.
    A "date" becomes metadata["date"] as YYYY-MM-DD; one that is not a date is left out, as
    other formats leave out a date their file does not state.
    """
    text = _decode_text(data)
    docs: list[LoadedDocument] = []
    seen: dict[str, int] = {}
    mime = EXTENSIONS[".jsonl"]
    broken: list[str] = []
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            broken.append(f"line {line_no}: not valid JSON")
            continue
        if not isinstance(record, dict):
            broken.append(f"line {line_no}: expected a JSON object")
            continue
        if "text" not in record:
            broken.append(f'line {line_no}: no "text" field')
            continue
        body = _as_text(record["text"])
        title = _as_text(record.get("title"))
        if not body.strip() and not title.strip():
            continue
        raw_id = record.get("_id", record.get("id"))
        doc_id = _as_text(raw_id) or None
        if doc_id is not None:
            if doc_id in seen:
                broken.append(f"line {line_no}: duplicate id '{doc_id}' (first on line {seen[doc_id]})")
                continue
            seen[doc_id] = line_no
        metadata = {k: v for k, v in record.items() if k not in _JSONL_RESERVED}
        if stated := parse_date(record.get("date")):
            metadata["date"] = stated
        docs.append(
            LoadedDocument(
                source=source,
                title=title,
                mime=mime,
                pages=[body if body.strip() else title],
                doc_id=doc_id,
                metadata=metadata,
            )
        )
    if len(broken) == 1:
        raise LoadError(broken[0])
    if broken:
        more = f"; and {len(broken) - 10} more" if len(broken) > 10 else ""
        raise LoadError(f"{len(broken)} lines cannot be read, so nothing of this file was imported: "
                        + "; ".join(broken[:10]) + more)
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
