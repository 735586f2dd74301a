"""training/reader/mine_docs.py: the evaluation guard, and the parsers on small texts written
here (no network, no apt, no package cache)."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "training" / "reader" / "mine_docs.py"


@pytest.fixture(scope="module")
def md():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("mine_docs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mine_docs"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def guard(md):
    return md.Guard()


# ---- the evaluation guard ---------------------------------------------------------------------------
@pytest.mark.parametrize("pkg", ["r-doc-pdf", "r-doc-html", "gnuplot-doc", "bash-doc", "bash", "maxima-doc",
                                 "asymptote-doc"])
def test_a_listed_package_is_refused(md, guard, pkg):
    with pytest.raises(AssertionError):
        guard.check_package(pkg)


def test_fetching_a_listed_package_raises_before_apt_runs(md, guard, tmp_path):
    with pytest.raises(md.EvaluationDocument):
        md.fetch_package("r-doc-html", "4.2.2-1", tmp_path, guard)
    assert not (tmp_path / "debs").exists()


def test_every_package_mined_is_allowed(md, guard):
    for pkg in md.PACKAGES:
        guard.check_package(pkg)
    assert not set(md.PACKAGES) & guard.packages


@pytest.mark.parametrize("doc", [
    "/usr/share/doc/gnuplot-doc/gnuplot.html",
    "/usr/share/info/gnuplot.info.gz",
    "gnuplot 5.4 manual",
    "/usr/share/R/doc/manual/R-intro.html",
    "/usr/share/doc/r-doc-html/manual/R-data.html",
    "/usr/lib/R/library/base/html/grep.html",
    "R FAQ",
    "An Introduction to R",
    "R Data Import/Export",
    "/usr/share/man/man1/bash.1.gz",
    "Bash Reference Manual",
    "/usr/share/doc/maxima-doc/html/maxima_toc.html",
    "Asymptote: the Vector Graphics Language",
    "/usr/share/man/man1/asy.1.gz",
])
def test_a_document_naming_an_evaluated_program_is_refused(md, guard, doc):
    assert guard.refused_program(doc)
    with pytest.raises(AssertionError):
        guard.check_document(doc)


@pytest.mark.parametrize("doc", [
    "/usr/share/man/man1/grep.1.gz", "grep(1)", "/usr/share/info/grep.info.gz", "GNU grep manual",
    "Python FAQ — Programming FAQ", "/usr/share/doc/debian/FAQ/pkg-basics.html", "Other manuals for users",
    "ls(1)", "The Debian FAQ", "/usr/share/man/man1/rsync.1.gz", "/usr/share/man/man1/tr.1.gz", "easy things",
])
def test_ordinary_documentation_is_accepted(md, guard, doc):
    assert guard.refused_program(doc) is None
    guard.check_document(doc)


@pytest.mark.parametrize("entry", ["What does -R do in chown?", "-R, --recursive", "ls -R", "R's"])
def test_a_capital_R_option_is_not_the_R_program(md, guard, entry):
    assert guard.refused_program(entry) is None
    guard.check_document(entry, strict=False)


def test_entries_naming_a_program_are_skipped_and_counted(md, guard):
    g = md.Guard()
    assert not g.allows("How does zsh differ from bash?", "entry")
    assert not g.allows("/usr/share/doc/gnuplot-doc/faq.html", "document")
    assert g.allows("How does zsh differ from ksh?", "entry")
    assert g.skipped == {"entry": 1, "document": 1}


def test_files_outside_the_cache_are_never_read(md, tmp_path):
    (tmp_path / "cache").mkdir()
    with pytest.raises(AssertionError):
        md.assert_in_cache(REPO.parent / "shared" / "data" / "squad-dev" / "SPLIT.md", tmp_path / "cache")
    with pytest.raises(AssertionError):
        md.read_text(REPO / "README.md", tmp_path / "cache")


# ---- man pages ---------------------------------------------------------------------------------------
GREP_MAN = r""".TH GREP 1 2022-09-23 "GNU grep 3.8" "User Commands"
.SH NAME
grep \- print lines that match patterns
.SH OPTIONS
.SS "Matching Control"
.TP
.BR \-i ", " \-\^\-ignore\-case
Ignore case distinctions in patterns and input data,
so that characters that differ only in case
match each other.
.TP
\fB\-v\fR, \fB\-\-invert\-match\fR
Invert the sense of matching, to select non-matching lines.
.TP
.BR \-w ", " \-\^\-word\-regexp
Select only those lines containing matches that form whole words.
.TP
\fB\-\-color\fR[=\fIWHEN\fR]
Surround the matched strings with escape sequences to display them in color on the terminal.
.SH "EXIT STATUS"
Normally the exit status is 0 if a line is selected.
"""


def test_groff_options_parse_into_tags_and_descriptions(md):
    page = md.parse_man(GREP_MAN, "grep", "1")
    tags = [it.tag for it in page.items]
    assert tags == ["-i, --ignore-case", "-v, --invert-match", "-w, --word-regexp", "--color[=WHEN]"]
    first = md.units_text(page.items[0].text)
    assert first.startswith("Ignore case distinctions in patterns and input data, so that characters")
    assert md.option_names(tags[0]) == ["-i", "--ignore-case"]
    assert md.option_names(tags[3]) == ["--color"]
    assert md.option_clause(first)[0].startswith("ignores case distinctions in patterns and input data")
    assert any("exit status is 0" in u.text for _, us in page.paragraphs for u in us)


def test_man_options_become_question_description_pairs_with_a_sibling_negative(md, guard):
    rng = random.Random(1)
    page = md.parse_man(GREP_MAN, "grep", "1")
    entries, extra = md.man_entries(page, "grep", rng)
    assert len(entries) == 4
    for e in entries:
        assert "grep" in e.question and e.names
    doc = md.Doc("grep", "/usr/share/man/man1/grep.1.gz", "man", "grep(1)", entries, program="grep",
                 extra_sentences=extra)
    ov = md.Overlap([md.units_text(e.units) for e in entries])
    groups = md.doc_rows(doc, rng, ["sed", "awk"], guard, ov)
    assert len(groups) == 4
    for e, rows in zip(entries, groups):
        pos = [r for r in rows if r[3] == 1 and r[0] == "answers"]
        sib = [r for r in rows if r[4] == "man/sibling"]
        assert len(pos) == 1 and pos[0][1] == e.question
        assert pos[0][2].startswith(f"grep(1) | {e.tag}: ")
        assert sib and sib[0][3] == 0 and sib[0][1] == e.question
        assert e.tag not in sib[0][2]  # another option of the same page
        assert sib[0][2].startswith("grep(1) | -")
        for r in rows:
            assert r[4].startswith("man/") and r[3] in (0, 1) and r[0] in ("answers", "supports")
            assert md.ntok(f"{r[0]}: {r[1]}") + md.ntok(r[2]) + 3 <= md.MAX_LEN[r[0]]
        for r in rows:
            if r[4].startswith("man/nearmiss"):
                assert r[2] == pos[0][2] and r[1] != e.question and r[3] == 0


SSH_MDOC = r""".Dd $Mdocdate: July 23 2022 $
.Dt SSH 1
.Os
.Sh NAME
.Nm ssh
.Nd OpenSSH remote login client
.Sh DESCRIPTION
The options are as follows:
.Bl -tag -width Ds
.It Fl 4
Forces
.Nm
to use IPv4 addresses only.
.It Fl i Ar identity_file
Selects a file from which the identity (private key) for public key authentication is read.
.It Fl p Ar port
Port to connect to on the remote host.
.El
"""

ASCIIDOC_MAN = r""".TH "GIT\-COMMIT" "1"
.SH "OPTIONS"
.PP
\fB\-a\fR, \fB\-\-all\fR
.RS 4
Tell the command to automatically stage files that have been modified and deleted\&.
.RE
.PP
\fB\-m\fR <msg>, \fB\-\-message\fR=<msg>
.RS 4
Use the given <msg> as the commit message\&.
.sp
If multiple
\fB\-m\fR
options are given, their values are concatenated\&.
.RE
"""


def test_mdoc_and_asciidoc_man_pages_parse(md):
    ssh = md.parse_man(SSH_MDOC, "ssh", "1")
    assert [it.tag for it in ssh.items] == ["-4", "-i identity_file", "-p port"]
    assert md.units_text(ssh.items[0].text) == "Forces ssh to use IPv4 addresses only."
    git = md.parse_man(ASCIIDOC_MAN, "git-commit", "1")
    assert [it.tag for it in git.items] == ["-a, --all", "-m <msg>, --message=<msg>"]
    assert md.units_text(git.items[1].text).startswith("Use the given <msg> as the commit message.")
    assert "their values are concatenated" in md.units_text(git.items[1].text)
    assert md.man_program("git-commit") == "git commit"


def test_near_miss_swaps_an_option_for_a_sibling_the_answer_does_not_mention(md):
    rng = random.Random(0)
    got = md.near_miss("What does -i do in grep?", "-i, --ignore-case: Ignore case distinctions.", rng,
                       options=["-v", "--invert-match", "-i"], programs=[], program="grep")
    assert got and got[1] == "option" and got[0] in ("What does -v do in grep?", "What does --invert-match do in grep?")
    got = md.near_miss("What does -i do in grep?", "-i, --ignore-case: Ignore case distinctions.", rng,
                       programs=["sed"], program="grep")
    assert got == ("What does -i do in sed?", "program")
    assert md.near_miss("What does -i do in grep?", "-i: Ignore case.", rng) is None


# ---- FAQs and guides --------------------------------------------------------------------------------
HTML_FAQ = """<html><head><title>Tools FAQ &#8212; Example documentation</title></head><body>
<div class="sphinxsidebar"><h3>Navigation</h3><p>Why is this sidebar here?</p></div>
<div class="body" role="main">
<h1>Tools FAQ<a class="headerlink" href="#x">¶</a></h1>
<h2>1.1. How do I list hidden files?<a class="headerlink" href="#a">¶</a></h2>
<p>Use the <code>-a</code> option of <code>ls</code>. Files whose names start with a dot are then shown.</p>
<pre>ls -a ~
ls -A /etc</pre>
<p>A third sentence. A fourth sentence that is never needed.</p>
<h2>1.2. Why does my disk look full?</h2>
<p>Deleted files stay allocated while a process keeps them open.</p>
<h2>Installing the tools</h2>
<p>Run the installer.</p>
<p><b>(3) Can I run two copies at once?</b></p>
<blockquote><p>Yes, as long as each has its own directory.</p></blockquote>
</div></body></html>"""


def test_html_faq_becomes_question_answer_pairs(md):
    title, entries = md.html_sections(HTML_FAQ, questions_only=True)
    assert title == "Tools FAQ"
    qs = [e.question for e in entries]
    assert qs == ["How do I list hidden files?", "Why does my disk look full?", "Can I run two copies at once?"]
    first = entries[0]
    assert first.units[0].text == "Use the -a option of ls."
    code = [u for u in first.units if u.code]
    assert code and code[0].text == "ls -a ~\nls -A /etc"  # kept whole, lines and all
    assert md.units_text(entries[2].units) == "Yes, as long as each has its own directory."
    # a guide also takes task headings, turned into questions
    _, guide = md.html_sections(HTML_FAQ, questions_only=False)
    assert "How do I install the tools?" in [e.question for e in guide]


def test_faq_rows_pair_a_question_with_its_answer_and_a_neighbours_as_negative(md, guard):
    title, entries = md.html_sections(HTML_FAQ, questions_only=True)
    doc = md.Doc("example", "/x/faq.html", "faq", title, entries)
    ov = md.Overlap([md.units_text(e.units) for e in entries])
    groups = md.doc_rows(doc, random.Random(2), [], guard, ov)
    rows = [r for g in groups for r in g]
    pos = {r[1]: r[2] for r in rows if r[3] == 1}
    assert pos["How do I list hidden files?"].startswith("Tools FAQ | Use the -a option of ls. Files whose names")
    assert "ls -a ~\nls -A /etc" in pos["How do I list hidden files?"]
    assert "never needed" not in pos["How do I list hidden files?"]  # at most three sentences
    negs = [r for r in rows if r[1] == "How do I list hidden files?" and r[4] == "faq/sibling"]
    assert negs and negs[0][3] == 0 and "Use the -a option" not in negs[0][2]


TEXT_FAQ = """Archive-Name: example-faq

