"""PPTX: one page per slide (so a citation names the slide), the slide title as a heading,
text frames with their bullet levels, tables, and the speaker notes (python-pptx)."""

from __future__ import annotations

from pathlib import Path

from rag_core.errors import LoadError
from rag_core.models import LoadedDocument

from .common import LoadOptions, _meaningful_title, _pipe_table, _squash, ooxml_date, title_from_filename

EXTENSIONS = {".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation"}
PPTX_INVALID = "not a valid PPTX file"


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    try:
        from pptx import Presentation
    except ImportError as exc:  # pragma: no cover - in requirements.txt
        raise LoadError("PPTX files need python-pptx: pip install -r requirements.txt") from exc
    try:
        prs = Presentation(str(path))
    except Exception as exc:
        raise LoadError(PPTX_INVALID) from exc
    if len(prs.slides) > opts.max_pages:
        raise LoadError(f"too many slides: {len(prs.slides)} (the limit is {opts.max_pages})")
    pages, first_title = [], None
    for number, slide in enumerate(prs.slides, start=1):
        title_shape = slide.shapes.title
        title = _squash(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
        first_title = first_title or title or None
        parts = [f"# {title}" if title else f"# Slide {number}"]
        for shape in slide.shapes:
            if shape is title_shape:
                continue
            parts += _shape_text(shape)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame.text.strip() if slide.notes_slide.notes_text_frame else ""
            if notes:
                parts.append("Speaker notes: " + _squash(notes))
        pages.append("\n\n".join(p for p in parts if p))
    if not any(len(p.split("\n", 1)) > 1 or not p.startswith("# Slide") for p in pages):
        raise LoadError("no text found (the slides hold only pictures)")
    raw_title = prs.core_properties.title
    title = _meaningful_title(raw_title, source) or first_title or title_from_filename(source)
    stated = ooxml_date(path)
    return [LoadedDocument(source=source, title=title, mime=EXTENSIONS[".pptx"], pages=pages,
                           metadata={"date": stated} if stated else {})]


def _shape_text(shape) -> list[str]:
    if shape.shape_type == 6 and hasattr(shape, "shapes"):  # a group: its members in order
        return [t for s in shape.shapes for t in _shape_text(s)]
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[_squash(c.text) for c in row.cells] for row in shape.table.rows]
        return [_pipe_table(rows)] if rows else []
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return []
    lines = []
    for para in shape.text_frame.paragraphs:
        text = _squash(para.text)
        if text:
            lines.append(("  " * para.level + "- " + text) if para.level or len(shape.text_frame.paragraphs) > 1 else text)
    return ["\n".join(lines)] if lines else []
