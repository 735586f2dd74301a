"""Turning answers into safe display text (used by the Streamlit pages; no Streamlit here).

Everything that came from a document or a model is escaped before it reaches Markdown:
a document sentence like `![x](http://tracker/p.png)` or `<script>` must show as text,
never load an image or run."""

from __future__ import annotations

import re

from .grounding.verify import answer_sentences, plain
from .models import Answer

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_MARKERS = re.compile(r"((?:\s*\[\d{1,3}\])+)")


def escape_md(text: str) -> str:
    """Backslash-escape Markdown and HTML syntax; collapse whitespace runs of newlines."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def marker_text(nums: list[int]) -> str:
    return "".join(f"[{n}]".translate(_SUPERSCRIPT) for n in nums)


def answer_segments(answer: Answer) -> list[tuple[str, str]]:
    """(escaped markdown of one sentence with its markers as superscripts, label) in order.
    Label is the verifier's (supported / partial / unsupported) or "" for abstentions."""
    labels = {c.text: c.label for c in answer.claims}
    out = []
    for sent in answer_sentences(answer.text):
        nums = [int(x) for x in re.findall(r"\[(\d{1,3})\]", sent)]
        body = re.sub(r"\s*\[\d{1,3}\]", "", sent).strip()
        m = re.match(r"(.*?)([.!?…]*)$", body, re.S)
        text, punct = (m.group(1), m.group(2)) if m else (body, "")
        md = escape_md(text) + (" " + marker_text(nums) if nums else "") + escape_md(punct)
        out.append((md, labels.get(plain(sent), "")))
    return out


LABEL_COLOR = {"supported": "", "partial": "orange", "unsupported": "red"}


def answer_markdown(answer: Answer) -> str:
    """The answer as one Markdown string: superscript markers, and sentences the verifier
    does not fully back coloured with a warning sign."""
    parts = []
    for md, label in answer_segments(answer):
        color = LABEL_COLOR.get(label, "")
        parts.append(f":{color}[{md} :material/warning:]" if color else md)
    return " ".join(parts)


def plain_answer(answer: Answer) -> str:
    """What "copy" puts on the clipboard: the answer with its [n] markers and a source list."""
    lines = [answer.text.strip()]
    if answer.citations:
        lines.append("")
        lines += [f"[{c.n}] {c.source}, page {c.page}" + (f" ({c.section})" if c.section else "")
                  for c in answer.citations]
    return "\n".join(lines)


def timing_markdown(timings_ms: dict) -> str:
    """Per-stage times as a small Markdown table, pipeline stages first, then retrieval's sub-steps."""
    main = [(k, v) for k, v in timings_ms.items() if "_" not in k and isinstance(v, (int, float))]
    sub = [(k, v) for k, v in timings_ms.items() if "_" in k and isinstance(v, (int, float))]
    rows = ["| stage | ms |", "|---|---:|"]
    rows += [f"| {escape_md(k)} | {v:,.1f} |" for k, v in main + sub]
    return "\n".join(rows)