Chapter 1: General

1.1: What is frobnicate?

Frobnicate is a tool that tweaks
  things.  It is small.

1.2: How do I make frobnicate quiet?

Put this in your ~/.frobrc:

    quiet = yes
    level = 0

  and restart it.

1.3: Sources of information

  Read the manual.

Why does it crash on startup?

        Usually a broken ~/.frobrc.  Remove it
        and try again.
"""


def test_text_faq_becomes_pairs_with_code_kept(md):
    entries = md.parse_text_faq(TEXT_FAQ)
    assert [e.question for e in entries] == ["What is frobnicate?", "How do I make frobnicate quiet?",
                                             "Why does it crash on startup?"]
    assert md.units_text(entries[0].units) == "Frobnicate is a tool that tweaks things. It is small."
    quiet = entries[1].units
    assert quiet[0].text == "Put this in your ~/.frobrc:"
    assert quiet[1].code and quiet[1].text == "quiet = yes\nlevel = 0"
    assert "Read the manual" not in md.units_text(quiet)  # the next heading ends the answer
    assert md.units_text(entries[2].units).startswith("Usually a broken ~/.frobrc.")


@pytest.mark.parametrize("heading,question", [
    ("2.3.1. Installing packages", "How do I install packages?"),
    ("Creating a Socket¶", "How do I create a socket?"),
    ("How to check out a branch", "How do I check out a branch?"),
    ("Why does my build fail?", "Why does my build fail?"),
    ("Package management", None),
    ("Sorting Basics", None),
])
def test_task_headings_become_questions(md, heading, question):
    assert md.heading_question(heading) == question


def test_info_index_entry_points_at_its_paragraph(md):
    info = ("\x1f\nFile: ex.info,  Node: Matching,  Next: Index,  Up: Top\n\n1 Matching\n**********\n\n"
            "‘-i’\n‘--ignore-case’\n     Ignore case distinctions in patterns and input data.  Also\n"
            "     see ‘-y’.\n\n‘-v’\n     Invert the sense of matching.\n\n"
            "\x1f\nFile: ex.info,  Node: Index,  Prev: Matching,  Up: Top\n\nIndex\n*****\n\n\x00\x08[index\x00\x08]\n"
            "* Menu:\n\n* --ignore-case:                         Matching.    (line 9)\n"
            "* case insensitive search:               Matching.    (line 9)\n"
            "* -v:                                    Matching.\n                                                (line 13)\n")
    nodes, entries = md.parse_info(info)
    assert set(nodes) == {"Matching", "Index"}
    assert ("--ignore-case", "Matching", 9) in entries and ("-v", "Matching", 13) in entries
    tag, units = md.info_paragraph(nodes["Matching"], 9)
    assert tag == "-i, --ignore-case"
    assert md.units_text(units) == "Ignore case distinctions in patterns and input data. Also see ‘-y’."
    q = md.entry_question("case insensitive search", "grep", random.Random(0))
    assert "case insensitive search" in q and "grep" in q


def test_fit_keeps_the_text_within_the_token_limit(md):
    long = [md.Unit("word " * 300 + "end.")]
    got = md.fit("Title", long, ["What does it say?"])
    assert got.startswith("Title | word word") and got.endswith("…")
    assert md.ntok("answers: What does it say?") + md.ntok(got) + 3 <= 128


def test_rows_are_in_the_format_train_py_reads(md, tmp_path, guard):
    page = md.parse_man(GREP_MAN, "grep", "1")
    entries, extra = md.man_entries(page, "grep", random.Random(3))
    doc = md.Doc("grep", "/g", "man", "grep(1)", entries, program="grep", extra_sentences=extra)
    rows = [r for g in md.doc_rows(doc, random.Random(3), ["sed"], guard, md.Overlap([])) for r in g]
    line = json.dumps({"task": rows[0][0], "a": rows[0][1], "b": rows[0][2], "label": rows[0][3], "kind": rows[0][4]})
    back = json.loads(line)
    assert set(back) == {"task", "a", "b", "label", "kind"}
    assert back["task"] in ("answers", "supports") and back["kind"].split("/")[0] == "man"
