"""A PDF page's lines with what their fonts say about them, and the page as light Markdown.

pypdf's plain text is reading order for typeset documents, but flat: a manual's code example
runs into the prose around it, a bullet is a stray glyph, a heading is just another line. The
fonts tell them apart. pypdf hands every piece of text it emits to a visitor together with its
font and size, and the pieces concatenate to exactly the page's text, so each output line gets:
- the share of its characters set in a monospaced font (CMTT, Courier, …Mono…, or a font
  whose descriptor says FixedPitch): a line in monospace is code;
- the smallest and largest effective size of its characters, and whether they are bold: a short
  line set larger than the document's body text, in bold or at display size, is a heading (an
  author line set a little larger on a title page is not).

`render` then writes the page the way the chunker reads Markdown (rag_core/ingest/chunker.py):
runs of code lines fenced with ```, headings as "#"s by size rank, bullets as "- ". Words are
not changed, so the citation viewer, which aligns passages to the page word by word, still
finds them. Measured on six real manuals by benchmarks/pdf_extraction.py.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

_MONO_NAME = re.compile(r"tt\d|mono|nimbusmon|courier|cousine|lettergothic|consol|menlo|inconsolata|typewriter|sourcecode|firacode|fixed", re.I)
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|cmbx|cmb\d|cmssbx|\bbx", re.I)
_FIXED_PITCH = 1  # PDF font descriptor flag bit 1
_FORCE_BOLD = 1 << 18  # flag bit 19
# Bullets as fonts draw them: Unicode ones, and Symbol/Wingdings glyphs that land in the
# private-use area (Word's "" shows as a box: "□").
_BULLET = re.compile(r"^[•●○◦▪■□▫▸►▹‣⁃∙➢➤✓✔❖\uf0a7\uf0b7\uf076\uf0d8\uf0fc\uf0a8\uf06e\uf071](?:\s+|(?=[A-Za-z(\"'“]))")
_SENTENCE_END = (".", ":", ";", "!", "?", ")")
HEADING_RATIO = 1.08  # set at least this much larger than body text, in bold
DISPLAY_RATIO = 1.4  # this much larger is a heading in any weight (titles, slide titles)
MAX_HEADING_WORDS = 14
CODE_SHARE = 0.8  # of a line's visible characters in monospace


@dataclass(slots=True)
class Line:
    text: str
    mono: int = 0  # visible characters in a monospaced font
    bold: int = 0  # visible characters in a bold font
    chars: int = 0  # visible characters with font information
    min_size: float = 0.0
    max_size: float = 0.0

    @property
    def is_bold(self) -> bool:
        return self.chars > 0 and self.bold >= CODE_SHARE * self.chars

    @property
    def is_mono(self) -> bool:
        return self.chars > 0 and self.mono >= CODE_SHARE * self.chars


def _font_kind(font, cache: dict[int, tuple[bool, bool]]) -> tuple[bool, bool]:
    """(monospaced, bold) as far as the font's name and descriptor say."""
    key = id(font)
    if key not in cache:
        mono = bold = False
        try:
            name = str(font.get("/BaseFont", "")).split("+")[-1]
            descriptor = font.get("/FontDescriptor")
            if descriptor is None and "/DescendantFonts" in font:  # Type0: the descriptor is one level down
                descriptor = font["/DescendantFonts"][0].get_object().get("/FontDescriptor")
            descriptor = descriptor.get_object() if descriptor is not None else {}
            flags = int(descriptor.get("/Flags", 0) or 0)
            weight = float(descriptor.get("/FontWeight", 0) or 0)
            mono = bool(_MONO_NAME.search(name)) or bool(flags & _FIXED_PITCH)
            bold = bool(_BOLD_NAME.search(name)) or bool(flags & _FORCE_BOLD) or weight >= 600
        except Exception:  # noqa: BLE001 - a broken font dictionary just means "nothing known"
            pass
        cache[key] = (mono, bold)
    return cache[key]


def page_lines(page) -> list[Line]:
    """The page's text (pypdf, plain mode) as lines with font facts; lines without them when
    the visited pieces do not add up to the text (then nothing is guessed)."""
    pieces: list[tuple[str, bool, bool, float]] = []
    cache: dict[int, tuple[bool, bool]] = {}

    def visit(text, cm, tm, font, size) -> None:
        if not text:
            return
        mono, bold = _font_kind(font, cache) if font else (False, False)
        try:
            scale = math.hypot(float(tm[2]), float(tm[3])) * math.hypot(float(cm[2]), float(cm[3]))
            eff = float(size or 0) * scale
        except Exception:  # noqa: BLE001
            eff = 0.0
        pieces.append((text, mono, bold, eff))

    raw = page.extract_text(extraction_mode="plain", visitor_text=visit)
    if "".join(p[0] for p in pieces) != raw:
        return [Line(x) for x in raw.split("\n")]
    lines = [Line("")]
    for text, mono, bold, size in pieces:
        parts = text.split("\n")
        for k, part in enumerate(parts):
            if k:
                lines.append(Line(""))
            line = lines[-1]
            line.text += part
            visible = sum(not ch.isspace() for ch in part)
            if visible and size > 0:
                line.chars += visible
                line.mono += visible if mono else 0
                line.bold += visible if bold else 0
                line.min_size = size if not line.min_size else min(line.min_size, size)
                line.max_size = max(line.max_size, size)
    return lines


