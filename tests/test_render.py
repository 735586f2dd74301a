"""escape_md: untrusted text (a document sentence, a model's answer, a user's question) shown
through Streamlit's Markdown renders as its literal text, never as an image, a link,
formatting, HTML, a Streamlit directive or math."""

from __future__ import annotations

import html
import re

import pytest

from rag_core.render import escape_md

ATTACKS = [
    "![](http://evil/x.png)",
    "![tracker](https://evil.example/p.png \"t\")",
    "[click me](javascript:alert(1))",
    "see [the docs][1]\n\n[1]: http://evil/",
    "<http://evil/autolink>",
    "**bold** and __strong__ and *em* and _em_",
    "~~struck~~",
    "`code` and ``more``",
    ":red[x] and :blue-background[y] and :rainbow[z]",
    ":material/lock: and :material/warning:",
    "emoji :smile: :streamlit:",
    "$x$ and $$y^2$$",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "# Title",
    "Intro line\n# Heading\n- item\n+ item\n* item\n1. first\n2) second\n> quote\n| a | b |\n|---|---|\n",
    "Setext heading\n===\nand another\n---",
    "text\n\n    indented code block",
    "   leading spaces",
    "```\nfenced\n```",
    "&lt;b&gt; is an entity, &amp; too, and &#60;",
    "www.example.com and https://example.com and mail me at a@b.com",
    "a table cell | breaker",
    "back\\slash and trailing backslash\\",
    "line one  \nline two (hard break)",
]

# Characters that Markdown, GFM, HTML or Streamlit would interpret if they stood unescaped.
SPECIAL = set("\\`*_{}[]()#+-.!|<>~$:&@/")


def shown(text: str) -> str:
    """What the rendered escape should read as: the text, its line breaks as spaces."""
    return re.sub(r"\s*\n\s*", " ", text).strip()


_SPAN = re.compile(r"(`+) (.*?) \1")  # escape_md's code spans (URLs, "<-"): literal in every Markdown


def unescaped(md: str) -> str:
    """The characters that stand in `md` without a backslash before them, outside code spans."""
    return re.sub(r"\\(.)", "", _SPAN.sub("", md), flags=re.S)


def literal(md: str) -> str:
    """What CommonMark shows: the escaped characters themselves, a code span's text as it is."""
    parts = _SPAN.split(md)
    # split gives [text, ticks, code, text, ticks, code, ...]
    out = [re.sub(r"\\(.)", r"\1", p, flags=re.S) if i % 3 == 0 else (p if i % 3 == 2 else "")
           for i, p in enumerate(parts)]
    return "".join(out)


@pytest.mark.parametrize("text", ATTACKS)
def test_every_special_character_is_escaped_and_nothing_else_changes(text):
    md = escape_md(text)
    left = unescaped(md)
    assert not SPECIAL & set(left), (md, SPECIAL & set(left))
    assert "\n" not in md and "\r" not in md  # one line: no heading, list, quote, code block can start
    assert md == md.strip()  # no leading indentation (an indented code block), no trailing spaces
    assert literal(md) == shown(text)


@pytest.mark.parametrize("text", ATTACKS)
def test_brackets_parens_bang_and_angle_brackets_are_all_backslashed(text):
    md = _SPAN.sub("", escape_md(text))  # inside a code span they are literal
    for ch in "[]()!<>":
        # every occurrence has a backslash right before it, and that backslash is not itself escaped
        for m in re.finditer(re.escape(ch), md):
            before = md[: m.start()]
            run = len(before) - len(before.rstrip("\\"))
            assert run % 2 == 1, (ch, md)


def test_the_named_cases():
    # a URL is a code span: GFM autolinks a bare URL however it is escaped (issue 51)
    assert escape_md("![](http://evil/x.png)") == r"\!\[\]\(` http://evil/x.png `\)"
    assert escape_md("[a](http://x)") == r"\[a\]\(` http://x `\)"
    assert escape_md("**bold**") == r"\*\*bold\*\*"
    assert escape_md(":red[x]") == r"\:red\[x\]"
    assert escape_md(":material/lock:") == r"\:material\/lock\:"
    assert ":material/" not in escape_md(":material/lock:")  # Streamlit rewrites that substring before parsing
    assert escape_md("$x$") == r"\$x\$"
    assert escape_md("<img src=x>") == r"\<img src=x\>"
    assert escape_md("# Title") == r"\# Title"
    assert escape_md("&lt;") == r"\&lt;"  # shows "&lt;", not "<"
    assert escape_md("a\n\n# b\n    c") == r"a \# b c"


def test_plain_text_is_unchanged():
    for text in ("Revenue grew 12 percent in 2023", "Chapter 7 has 3 parts", "x", "",
                 "Zürich hat 421878 Einwohner", "Employees may work remotely on Fridays"):
        assert escape_md(text) == text


md_it = pytest.importorskip("markdown_it")


def render(md: str) -> str:
    parser = md_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return parser.render(md)


