"""Plain text and Markdown (TXT, MD)."""

from __future__ import annotations

import re
from pathlib import Path

from rag_core.models import LoadedDocument

from .common import LoadOptions, _decode_text, title_from_filename

EXTENSIONS = {".txt": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown"}


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    ext = Path(source).suffix.lower() if Path(source).suffix.lower() in EXTENSIONS else path.suffix.lower()
    return [_load_text(path.read_bytes(), source, mime=EXTENSIONS.get(ext, "text/plain"),
                       markdown=ext in (".md", ".markdown"))]


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
