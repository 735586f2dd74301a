"""Turning answers into safe display text (used by the Streamlit pages; no Streamlit here).

Everything that came from a document or a model is escaped before it reaches Markdown:
a document sentence like `![x](http://tracker/p.png)` or `<script>` must show as text,
never load an image or run."""

from __future__ import annotations

import re

from .grounding.verify import answer_sentences, plain, quotation_key
from .models import Answer

# Every ASCII punctuation character that starts or ends something in Streamlit's Markdown:
# CommonMark/GFM syntax (emphasis, links and images, code, headings, lists, quotes, tables,
# strikethrough, HTML, entities `&…;`, autolinks `<…>` and bare `www.`/`http://`/`a@b.c`),
# Streamlit's directives (`:red[…]`, `:material/…:`, emoji `:name:`) and math (`$…$`).
# CommonMark renders a backslash before any ASCII punctuation as that character alone.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&@/])")
# Line breaks end paragraphs, start headings, lists, quotes, code blocks and setext
# underlines; inside a table cell or a `:color[…]` label they break the surrounding markup.
_BREAKING_SPACE = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_MARKERS = re.compile(r"((?:\s*\[\d{1,3}\])+)")


def escape_md(text: str) -> str:
    """`text` as Markdown that Streamlit renders as exactly that text, on one line.

    - every ASCII punctuation character that Markdown, GFM, HTML or Streamlit interprets,
      namely  \\ ` * _ { } [ ] ( ) # + - . ! | < > ~ $ : & @ /  gets a backslash, so no link,
      image, emphasis, code, heading, list, quote, table, HTML tag, entity, autolink,
      `:color[…]` / `:material/…:` / emoji directive or `$math$` can form;
    - every whitespace run that holds a line break becomes one space, and leading and
      trailing whitespace is dropped (so no paragraph, heading, list or indented code block
      starts, and the result can sit inside `**…**`, a table cell or a `:color[…]` label).

    Letters, digits, other characters and single spaces are unchanged. Rendered, the result
    reads as `text` with its line breaks shown as spaces (HTML collapses other runs anyway)."""
    return _MD_SPECIAL.sub(r"\\\1", _BREAKING_SPACE.sub(" ", text).strip())


def marker_text(nums: list[int]) -> str:
    return "".join(f"[{n}]".translate(_SUPERSCRIPT) for n in nums)


def answer_segments(answer: Answer) -> list[tuple[str, str]]:
    """(escaped markdown of one sentence with its markers as superscripts, label) in order.
    Label is the verifier's (supported / partial / unsupported) or "" for abstentions."""
    return [(md, label) for md, label, _ in _segments(answer)]


def _segments(answer: Answer) -> list[tuple[str, str, str]]:
    """answer_segments with each sentence's own text (answer_markdown matches the highlight)."""
    labels = {c.text: c.label for c in answer.claims}
    out = []
    for sent in answer_sentences(answer.text):
        # once each: a sentence citing one passage twice ("… [1] … [1].", or a model's "[1][1]")
        # showed "[¹][¹]"
        nums = list(dict.fromkeys(int(x) for x in re.findall(r"\[(\d{1,3})\]", sent)))
        body = re.sub(r"\s*\[\d{1,3}\]", "", sent).strip()
        m = re.match(r"(.*?)([.!?…]*)$", body, re.S)
        text, punct = (m.group(1), m.group(2)) if m else (body, "")
        md = _md_with_code(text) + (" " + marker_text(nums) if nums else "") + escape_md(punct)
        out.append((md, labels.get(plain(sent), ""), sent))
    return out


def _md_with_code(text: str) -> str:
    """Escaped prose, with the parts between ``` fences (a command an extractive answer took
    from a code block) as inline code: literal in Markdown, so nothing in it is interpreted."""
    parts = text.split("```")
    if len(parts) < 3:
        return escape_md(text)
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 1 and i < len(parts) - 1 and part.strip():
            code = " ".join(part.split())
            fence = "`" * (max((len(m) for m in re.findall(r"`+", code)), default=0) + 1)
            out.append(f"{fence} {code} {fence}")
        elif part.strip():
            out.append(escape_md(part))
    return " ".join(out)


# The one heading over an abstention's closest passages (chat page, CLI, OpenAI-compatible API):
# the system could not confirm an answer in them, which is not the same as there being none.
CLOSEST_HEADING = "No answer could be confirmed in these passages, the closest ones found. Check them yourself"


LABEL_COLOR = {"supported": "", "partial": "orange", "unsupported": "red"}


def answer_markdown(answer: Answer) -> str:
    """The answer as one Markdown string: superscript markers, sentences the verifier does not
    fully back coloured with a warning sign, and in an offline passage the sentence that
    answers in bold."""
    parts = []
    key = quotation_key(answer.highlight) if answer.highlight else ""
    for md, label, sent in _segments(answer):
        color = LABEL_COLOR.get(label, "")
        s = quotation_key(sent)
        if key and s and (s in key or key in s) and not color:
            md = f"**{md}**"
        parts.append(f":{color}[{md} :material/warning:]" if color else md)
    return " ".join(parts)


def plain_answer(answer: Answer) -> str:
    """What "copy" puts on the clipboard: the answer with its [n] markers and a source list."""
    lines = [answer.text.strip()]
    if answer.citations:
        lines.append("")
        lines += [f"[{c.n}] {c.source}, page {c.page}" + (f" ({c.section})" if c.section else "")
                  + (f", {c.date}" if c.date else "")
                  for c in answer.citations]
    if answer.conflicts:
        from .models import conflict_note

        lines += ["", *(conflict_note(cf) for cf in answer.conflicts)]
    return "\n".join(lines)


def timing_markdown(timings_ms: dict) -> str:
    """Per-stage times as a small Markdown table, pipeline stages first, then retrieval's sub-steps."""
    main = [(k, v) for k, v in timings_ms.items() if "_" not in k and isinstance(v, (int, float))]
    sub = [(k, v) for k, v in timings_ms.items() if "_" in k and isinstance(v, (int, float))]
    rows = ["| stage | ms |", "|---|---:|"]
    rows += [f"| {escape_md(k)} | {v:,.1f} |" for k, v in main + sub]
    return "\n".join(rows)


def saved_message(before, after) -> str:
    """What a save changed, named: "Access changes apply at once" only when access changed."""
    named = [label for label, changed in (
        ("description", before.description != after.description),
        ("instructions", before.instructions != after.instructions),
        ("grounded-only", before.grounded_only != after.grounded_only),
        ("retention", before.retention_days != after.retention_days),
        ("answer policy", before.retrieval.answer_policy != after.retrieval.answer_policy),
        ("retrieval settings", {**vars(before.retrieval), "answer_policy": ""} != {**vars(after.retrieval), "answer_policy": ""}),
    ) if changed]
    access = (before.owners, before.acl_users, before.acl_groups) != (after.owners, after.acl_users, after.acl_groups)
    if access:
        named.append("access")
    if not named:
        return "Nothing changed."
    return (f"Saved: {', '.join(named)}."
            + (" Access changes apply at once, to the documents already in it too." if access else ""))