def body_size(pages: list[list[Line]]) -> float:
    """The size most of the document's running text is set in (rounded to half points): lines
    of five words or more, so that a deck's one-word navigation entries, however many, do not
    outweigh its sentences."""
    weight: Counter[float] = Counter()
    short: Counter[float] = Counter()
    for lines in pages:
        for x in lines:
            if x.chars and x.min_size:
                (weight if len(x.text.split()) >= 5 else short)[round(x.min_size * 2) / 2] += x.chars
    weight = weight or short
    return weight.most_common(1)[0][0] if weight else 0.0


SMALL_RATIO = 0.75  # navigation bars and margin notes are set this much smaller than body text
RECURRING_SHARE = 0.5


def recurring_small_lines(pages: list[list[Line]], body: float) -> list[set[int]]:
    """Per page, the lines of furniture anywhere on the page: set small (≤ 75% of body text)
    and recurring, digits aside, on at least 3 pages and half of all pages. A slide deck's
    navigation sidebar repeats a dozen such lines on every slide, not just at the page edges
    where running heads are looked for; a manual's footnotes are small but do not recur."""
    def key(x: Line) -> str:
        return re.sub(r"\d+", "#", " ".join(x.text.lower().split()))

    def small(x: Line) -> bool:
        return bool(body and x.chars and x.max_size and x.max_size <= body * SMALL_RATIO and x.text.strip())

    seen: Counter[str] = Counter()
    for lines in pages:
        seen.update({key(x) for x in lines if small(x)})
    need = max(3, RECURRING_SHARE * len(pages))
    return [{j for j, x in enumerate(lines) if small(x) and seen[key(x)] >= need} for lines in pages]


def _heading_size(x: Line, body: float) -> float | None:
    text = x.text.strip()
    words = text.split()
    if (not body or not x.chars or x.min_size < body * HEADING_RATIO or x.is_mono
            or (x.min_size < body * DISPLAY_RATIO and not x.is_bold)
            or not 1 <= len(words) <= MAX_HEADING_WORDS or sum(ch.isalpha() for ch in text) < 2
            or text.endswith((".", ",", ";", ":"))):
        return None
    return round(x.min_size * 2) / 2


def heading_levels(pages: list[list[Line]], body: float) -> dict[float, int]:
    """Heading sizes ranked, largest first, as Markdown levels 1–6."""
    sizes = {s for lines in pages for x in lines if (s := _heading_size(x, body))}
    return {s: min(i + 1, 6) for i, s in enumerate(sorted(sizes, reverse=True))}


_MARKDOWN_HEADING = re.compile(r"\s*#{1,6}(?:\s|$)")


def render(lines: list[Line], body: float, levels: dict[float, int]) -> str:
    """One page as Markdown: fenced code runs, "#" headings, "- " bullets; other lines as they are."""
    texts = [x.text for x in lines]
    kinds: list[str] = []
    for x in lines:
        if not x.text.strip():
            kinds.append("blank")
        elif x.is_mono:
            kinds.append("code")
        elif _heading_size(x, body) in levels:
            kinds.append("heading")
        else:
            kinds.append("text")
    _demote_inline_code(texts, kinds)
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        kind, text = kinds[i], texts[i]
        if kind == "code":
            j = i
            while j < n and kinds[j] == "code":
                j += 1
            out.append("```")
            out.extend(t.replace("```", "``\u200b`") for t in texts[i:j])  # a fence inside code cannot close it
            out.append("```")
            i = j
            continue
        if kind == "heading":
            size = _heading_size(lines[i], body)
            j = i + 1  # a heading wrapped over lines is one heading
            while j < n and kinds[j] == "heading" and _heading_size(lines[j], body) == size:
                j += 1
            out.append("#" * levels[size] + " " + " ".join(" ".join(texts[i:j]).split()))
            i = j
            continue
        if kind == "text" and _MARKDOWN_HEADING.match(text):
            # the page's own "#" (a comment in a code sample, an index entry for "#") is text:
            # a zero-width space keeps it from reading as one of our Markdown headings
            text = "\u200b" + text
        out.append(_BULLET.sub("- ", text) if kind == "text" else text)
        i += 1
    return "\n".join(out)


def _demote_inline_code(texts: list[str], kinds: list[str]) -> None:
    """A lone monospace line inside a running sentence ("… we could use the\\nidentify()\\n
    function as follows:") is inline code wrapped onto its own line, not a code block."""
    n = len(kinds)
    i = 0
    while i < n:
        if kinds[i] != "code":
            i += 1
            continue
        j = i
        while j < n and kinds[j] == "code":
            j += 1
        if j - i == 1:
            prev = texts[i - 1].rstrip() if i > 0 and kinds[i - 1] == "text" else ""
            nxt = texts[j].lstrip() if j < n and kinds[j] == "text" else ""
            if (prev and not prev.endswith(_SENTENCE_END)) or (nxt[:1].islower() and not prev.endswith(":")):
                kinds[i] = "text"
        i = j
