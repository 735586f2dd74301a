"""HTML: readable text and structure (headings, lists, tables, code) as light Markdown."""

from __future__ import annotations

from pathlib import Path

from rag_core.errors import LoadError
from rag_core.models import LoadedDocument

from .common import LoadOptions, _fenced, _meaningful_title, _pipe_table, _squash, parse_date, title_from_filename

EXTENSIONS = {".html": "text/html", ".htm": "text/html"}


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    return [_load_html(path.read_bytes(), source)]


_HTML_SKIP = frozenset(
    {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "embed", "canvas", "select"}
)
_HTML_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_BLOCKS = frozenset(
    {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "blockquote",
     "ul", "ol", "li", "dl", "dt", "dd", "figure", "figcaption", "form", "fieldset", "address",
     "details", "summary", "hr", "body", "html", "center", "caption"}
)


def _load_html(data: bytes, source: str) -> LoadedDocument:
    from bs4 import BeautifulSoup

    import warnings

    from bs4 import XMLParsedAsHTMLWarning

    # XHTML (DocBook output such as Debian's manuals) reads fine as HTML: no warning on stderr.
    warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)
    # Bytes, not str: BeautifulSoup honours <meta charset> and BOMs when it decodes itself.
    try:
        soup = BeautifulSoup(data, "lxml")
    except Exception:
        try:
            soup = BeautifulSoup(data, "html.parser")
        except Exception as exc:
            raise LoadError("not a readable HTML file") from exc
    try:
        text = _HtmlToMarkdown().convert(soup)
        title_tag = soup.find("title")
        h1 = soup.find("h1")
    except RecursionError:
        raise LoadError("the HTML is nested too deeply to read") from None
    if not text.strip():
        raise LoadError("no text found in the HTML page")
    title = (
        _meaningful_title(title_tag.get_text() if title_tag else None, source)
        or _meaningful_title(h1.get_text() if h1 else None, source)
        or title_from_filename(source)
    )
    stated = _html_date(soup)
    return LoadedDocument(source=source, title=title, mime=EXTENSIONS[".html"], pages=[text],
                          metadata={"date": stated} if stated else {})


# Modified before published: the page's text is its latest version.
_DATE_META = ("article:modified_time", "dcterms.modified", "last-modified", "article:published_time",
              "dcterms.date", "dc.date", "date", "pubdate", "publish-date")


def _html_date(soup) -> str | None:
    """The first date the page states in <meta> (by _DATE_META's order), else in <time datetime>."""
    found: dict[str, list[str]] = {}
    for meta in soup.find_all("meta"):
        key = meta.get("name") or meta.get("property") or meta.get("http-equiv")
        content = meta.get("content")
        if isinstance(key, str) and isinstance(content, str):
            found.setdefault(key.strip().lower(), []).append(content)
    values = [v for key in _DATE_META for v in found.get(key, ())]
    values += [t.get("datetime") for t in soup.find_all("time", datetime=True)]
    return next((day for v in values if (day := parse_date(v))), None)


class _HtmlToMarkdown:
    """Walks the tree with an explicit stack: recursion would overflow on deeply nested pages."""

    def __init__(self) -> None:
        self._out: list[tuple[str, str]] = []  # (kind, text); kind "item" lines stay adjacent
        self._inline: list[str] = []
        self._list_depth = 0
        self._pending_item = False

    def convert(self, soup) -> str:
        from bs4 import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction

        skip_strings = (Comment, Declaration, Doctype, ProcessingInstruction)
        end = object()
        stack: list[tuple[str, object]] = [("", iter(soup.contents))]
        while stack:
            name, children = stack[-1]
            node = next(children, end)
            if node is end:
                stack.pop()
                self._leave(name)
                continue
            if isinstance(node, NavigableString):
                if not isinstance(node, skip_strings):
                    self._inline.append(str(node))
                continue
            tag = node.name
            if tag in _HTML_SKIP or node.has_attr("hidden"):
                continue
            if tag in _HTML_HEADINGS:
                self._flush()
                text = _squash(node.get_text())
                if text:
                    self._out.append(("block", "#" * _HTML_HEADINGS[tag] + " " + text))
            elif tag == "pre":
                self._flush()
                if node.get_text().strip():
                    self._out.append(("block", _fenced(node.get_text())))
            elif tag == "table":
                self._flush()
                self._table(node)
            elif tag == "br":
                self._inline.append("\n")
            elif tag == "code" and "\n" not in node.get_text():
                self._inline.append(f"`{node.get_text()}`")
            elif tag == "img":
                alt = node.get("alt")
                if isinstance(alt, str) and alt.strip():
                    self._inline.append(f" {alt.strip()} ")
            else:
                self._enter(tag)
                stack.append((tag, iter(node.contents)))
        self._flush()
        return self._join()

    def _enter(self, tag: str) -> None:
        if tag in _HTML_BLOCKS or tag == "code":
            self._flush()
        if tag in ("ul", "ol"):
            self._list_depth += 1
        elif tag == "li":
            self._pending_item = True

    def _leave(self, tag: str) -> None:
        if tag in _HTML_BLOCKS:
            self._flush()
        if tag in ("ul", "ol"):
            self._list_depth = max(0, self._list_depth - 1)
        elif tag == "li":
            self._pending_item = False

    def _flush(self) -> None:
        if not self._inline:
            return
        lines = [_squash(line) for line in "".join(self._inline).split("\n")]
        self._inline = []
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        indent = "  " * min(max(0, self._list_depth - 1), 6)  # deep nesting: cap, don't drift right
        if self._pending_item:
            self._pending_item = False
            self._out.append(("item", indent + "- " + text.replace("\n", " ")))
        elif self._list_depth:
            self._out.append(("item", indent + "  " + text.replace("\n", " ")))
        else:
            self._out.append(("block", text))

    def _table(self, table) -> None:
        caption = table.find("caption")
        if caption is not None and caption.find_parent("table") is table:
            if text := _squash(caption.get_text()):
                self._out.append(("block", text))
        rows = [
            [_squash(cell.get_text(" ")) for cell in tr.find_all(["td", "th"], recursive=False)]
            for tr in table.find_all("tr")
            if tr.find_parent("table") is table  # nested tables are flattened into their cell
        ]
        if md := _pipe_table(rows):
            self._out.append(("block", md))

    def _join(self) -> str:
        parts: list[str] = []
        prev = ""
        for kind, text in self._out:
            if parts:
                parts.append("\n" if kind == prev == "item" else "\n\n")
            parts.append(text)
            prev = kind
        return "".join(parts)
