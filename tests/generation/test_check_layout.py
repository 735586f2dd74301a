"""What the checker does to a draft keeps the draft as written: a re-cited or dropped sentence
changes only its own span, never the line breaks, the code or the spaces of the rest (issue 50:
a re-cited answer was rebuilt from its claims' plain text, flattened onto one line, and
"a local .tar.gz file" read "a local.tar.gz file"). The end-to-end test reads a real PDF set
like an R manual, through the whole offline answer path."""

from __future__ import annotations

import re

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.generation.check import fix_citations, rewrite_sentences
from rag_core.grounding.citations import attach_markers
from rag_core.models import Claim
from rag_core.render import answer_markdown
from rag_core.workspace import Workspace
from tests.helpers import make_pdf

DRAFT = ("Intro line.\n\n- item one has facts [2].\n- item two\n\n"
         "The command is\n> q()\nand it asks first [1]. The local .tar.gz file is used [1].")


def test_rewriting_sentences_keeps_everything_between_them():
    assert rewrite_sentences(DRAFT, lambda span, claim: span) == DRAFT
    dropped = rewrite_sentences(DRAFT, lambda span, claim: "" if claim.startswith("- item one") else span)
    assert dropped == DRAFT.replace("- item one has facts [2].\n", "")


def test_a_recited_sentence_changes_only_its_marker():
    claims = [Claim(text="Intro line.", label="supported", score=1.0, cited=[], best_source=3),
              Claim(text="The local .tar.gz file is used.", label="partial", score=0.5, cited=[1], best_source=1,
                    supported_by=2)]
    text, fixed = fix_citations(DRAFT, claims)
    assert text == DRAFT.replace("Intro line.", "Intro line [3].").replace("file is used [1].", "file is used [2].")
    assert fixed == {"Intro line.", "The local .tar.gz file is used."}


def test_a_marker_before_a_closing_bracket_and_full_stop_stays_put():
    assert attach_markers("local files, …) [1]. Next.") == "local files, …) [1]. Next."


def test_an_r_manual_pdf_answers_with_its_commands_on_their_own_lines(tmp_path):
    """A PDF set like R's manuals: prompts on their own lines, TeX's ". . ." ellipsis, names that
    start with a dot. The answer keeps each command on its line as code, and every space."""
    page = ("Getting started\n"
            "To quit the R program the command is\n"
            "[code]> q()\n"
            "At this point you will be asked whether you want to save the data from your R session.\n"
            "save.image() saves the objects in the user's .GlobalEnv to the file .RData in the startup directory.\n"
            "Packages can come from a CRAN mirror, Bioconductor, local archives, local files, . . .). Function\n"
            "setRepositories() can select amongst those repositories.")
    (tmp_path / "r-notes.pdf").write_bytes(make_pdf([page], title="R notes"))
    ws = Workspace(get_settings(tmp_path / "data", answer_cache=False))
    try:
        op = Caller.operator()
        ws.create_kb("r", caller=op)
        ws.ingest("r", [tmp_path / "r-notes.pdf"], caller=op)
        a = ws.ask(["r"], "What is the command to quit the R program?", caller=op)
        assert not a.abstained, a.reason
        md = answer_markdown(a)
        assert re.search(r"```\n> q\(\)\n```", md), md  # its own line, as code
        b = ws.ask(["r"], "Where does save.image() save the objects?", caller=op)
        assert "user's .GlobalEnv to the file .RData" in b.text
        assert all(" .GlobalEnv" in c.text for c in b.claims if "GlobalEnv" in c.text)
        c = ws.ask(["r"], "Where can packages come from?", caller=op)
        assert ". ." not in c.text and "local files, …)" in c.text
        assert not re.search(r"\]\s*\.\.", c.text)  # no marker between the dots of an ellipsis
    finally:
        ws.close()
