"""EPUB: one page per chapter in reading order (the OPF spine), each chapter's XHTML through
the HTML loader's converter. Standard library zip + BeautifulSoup; no EPUB library (the
common one, ebooklib, is AGPL)."""

from __future__ import annotations

import posixpath
import zipfile
from pathlib import Path

from rag_core.errors import LoadError
from rag_core.models import LoadedDocument

from .common import LoadOptions, _meaningful_title, parse_date, title_from_filename
from .html import _HtmlToMarkdown

EXTENSIONS = {".epub": "application/epub+zip"}
EPUB_INVALID = "not a valid EPUB file"
MAX_CHAPTER_BYTES = 20_000_000  # a single XHTML file larger than this is a bomb, not a chapter


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    from bs4 import BeautifulSoup

    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise LoadError(EPUB_INVALID) from exc
    with zf:
        try:
            container = BeautifulSoup(zf.read("META-INF/container.xml"), "xml")
            opf_path = container.find("rootfile")["full-path"]
            opf = BeautifulSoup(zf.read(opf_path), "xml")
        except (KeyError, TypeError) as exc:
            raise LoadError(EPUB_INVALID + " (no package document)") from exc
        base = posixpath.dirname(opf_path)
        items = {i.get("id"): i for i in opf.find_all("item")}
        raw_title = opf.find("dc:title") or opf.find("title")
        stated = _epub_date(opf)
        pages = []
        for ref in opf.find_all("itemref"):
            item = items.get(ref.get("idref"))
            if item is None or "html" not in (item.get("media-type") or ""):
                continue
            name = posixpath.normpath(posixpath.join(base, item.get("href", "")))
            try:
                info = zf.getinfo(name)
            except KeyError:
                continue
            if info.file_size > MAX_CHAPTER_BYTES:
                raise LoadError(f"a chapter is too large to read ({info.file_size // 1_000_000} MB uncompressed)")
            text = _HtmlToMarkdown().convert(BeautifulSoup(zf.read(name), "lxml")).strip()
            if text:
                pages.append(text)
            if len(pages) > opts.max_pages:
                raise LoadError(f"too many chapters (the limit is {opts.max_pages})")
    if not pages:
        raise LoadError("no text found in the book")
    title = _meaningful_title(raw_title.get_text() if raw_title else None, source) or title_from_filename(source)
    return [LoadedDocument(source=source, title=title, mime=EXTENSIONS[".epub"], pages=pages,
                           metadata={"date": stated} if stated else {})]


def _epub_date(opf) -> str | None:
    """The OPF's dc:date, else its dcterms:modified. The publication date first: a book's
    modified stamp is mostly when the file was last converted, not when its text changed."""
    nodes = opf.find_all("date") + opf.find_all("meta", property="dcterms:modified")
    return next((day for node in nodes if (day := parse_date(node.get_text()))), None)
