"""Turning answers into safe display text (used by the Streamlit pages; no Streamlit here).

Everything that came from a document or a model is escaped before it reaches Markdown:
a document sentence like `![x](http://tracker/p.png)` or `<script>` must show as text,
never load an image or run."""

from __future__ import annotations

import re

from .text.links import BARE_URL as _BARE_URL
from .grounding.verify import answer_sentences, plain, quotation_key
from .models import Answer
from .text.messages import text
from .text.sentences import HEADING_LINE, split_units
from .text.source_code import code_language

# Every ASCII punctuation character that starts or ends something in Streamlit's Markdown:
# CommonMark/GFM syntax (emphasis, links and images, code, headings, lists, quotes, tables,
# strikethrough, HTML, entities `&…;`, autolinks `<…>` and bare `www.`/`http://`/`a@b.c`),
# Streamlit's directives (`:red[…]`, `:material/…:`, emoji `:name:`) and math (`$…$`).
# CommonMark renders a backslash before any ASCII punctuation as that character alone.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&@/])")
# Line breaks end paragraphs, start headings, lists, quotes, code blocks and setext
# underlines; inside a table cell or a `:color[…]` label they break the surrounding markup.
_BREAKING_SPACE = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")
# Streamlit (1.41+) draws these as → ← ↔ — ≥ ≤ ≈ when they stand between spaces in a text node
# (StreamlitMarkdown's typographic plugin; never inside code): R's `y <- x` read "y ← x". From a
# document or a model they are shown as code spans, so they read, and copy, as written.
_TYPOGRAPHIC = re.compile(r"(?<!\S)(?:<->|->|<-|--|>=|<=|~=)(?!\S)")
# A URL in a document's or a model's text is shown as code: Streamlit's Markdown (GFM) turns a
# bare URL into a live link even with every character escaped (seen in Chromium: R-FAQ's
# "https://CRAN.R-project.org/doc/FAQ/" was a link), and a link a document or a model wrote is
# never followed from our pages (text/links.py).
_AS_CODE = re.compile(_TYPOGRAPHIC.pattern + "|" + _BARE_URL.pattern, re.I)
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_MARKERS = re.compile(r"((?:\s*(?<!\[)\[\d{1,3}\](?!\]))+)")


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
    flat = _BREAKING_SPACE.sub(" ", text).strip()
    out, pos = [], 0
    for m in _AS_CODE.finditer(flat):
        code = f"`{m.group()}`" if _TYPOGRAPHIC.fullmatch(m.group()) else _code_span(m.group())
        out += [_MD_SPECIAL.sub(r"\\\1", flat[pos:m.start()]), code]
        pos = m.end()
    return "".join(out) + _MD_SPECIAL.sub(r"\\\1", flat[pos:])


def marker_text(nums: list[int]) -> str:
    return "".join(f"[{n}]".translate(_SUPERSCRIPT) for n in nums)


def answer_segments(answer: Answer) -> list[tuple[str, str]]:
    """(Markdown of one sentence with its markers as superscripts, label) in order: its prose
    escaped, its code as code, a list item as an item. Label is the verifier's (supported /
    partial / unsupported) or "" for abstentions."""
    out = []
    for sent, nums, label in _units(answer):
        md = "\n\n".join(b for _, b in _decorated(sent, nums, "", False))
        out.append((md, label))
    return out


def _units(answer: Answer) -> list[tuple[str, list[int], str]]:
    """(sentence, its marker numbers once each, its label) per unit of the answer."""
    labels = {c.text: c.label for c in answer.claims}
    return [(sent, _marker_nums(sent), labels.get(plain(sent), "")) for sent in answer_sentences(answer.text)]


def _marker_nums(sent: str) -> list[int]:
    """The marker numbers of a sentence, once each: a sentence citing one passage twice
    ("… [1] … [1].", or a model's "[1][1]") showed "[¹][¹]"."""
    return list(dict.fromkeys(int(x) for x in re.findall(r"(?<!\[)\[(\d{1,3})\](?!\])", sent)))


def _is_highlight(key: str, text: str) -> bool:
    """Whether `text` is the highlighted sentence (`key`: its quotation_key), either holding
    the other as read for quoting."""
    s = quotation_key(text)
    return bool(key and s and (s in key or key in s))


def _longest_ticks(text: str) -> int:
    """The longest run of backticks in `text`: a fence or code span must be longer."""
    return max((len(m) for m in re.findall(r"`+", text)), default=0)