@pytest.mark.parametrize("text", ATTACKS)
def test_a_commonmark_renderer_shows_the_text_and_nothing_else(text):
    """A real CommonMark parser (markdown-it-py, with GFM tables and strikethrough) turns the
    escaped text into one paragraph of plain text equal to the original."""
    out = render(escape_md(text)).strip()
    assert out.startswith("<p>") and out.endswith("</p>"), out
    assert set(re.findall(r"</?([a-z]+)", out)) <= {"p", "code"}, out  # no image, link, HTML: a URL is code
    assert html.unescape(re.sub(r"</?(p|code)>", "", out)) == shown(text)


def test_a_marker_is_shown_once_per_sentence():
    from rag_core.models import Answer
    from rag_core.render import answer_segments

    a = Answer(question="q", text="Flat is better [1] than nested [1][2][1]. Sparse is better [2][2].")
    mds = [md for md, _ in answer_segments(a)]
    assert mds[0].count("[¹]") == 1 and mds[0].count("[²]") == 1
    assert mds[1].count("[²]") == 1


def test_a_saved_knowledge_base_names_what_changed():
    from dataclasses import replace

    from rag_core.models import KnowledgeBase, RetrievalSettings
    from rag_core.render import saved_message

    kb = KnowledgeBase(kb_id="k", name="K", owners=["alice"])
    tuned = replace(kb, retrieval=RetrievalSettings(top_k=8))
    assert saved_message(kb, tuned) == "Saved: retrieval settings."  # no word of access: it did not change
    assert saved_message(kb, replace(kb, retrieval=RetrievalSettings(answer_policy="model"))) == "Saved: answer policy."
    shared = replace(kb, acl_users=["bob"], description="HR")
    assert saved_message(kb, shared) == ("Saved: description, access. Access changes apply at once, to the documents "
                                         "already in it too.")
    assert saved_message(kb, kb) == "Nothing changed."


def test_an_answer_keeps_the_documents_structure():
    """Code from a manual renders as a code block with its lines, a list as a list, inline code
    as code, everything else escaped; markers stay after the words that cite."""
    from rag_core.grounding.verify import plain
    from rag_core.models import Answer, Claim
    from rag_core.render import answer_markdown

    text = ('To quit the R program the command is\n```\n> q()\n```\nYou will be asked whether to save [1].\n\n'
            "The keys are:\n\n- left, right, top; [1]\n- bottom and center [1]\n\n"
            "Use `set key top left` or ![x](http://t/p.png) [2].")
    a = Answer(question="q", text=text, highlight="You will be asked whether to save.",
               claims=[Claim(text=plain("Use `set key top left` or ![x](http://t/p.png) [2]."), label="unsupported",
                             score=0.0)])
    out = render(answer_markdown(a))
    assert "<pre><code>&gt; q()\n</code></pre>" in out  # a block, its line literal
    assert "<ul>\n<li>left, right, top; [¹]</li>\n<li>bottom and center [¹]</li>\n</ul>" in out
    assert "<code>set key top left</code>" in out and "<img" not in out and "<a " not in out
    assert "![x](<code>http://t/p.png</code>)" in out  # the model's image shown as text, its URL as code
    assert "<strong>You will be asked whether to save [¹].</strong>" in out
    assert ":red[" in answer_markdown(a)  # the unsupported sentence is marked


def test_a_closest_passage_shows_its_blocks_and_its_best_sentence():
    from rag_core.render import passage_markdown

    out = render(passage_markdown("Put the key at the top left with\n```\nset key top left\n```\nThe keywords "
                                  "left, right, top may be used.", "The keywords left, right, top may be used."))
    assert "<pre><code>set key top left\n</code></pre>" in out
    assert "<strong>The keywords left, right, top may be used.</strong>" in out


def test_a_streaming_draft_renders_code_as_code_before_its_fence_closes():
    from rag_core.render import draft_markdown

    out = render(draft_markdown("Use this [1]:\n```python\nimport os\nprint(os.sep)"))
    assert '<pre><code class="language-python">import os\nprint(os.sep)\n</code></pre>' in out
    assert "<p>Use this: [¹]</p>" in out


def test_r_assignment_and_other_typographic_pairs_are_shown_as_written():
    """Streamlit's Markdown draws `<-` as ←, `->` as →, `--` as — (and >=, <=, ~=, <->) when they
    stand between spaces in plain text, never in code: R's `y <- x` read "y ← x" (issue 50).
    From a document or a model they become code spans, which every Markdown shows literally."""
    md = escape_md("> y <- x[!is.na(x)]; f -> g; a >= 3, b <= 4, c ~= d, e <-> f -- done")
    for seq in ("<-", "->", ">=", "<=", "~=", "<->", "--"):
        assert f"`{seq}`" in md, (seq, md)
    out = render(md)
    assert "<code>&lt;-</code>" in out and "<code>-&gt;</code>" in out and "←" not in out
    assert html.unescape(re.sub(r"<[^>]+>", "", out)).strip() == "> y <- x[!is.na(x)]; f -> g; a >= 3, b <= 4, " \
        "c ~= d, e <-> f -- done"
    # glued to other characters the plugin leaves them alone, and so do we (escaped as before)
    assert escape_md("x<-1 and a--b") == r"x\<\-1 and a\-\-b"


