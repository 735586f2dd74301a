"""Offline answers at the grain a person reads: the block holding the best sentence."""

from __future__ import annotations

from rag_core.generation.passage import MAX_PASSAGE_CHARS, answer_passage, cite_each
from rag_core.grounding.verify import answer_sentences
from rag_core.text.sentences import split_sentences, split_units

MANUAL = (
    "# Quitting\n\n"
    "Data which is saved will be available in future R sessions. Further R sessions are simple.\n\n"
    "To remove objects the function rm is available:\n"
    "```\n> rm(x, y, z, ink, junk)\n```\n\n"
    "The price of a day ticket is 12 euros. Children under six travel free.\n"
)


def _k(text: str, needle: str) -> int:
    return next(i for i, s in enumerate(split_sentences(text)) if needle in s)


def test_a_sentence_that_announces_code_brings_the_block():
    p = answer_passage(MANUAL, _k(MANUAL, "To remove objects"))
    assert p.startswith("To remove objects") and "> rm(x, y, z, ink, junk)" in p and p.rstrip().endswith("```")
    # and the code line itself is answered with the sentence that introduces it
    assert answer_passage(MANUAL, _k(MANUAL, "rm(x")) == p


def test_the_neighbouring_sentence_is_shown_with_the_best_one():
    # the price question: a wrong choice between neighbours no longer hides the answer
    p = answer_passage(MANUAL, _k(MANUAL, "Children under six"))
    assert "12 euros" in p and "Children under six" in p and "rm(" not in p


def test_a_list_stays_a_list_and_its_numbers_stay_with_their_items():
    text = "Steps:\n\n1. Start the program with the command\n$ R\n2. At this point commands may be issued.\n3. To quit the program the command is\n> q()\n"
    p = answer_passage(text, _k(text, "To quit"))
    assert "1. Start" in p and "3. To quit the program the command is\n> q()" in p
    units = split_units(cite_each(p, 1))
    assert all(not u.strip().rstrip(".").isdigit() for u in units)  # no "2." claim on its own
    assert units[-1].endswith("q() [1].")


def test_a_long_paragraph_is_cut_around_the_best_sentence():
    filler = " ".join(f"Sentence number {i} says nothing in particular about the topic." for i in range(30))
    text = f"{filler} The answer is forty-two. {filler}"
    p = answer_passage(text, _k(text, "forty-two"))
    assert "The answer is forty-two." in p and len(p) <= MAX_PASSAGE_CHARS
    assert p.index("forty-two") < 120  # the sentence before it, then what follows


def test_a_code_block_is_one_unit_when_cited_and_verified():
    text = "Use the following:\n```\n# a comment\n- not a list\nx <- 1\n```\n"
    units = split_units(text)
    assert len(units) == 1 and units[0].startswith("Use the following:")
    assert len(answer_sentences(cite_each(text, 1))) == 1


def test_the_citation_snippet_is_the_sources_own_words():
    from rag_core.generation.passage import verbatim as _verbatim

    text = "Steps:\n\n1. Start the program\n2. Quit with q()\n"
    p = answer_passage(text, _k(text, "Quit"))
    assert p.endswith("q().")  # the answer ends as a sentence…
    assert _verbatim(p, text) in " ".join(text.split())  # …the snippet is what the source says


def test_the_passage_is_the_documents_block_not_the_chunks():
    # a chunk that begins inside a sentence: the passage begins where the sentence does
    doc = ("The -e option: exit immediately if a pipeline (see Pipelines, page\n9), a list or a compound "
           "command returns a non-zero status. The shell does not exit if the command that fails is part of a test.\n")
    chunk = doc[doc.index("9), a list"):]
    k = _k(chunk, "The shell does not exit")
    assert answer_passage(chunk, k).startswith("9), a list")  # the chunk alone starts mid-sentence
    p = answer_passage(chunk, k, context=doc)
    assert p.startswith("The -e option: exit immediately") and "part of a test" in p