_FENCE_MARK = re.compile(r"```+|~~~+")
_LIST_ITEM = re.compile(r"^\s*(?:([-*+•])|(\d{1,3})[.)])\s+")
_INLINE_CODE = re.compile(r"(?<!`)(`{1,2})(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_LANG = re.compile(r"[A-Za-z][\w+#.-]{0,19}")


def _escape_spaced(text: str) -> str:
    """escape_md, keeping one space where `text` began or ended with whitespace (the text
    beside an inline code span)."""
    core = escape_md(text)
    if not core:
        return " " if text and text.isspace() else ""
    return (" " if text[:1].isspace() else "") + core + (" " if text[-1:].isspace() else "")


def _code_span(code: str) -> str:
    code = " ".join(code.split())
    tick = "`" * (_longest_ticks(code) + 1)
    return f"{tick} {code} {tick}"


def inline_md(text: str) -> str:
    """Prose as Markdown on one line: escaped, except `code spans` (a model's, or a manual's
    inline command), which stay code and are literal in Markdown."""
    out, pos = [], 0
    for m in _INLINE_CODE.finditer(text):
        out += [_escape_spaced(text[pos:m.start()]), _code_span(m.group(2))]
        pos = m.end()
    out.append(_escape_spaced(text[pos:]))
    return "".join(out).strip()


def code_block(code: str) -> str:
    """A fenced Markdown code block showing `code` literally, its lines kept ("" when empty);
    a first line that is a bare language name ("python") is the block's info string."""
    lines = code.strip("\n").split("\n")
    lang = ""
    if len(lines) > 1 and _LANG.fullmatch(lines[0].strip()):
        lang, lines = lines[0].strip(), lines[1:]
    body = "\n".join(ln.rstrip() for ln in lines).strip("\n")
    if not body.strip():
        return ""
    fence = "`" * max(3, _longest_ticks(body) + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


# A command a manual sets on its own line after a prompt: R's "> q()", a shell's "$ R CMD INSTALL
# pkg.tar.gz". Read as prose it ran into the sentence ("the command is > q()", issue 50). A "> "
# line must look like code (brackets, "=", "<-", "?"), so a quoted line of prose stays prose.
_PROMPT_LINE = re.compile(r"^\s*(?:R?>\s(?=[^\n]*(?:[()\[\]=?]|<-))|[$%]\s(?=[A-Za-z./~]))\S[^\n]{0,118}$")


def _command_line(line: str) -> bool:
    return bool(_PROMPT_LINE.match(line)) and len(line.split()) <= 14


def _blocks_md(text: str) -> list[tuple[str, str]]:
    """One unit of text as Markdown blocks: ("prose" | "item" | "code", markdown)."""
    parts = _FENCE_MARK.split(text)
    if len(parts) >= 2:
        out = []
        for i, part in enumerate(parts):
            if i % 2 == 1:
                if block := code_block(part):
                    out.append(("code", block))
            elif part.strip():
                out += _blocks_md(part)
        return out
    lines = text.split("\n")
    if len(lines) > 1 and any(_command_line(ln) for ln in lines):
        out, run = [], []  # run: consecutive lines of one kind
        for ln in lines + [None]:
            if run and (ln is None or _command_line(ln) != _command_line(run[-1])):
                if _command_line(run[-1]):
                    if block := code_block("\n".join(x.strip() for x in run)):
                        out.append(("code", block))
                else:
                    out += _blocks_md("\n".join(run))
                run = []
            if ln is not None and ln.strip():
                run.append(ln)
        return out
    m = _LIST_ITEM.match(text)
    if m:
        bullet = "-" if m.group(1) else f"{m.group(2)}."
        return [("item", f"{bullet} {inline_md(text[m.end():])}")]
    return [("prose", inline_md(text))] if text.strip() else []


def _decorated(sent: str, nums: list[int], color: str, bold: bool) -> list[tuple[str, str]]:
    """A unit's blocks with its markers after its words (after the sentence introducing its
    code, or after the code when nothing introduces it), coloured with a warning sign when the
    verifier does not fully back it, in bold when it is the sentence that answers."""
    body = re.sub(r"\s*(?<!\[)\[\d{1,3}\](?!\])", "", sent).strip()
    m = re.match(r"(.*?)([.!?…]*)$", body, re.S)
    text, punct = (m.group(1), m.group(2)) if m else (body, "")
    blocks = _blocks_md(text)
    tail = (" " + marker_text(nums) if nums else "") + escape_md(punct)
    words = [i for i, (kind, _) in enumerate(blocks) if kind != "code"]
    at = words[-1] if words else None
    if at is None:
        blocks.append(("prose", tail.strip()))
        at = len(blocks) - 1
    else:
        blocks[at] = (blocks[at][0], blocks[at][1] + tail)
    out = []
    for i, (kind, md) in enumerate(blocks):
        if kind != "code" and md:
            lead, _, rest = md.partition(" ") if kind == "item" else ("", "", md)
            if color and i == at:
                rest = f":{color}[{rest} :material/warning:]"
            elif bold and i == at and rest.strip():
                rest = f"**{rest}**"
            md = f"{lead} {rest}" if lead else rest
        out.append((kind, md))
    return [(k, b) for k, b in out if b]


# The one heading over an abstention's closest passages (chat page, CLI, OpenAI-compatible API):
# the system could not confirm an answer in them, which is not the same as there being none.
CLOSEST_HEADING = text("closest_heading")  # English; closest_heading(language) for the question's


def closest_heading(language: str = "en") -> str:
    """That heading in the question's language (text/messages.py; English where the app does
    not speak it)."""
    return text("closest_heading", language)


LABEL_COLOR = {"supported": "", "partial": "orange", "unsupported": "red"}


def answer_markdown(answer: Answer) -> str:
    """The answer as Markdown that keeps the document's structure: prose as paragraphs, list
    items as a list, code as code blocks; superscript markers; sentences the verifier does not
    fully back coloured with a warning sign; in an offline passage the sentence that answers in
    bold."""
    key = quotation_key(answer.highlight) if answer.highlight else ""
    blocks: list[tuple[str, str]] = []
    for sent, nums, label in _units(answer):
        color = LABEL_COLOR.get(label, "")
        blocks += _decorated(sent, nums, color, not color and _is_highlight(key, sent))
    return join_blocks(blocks)


def draft_markdown(text: str) -> str:
    """Text still streaming in, as the answer will render: code as code (an unclosed fence as
    a block so far), lists as lists, markers as superscripts, everything else escaped."""
    blocks: list[tuple[str, str]] = []
    for sent in answer_sentences(text):
        blocks += _decorated(sent, _marker_nums(sent), "", False)
    return join_blocks(blocks)


def join_blocks(blocks: list[tuple[str, str]]) -> str:
    """Blocks as one Markdown text: prose runs into one paragraph, items into one list, each
    code block apart."""
    out: list[str] = []
    prev = ""
    for kind, md in blocks:
        if out and kind == prev and kind == "prose":
            out[-1] += " " + md
        elif out and kind == prev and kind == "item":
            out[-1] += "\n" + md
        else:
            out.append(md)
        prev = kind
    return "\n\n".join(out)


def passage_markdown(passage: str, highlight: str = "") -> str:
    """A document's passage (an abstention's closest passage) as Markdown with its structure
    kept and its best sentence in bold: the same blocks as an answer, without markers."""
    key = quotation_key(highlight) if highlight else ""
    blocks: list[tuple[str, str]] = []
    for unit in split_units(passage):
        head = HEADING_LINE.fullmatch(unit.strip())
        if head:  # a document's own "## Ausleihe": its title in bold, not the raw hashes
            blocks.append(("heading", f"**{escape_md(head.group(2))}**"))
            continue
        blocks += _decorated(unit, [], "", _is_highlight(key, unit))
    return join_blocks(blocks)





_LINES = re.compile(r"lines? \d+(?:–\d+)?$")


def citation_place(c) -> str:
    """Where in its source a citation points, as a label shows it: "p. 3", or, in source code
    (which has no pages), the cited definition's lines, "lines 6–10"."""
    if code_language(c.source):
        m = _LINES.search(c.section.rsplit(" > ", 1)[-1])
        if m:
            return m.group()
    return f"p. {c.page}"


def plain_answer(answer: Answer) -> str:
    """What "copy" puts on the clipboard: the answer with its [n] markers and a source list."""
    lines = [answer.text.strip()]
    if answer.citations:
        lines.append("")
        lines += [f"[{c.n}] {c.source}, {citation_place(c).replace('p. ', 'page ')}" + (f" ({c.section})" if c.section else "")
                  + (f", {c.date}" if c.date else "") + (f" — may be out of date: {c.stale}" if c.stale else "")
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


def pages_text(pages: list[int]) -> str:
    """1-based page numbers as a person writes them: "1", "1–3", "2, 5–7"."""
    runs: list[list[int]] = []
    for p in sorted(set(pages)):
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in runs)


def ocr_note(pages: list[int]) -> str:
    """The ingest report's line for pages read by OCR (their text may hold misreadings)."""
    if not pages:
        return ""
    return f"read by OCR: page{'s' if len(pages) > 1 else ''} {pages_text(pages)}"


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


# The answer policies in words a person reads (generation/policy.py names them).
_POLICY_WORDS = {
    "conservative": "the offline reader's strict lines",
    "model": "the language model's own judgement, each sentence checked against its sources",
    "calibrated": "lines calibrated for the model in use",
    "strictest": "the strictest policy of the selected knowledge bases",
}


def decision_line(answer: Answer) -> str:
    """Who decided to show or withhold this answer, in words (not the rule's internal name): a
    refusal was never "shown by the conservative answer policy"."""
    how = _POLICY_WORDS.get(answer.policy, f"the {answer.policy} answer policy" if answer.policy else "the answer policy")
    rule = f" Rule: {answer.decided_by}." if answer.decided_by else ""
    return f"{'Withheld' if answer.abstained else 'Shown'} by {how}.{rule}"
