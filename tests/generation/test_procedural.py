"""Procedural answers (issue 25): a how-to question gets the command with the sentence that
explains it — the contiguous span, code kept verbatim — not one sentence cut from it."""

from __future__ import annotations

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.generation.passage import answer_passage
from rag_core.render import answer_markdown
from rag_core.workspace import Workspace

OP = Caller.operator()
MANUAL = """# Reading data

To read a comma-separated file into a data frame, use:

```
df <- read.csv("data.csv", header = TRUE)
summary(df)
```

The first line of the file holds the column names. Missing values become NA.

# Leaving the program

To leave the program and keep your workspace:

- save the workspace with save.image()
- type q() at the prompt

Plotting is covered in the next chapter.
"""


def test_the_passage_takes_the_code_block_after_its_introducing_sentence():
    from rag_core.text.sentences import split_sentences

    segs = split_sentences(MANUAL)
    intro = next(i for i, s in enumerate(segs) if s.startswith("To read"))
    span = answer_passage(MANUAL, intro)
    assert span.startswith("To read a comma-separated file") and 'read.csv("data.csv", header = TRUE)' in span
    assert "summary(df)" in span and "column names" not in span  # the block, not the paragraph after it
    code = next(i for i, s in enumerate(segs) if s.startswith("```") and "read.csv" in s)
    assert answer_passage(MANUAL, code) == span  # from the code block back to its introduction
    steps = next(i for i, s in enumerate(segs) if s.startswith("To leave"))
    assert "save.image()" in answer_passage(MANUAL, steps) and "q()" in answer_passage(MANUAL, steps)
    plain = next(i for i, s in enumerate(segs) if s.startswith("The first line"))
    # a sentence that stands alone brings its own paragraph, never the code or list beside it
    assert answer_passage(MANUAL, plain) == "The first line of the file holds the column names. Missing values become NA."


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("howto")
    w = Workspace(get_settings(tmp / "data"))
    w.create_kb("Manual", caller=OP)
    (tmp / "manual.md").write_text(MANUAL)
    w.ingest("Manual", [tmp / "manual.md"], caller=OP)
    yield w
    w.close()


def test_a_how_to_question_gets_the_command_and_its_explanation(ws):
    a = ws.ask(["Manual"], "How do I read a CSV file into a data frame?", caller=OP)
    assert not a.abstained, a.reason
    assert "read.csv" in a.text and "To read a comma-separated file" in a.text
    assert a.claims and all(c.label == "supported" for c in a.claims)  # verbatim: backed by its source
    assert a.citations and "read.csv" in a.citations[0].snippet
    md = answer_markdown(a)
    # shown as a code block, its lines kept, never as escaped prose
    assert '\n```\ndf <- read.csv("data.csv", header = TRUE)\nsummary(df)\n```' in md


def test_a_code_block_is_read_with_the_sentence_introducing_it_never_bare(ws):
    """The reader was trained on prose: a code block is a candidate only together with the
    sentence that introduces it, and a block nothing introduces is not read at all (PDF code
    is fenced now, so bare blocks are common; read alone they scored as noise)."""
    (ws.settings.data_dir.parent / "bare.md").write_text(
        "# Appendix\n\n```\nx <- rnorm(100)\nhist(x, breaks = 20)\n```\n\nThat is all for the appendix.\n")
    ws.ingest("Manual", [ws.settings.data_dir.parent / "bare.md"], caller=OP)
    sources = ws.search(["Manual"], "read a CSV file into a data frame with read.csv, or draw hist", k=6,
                        caller=OP).results
    assert any("hist(x" in s.chunk.text for s in sources)  # the bare block was retrieved …
    ev = ws.answers.extractive.read("How do I read a CSV file into a data frame?", sources, max_passages=6)
    texts = [c[2] for c in ev.cands]
    assert not any(t.startswith("```") for t in texts)  # … but never read on its own
    assert not any("hist(x" in t for t in texts)
    assert any(t.startswith("To read a comma-separated file") and "read.csv" in t for t in texts)


def test_a_description_takes_the_one_line_code_term_it_defines():
    """A manual's definition list, as the PDF loader writes it (the term fenced, no blank line
    after the fence): the description is shown with its term, and a sentence after a longer
    code block or after prose is not."""
    text = ("Builtin commands.\n```\nmapfile [-d delim] [-n count] array\n```\n"
            "Read lines from the standard input into the indexed array variable array.\n"
            "```\nx <- 1\ny <- 2\n```\nBoth values are numbers.")
    from rag_core.text.sentences import split_sentences

    segs = split_sentences(text)
    desc = segs.index("Read lines from the standard input into the indexed array variable array.")
    assert answer_passage(text, desc) == (
        "```\nmapfile [-d delim] [-n count] array\n```\nRead lines from the standard input into the indexed array "
        "variable array.")
    assert answer_passage(text, segs.index("Both values are numbers.")) == "Both values are numbers."
    assert answer_passage(text, segs.index("Builtin commands.")) == "Builtin commands."


SESSION = """# Saving a session

Maxima keeps no record of a session unless you ask it to. Sessions can be long, and the output of
some commands runs over many screens, so a transcript on disk is often the only way to read them
again. The syntax works like this:

```
writefile("session.txt")$
```
This will record the entire session into a text file called session.txt in the current directory.
These files are not loadable as commands: it is merely a transcript of a session as it occurred.
"""


def test_a_passage_cut_by_the_chunker_is_read_in_the_document(tmp_path):
    # small chunks put the command and the sentence that says what it does ("This will
    # record …") in different chunks: the answer reads the chunk with its neighbours, shows
    # the command, and every sentence of it is still a quotation of its source (Supported 100%)
    w = Workspace(get_settings(tmp_path / "data", chunk_size=200))
    w.create_kb("Maxima", caller=OP)
    (tmp_path / "session.md").write_text(SESSION)
    w.ingest("Maxima", [tmp_path / "session.md"], caller=OP)
    q = "How do I record a Maxima session into a text file?"
    hits = w.search(["Maxima"], q, caller=OP).results
    top = hits[0].chunk
    assert top.text.startswith("This will record") and "writefile" not in top.text  # the cut under test
    a = w.ask(["Maxima"], q, caller=OP)
    assert not a.abstained and 'writefile("session.txt")$' in a.text and "This will record" in a.text
    assert a.text.index("writefile") < a.text.index("This will record")
    assert a.grounding_score == 1.0 and all(c.label == "supported" for c in a.claims)
    assert [c.chunk_id for c in a.citations] == [top.chunk_id]  # the citation still names the passage found
    assert "This will record the entire session" in a.citations[0].snippet
    assert a.citations[0].snippet in " ".join(top.text.split())  # the viewer finds it in the cited chunk
    w.close()
