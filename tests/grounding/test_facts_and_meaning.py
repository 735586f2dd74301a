"""A written answer is judged on what it states (issue 49): a faithful paraphrase reads
supported, a changed fact does not, an invented sentence beside true ones is flagged. The
project's own small texts; the real reader and the bundled MiniLM."""

from __future__ import annotations

import pytest

from rag_core.config import get_settings
from rag_core.embeddings import bundled_embedder
from rag_core.grounding.facts import missing
from rag_core.grounding.verify import Verifier
from rag_core.reader import get_reader

KETTLE = ("Kettle care. Descale the kettle monthly with white vinegar, then rinse it twice with clean water. "
          "Never immerse the base in water. The jug holds 100 cl; fill it between the two marks.")
R_DATA = ("Reading data. The function read.table() reads a file in table format and creates a data frame from "
          "it, with one row per line of the file.")


@pytest.fixture(scope="module")
def verifier(tmp_path_factory):
    s = get_settings(tmp_path_factory.mktemp("v"))
    return Verifier(reader=get_reader(), embed=bundled_embedder(s).embed_array)


def labels(verifier, answer: str, source: str) -> list[str]:
    claims, _ = verifier.verify(answer, [source], question=None, titles=[source.split(".")[0]])
    return [c.label for c in claims]


def test_a_paraphrase_with_a_code_term_reads_supported(verifier):
    assert labels(verifier, "To load a file laid out as a table into a data frame, call `read.table()` [1].",
                  R_DATA) == ["supported"]
    assert labels(verifier, "Once a month, descale the kettle using white vinegar [1].", KETTLE) == ["supported"]


@pytest.mark.parametrize("changed", [
    "Once a week, descale the kettle using white vinegar [1].",  # weekly for monthly
    "The jug holds 10 cl [1].",  # 10 for 100
    "To load a file laid out as a table into a data frame, call `read_excel()` [1].",  # another function
    "You can immerse the base in water [1].",  # the negation dropped
])
def test_a_changed_fact_reads_unsupported(verifier, changed):
    assert labels(verifier, changed, KETTLE + " " + R_DATA) == ["unsupported"]


def test_an_invented_sentence_is_flagged_and_the_true_one_beside_it_is_not(verifier):
    got = labels(verifier, "Once a month, descale the kettle using white vinegar [1]. "
                           "Replace the heating element every two years with a Velmora spare part [1].", KETTLE)
    assert got[0] == "supported" and got[1] == "unsupported"


def test_the_missing_facts_are_named():
    lost = missing("Descale it weekly; the jug holds 10 cl.", KETTLE)
    assert {(f.kind, f.text) for f in lost} == {("frequency", "weekly"), ("number", "10 cl")}
    assert missing("Descale it every month; the jug holds 100 centilitres.", KETTLE) == [] or \
        all(f.kind != "frequency" for f in missing("Descale it every month.", KETTLE))
    # facts in any language: numbers and code are the same in every script
    assert [f.kind for f in missing("ポットの容量は 10 cl です。", KETTLE, language="ja")] == ["number"]
    assert missing("Entkalken Sie den Wasserkocher monatlich mit Essig.", KETTLE, language="de") == []