def test_the_decision_line_says_shown_or_withheld_in_words():
    from rag_core.models import Answer
    from rag_core.render import decision_line

    refused = Answer(question="q", text="…", abstained=True, decided_by="reader", policy="conservative")
    line = decision_line(refused)
    assert line.startswith("Withheld by the offline reader's strict lines") and "Shown" not in line
    shown = Answer(question="q", text="Paris [1].", decided_by="verification", policy="model")
    assert decision_line(shown).startswith("Shown by the language model's own judgement")


def test_a_passages_own_heading_is_shown_as_a_title_not_raw_hashes():
    from rag_core.render import passage_markdown

    md = passage_markdown("## Ausleihe\n\nBücher können vier Wochen ausgeliehen werden.")
    assert md.startswith("**Ausleihe**\n\n") and "#" not in md
    out = render(md)
    assert "<strong>Ausleihe</strong>" in out and "<h2>" not in out


def test_a_passage_that_is_only_a_heading_is_never_shown_first():
    from rag_core.generation.record import closest_passages
    from rag_core.models import Chunk, ScoredChunk

    def src(i, text):
        return ScoredChunk(Chunk(chunk_id=f"c{i}", doc_id="d", kb_id="k", text=text, source="bib.md"), 1.0 - i / 10)

    got = closest_passages([src(0, "## Ausleihe"), src(1, "Bücher können vier Wochen ausgeliehen werden.")],
                           None, 3, "Wie lange kann ich ein Buch ausleihen?", "de")
    assert [c.n for c in got] == [1, 2] and "vier Wochen" in (got[0].passage or got[0].snippet)


def test_a_command_on_its_own_line_keeps_its_line():
    """Issue 50: "the command is\\n> q()" ran into the prose ("the command is > q()"). A prompt
    line that looks like code ("> q()", "$ R CMD INSTALL pkg.tar.gz") is shown as code on its
    own line, in an answer and in a passage; a quoted line of prose stays prose."""
    from rag_core.models import Answer
    from rag_core.render import answer_markdown, passage_markdown

    text = ("4. To quit the R program the command is\n> q() [1].\n\n"
            "To install it, type\n$ R CMD INSTALL path/pkg_version.tar.gz\nat the shell prompt [2].")
    out = render(answer_markdown(Answer(question="q", text=text)))
    assert "<pre><code>&gt; q()\n</code></pre>" in out
    assert "<pre><code>$ R CMD INSTALL path/pkg_version.tar.gz\n</code></pre>" in out
    assert "the command is [¹]." in out and "at the shell prompt [²]." in out
    out = render(passage_markdown("For help on solve use\n> help(solve)\nAn alternative is\n> ?solve\nas well."))
    assert "<pre><code>&gt; help(solve)\n</code></pre>" in out and "<pre><code>&gt; ?solve\n</code></pre>" in out
    quoted = render(passage_markdown("He wrote:\n> We will meet again in spring\nand left."))
    assert "<pre>" not in quoted and "We will meet again in spring" in quoted


def test_a_word_that_starts_with_a_dot_keeps_its_space():
    """Issue 50: "the user's .GlobalEnv to the file .RData" was shown as "user's.GlobalEnv": the
    space dropped before punctuation where a marker was removed is not a dot starting a word."""
    from rag_core.grounding.citations import resolve
    from rag_core.grounding.verify import plain, quotation_key
    from rag_core.models import Chunk, ScoredChunk

    s = "save.image() saves the objects in the user's .GlobalEnv to the file .RData [1]."
    assert plain(s) == "save.image() saves the objects in the user's .GlobalEnv to the file .RData."
    assert quotation_key("a local .tar.gz file [2] .") == "a local .tar.gz file"
    src = [ScoredChunk(Chunk(chunk_id="c", doc_id="d", kb_id="k", text=s), 1.0, {})]
    assert "user's .GlobalEnv" in resolve(s + " Also [9].", src).text  # [9] dropped, spaces kept


def test_r_list_indexing_is_not_a_citation_marker():
    """Issue 50 (Chromium run): R-intro's "Lst[[1]], Lst[[2]]" was shown as "Lst[], Lst[]" with
    the numbers turned into superscript markers. "[[n]]" is code, never a marker."""
    from rag_core.grounding.citations import MARKER, attach_markers
    from rag_core.grounding.verify import plain
    from rag_core.models import Answer
    from rag_core.render import answer_markdown

    t = "These may be referred to as Lst[[1]], Lst[[2]] and Lst[[4]] [10]."
    assert [m.group(1) for m in MARKER.finditer(t)] == ["10"]
    assert attach_markers(t) == t and plain(t) == "These may be referred to as Lst[[1]], Lst[[2]] and Lst[[4]]."
    out = render(answer_markdown(Answer(question="q", text=t)))
    assert "Lst[[1]], Lst[[2]] and Lst[[4]] [¹⁰]." in html.unescape(out)
