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


FERRY = ("A car ferry runs between Portvessa and the mainland port of Hallundsvik four times a day; the crossing "
         "takes 75 minutes. Vessa Airstrip, north of Portvessa, has scheduled flights to the provincial capital "
         "twice a week. There is no railway on the island.")
FERRY_QUOTE = ("A car ferry runs between Portvessa and the mainland port of Hallundsvik four times a day; the crossing "
               "takes 75 minutes.")
SWAPPED = "The ferry to Hallundsvik sails twice a week, and each crossing lasts 75 minutes [1]."


def quoted(verifier, answer: str, source: str, quotes: list[str] | None):
    claims, _ = verifier.verify(answer, [source], question="How often does the ferry sail?", titles=["Portvessa"],
                                evidence=[quotes] if quotes is not None else None)
    return claims


def test_evidence_spans_pin_each_fact_to_the_quoted_sentence(verifier):
    """"Twice a week" is in the passage, said of the flights: without its evidence named, the
    changed sentence reads supported; held to the sentence its writer quoted, it does not, and
    the facts it lacks are named. The true sentence reads supported either way."""
    assert [c.label for c in quoted(verifier, SWAPPED, FERRY, None)] == ["supported"]  # the gap quotes close
    got = quoted(verifier, SWAPPED, FERRY, [FERRY_QUOTE])
    assert got[0].label == "unsupported" and "frequency: weekly" in got[0].missing
    true = "The ferry to Hallundsvik sails four times daily, and each crossing lasts 75 minutes [1]."
    assert [c.label for c in quoted(verifier, true, FERRY, [FERRY_QUOTE])] == ["supported"]


def test_an_evidence_span_outside_the_cited_passage_is_rejected(verifier):
    """A quote that is not in the passage is no evidence: the sentence is judged as if none were
    named (and a made-up quote cannot lift an invented sentence)."""
    forged = "The ferry sails twice a week."
    assert [c.label for c in quoted(verifier, SWAPPED, FERRY, [forged])] == \
        [c.label for c in quoted(verifier, SWAPPED, FERRY, None)]
    invented = "The ferry also carries bicycles free of charge on every crossing [1]."
    assert quoted(verifier, invented, FERRY, ["The ferry also carries bicycles free of charge."])[0].label != "supported"


def test_a_sentence_that_matches_none_of_its_quotes_is_partial_at_best(verifier):
    """Its writer named other sentences as its evidence: without its own, it is flagged."""
    claim = "Flights to the provincial capital leave Vessa Airstrip twice a week [1]."
    assert [c.label for c in quoted(verifier, claim, FERRY, None)] == ["supported"]
    assert quoted(verifier, claim, FERRY, [FERRY_QUOTE])[0].label in ("partial", "unsupported")


def test_an_outline_items_copy_under_its_lead_reads_supported(verifier):
    """A title page copied into an outline, its two lines joined and no full stop, under the
    item's lead ("- Kettle Guide: …"): the source's own words, supported (issue 50: such a line
    read partial, judged as a fragment answer)."""
    title = "# Kettle Guide\nCare and Cleaning of the Arden Kettle\nEdition 2024-03-01"
    body = "## Cleaning\n\nDescale the kettle monthly with white vinegar."
    answer = ("- Kettle Guide: Care and Cleaning of the Arden Kettle Edition 2024-03-01 [1]\n"
              "- Cleaning: Descale the kettle monthly with white vinegar [2].")
    claims, grounding = verifier.verify(answer, [title, body], question="Summarize kettle-guide.pdf",
                                        titles=["Kettle Guide", "Kettle Guide > Cleaning"],
                                        leads=[["Kettle Guide"], ["Cleaning"]])
    assert [c.label for c in claims] == ["supported", "supported"] and grounding == 1.0
