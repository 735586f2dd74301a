"""Citation parsing and the claim verifier (the real reader model that ships in the repo)."""

import pytest

from rag_core.grounding.citations import attach_markers, markers_in, resolve
from rag_core.grounding.verify import Verifier, answers_question, confidence, grounding_score, judged_score, split_claims
from rag_core.reader import get_reader
from rag_core.models import Chunk, Claim, ScoredChunk


def src(i: int, text: str) -> ScoredChunk:
    return ScoredChunk(Chunk(chunk_id=f"k/d{i}#0", doc_id=f"d{i}", kb_id="k", text=text, source=f"f{i}.pdf",
                             page_start=i + 1), 0.9)


def test_marker_forms():
    assert markers_in("a [1] b [Source 2] c [3, 4] d [source 5; 6] e [x] f [10]") == [1, 2, 3, 4, 5, 6, 10]


def test_resolve_renumbers_and_drops_invalid():
    sources = [src(0, "zero"), src(1, "one"), src(2, "two")]
    r = resolve("First [3]. Second [1, 3]. Third [9]. Fourth [Source 2].", sources)
    assert r.text == "First [1]. Second [2][1]. Third. Fourth [3]."
    assert r.invalid == 1
    assert [(c.n, c.doc_id, c.page) for c in r.citations] == [(1, "d2", 3), (2, "d0", 1), (3, "d1", 2)]


def test_attach_markers_moves_trailing_markers_into_the_sentence():
    assert attach_markers("One. [1] Two.[2][3] Three [4].") == "One [1]. Two [2][3]. Three [4]."
    assert split_claims("One thing here. [1] Another thing there [2].") == [("One thing here.", [1]), ("Another thing there.", [2])]


def test_markers_opening_the_answer_belong_to_its_first_sentence():
    # a small model copying the sources' layout writes the marker first
    assert split_claims("[1] The crust is thin. It moves [2].") == [("The crust is thin.", [1]), ("It moves.", [2])]
    assert attach_markers("[3] Yoder was decided in 1972") == "Yoder was decided in 1972 [3]"
    # a first sentence that cites already keeps its own marker
    assert split_claims("[1] Disobedience is aggression [2].") == [("Disobedience is aggression.", [2])]


@pytest.fixture(scope="module")
def verifier():
    return Verifier(reader=get_reader())


def test_verifier_separates_supported_from_swapped(verifier):
    source = "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in France."
    claims, score = verifier.verify(
        "The Normans gave their name to Normandy, a region in France [1]. "
        "The Normans gave their name to Normandy, a region in Spain [1]. "
        "Bananas are an excellent source of potassium [1].",
        [source],
    )
    labels = [c.label for c in claims]
    assert labels[0] == "supported"
    assert labels[1] != "supported" and labels[2] == "unsupported"
    assert claims[0].score > claims[1].score and claims[0].score > claims[2].score
    assert 0 < score < 1


def test_wrong_citation_is_not_fully_supported(verifier):
    claims, _ = verifier.verify("Water boils at 100 degrees Celsius at sea level [2].",
                                ["Water boils at 100 degrees Celsius at sea level.", "Cats sleep a lot."])
    assert claims[0].label == "partial" and claims[0].best_source == 2


def test_a_supported_sentence_that_does_not_answer_scores_low_on_answering(verifier):
    src = ("Parental leave. The leave rule: the precise rule is somewhat quirky and hard to find in the references. "
           "Parents may take up to 16 weeks of paid leave after the birth of a child.")
    q = "How many weeks of paid parental leave can parents take?"
    mention, _ = verifier.verify("The leave rule: the precise rule is somewhat quirky and hard to find in the references [1].",
                                 [src], question=q)
    answer, _ = verifier.verify("Parents may take up to 16 weeks of paid leave after the birth of a child [1].", [src], question=q)
    assert mention[0].label == "supported" and answer[0].label == "supported"  # both are the source's words
    assert answers_question(answer) > 0.5 > answers_question(mention)
    assert confidence(grounding_score(mention), answers_question(mention)) < 0.5
    assert confidence(grounding_score(answer), answers_question(answer)) > 0.5


def test_with_a_question_the_right_short_answer_outscores_a_hallucinated_one(verifier):
    src = "The observatory was built in 1887 on the northern hill and was funded by the merchant guild."
    q = "When was the observatory built?"
    right = judged_score(verifier.verify("1887 [1].", [src], question=q)[0])
    wrong = judged_score(verifier.verify("1903 [1].", [src], question=q)[0])
    assert right > wrong and wrong < 0.2


def test_confidence_needs_both_scores():
    cl = [Claim("a", "supported", 0.9, [1]), Claim("b", "partial", 0.5, [1]), Claim("c", "unsupported", 0.1)]
    assert grounding_score(cl) == 0.5
    assert confidence(1.0, 0.1) < 0.2  # supported but not an answer
    assert confidence(0.0, 0.95) == 0.0  # answers, but nothing backs it
    assert confidence(1.0, 0.9) == pytest.approx(0.9)


def test_a_verbatim_copy_with_the_source_title_glued_in_front_is_supported(verifier):
    # seen with the 0.5B model: "Imperialism The Royal Geographical Society …"
    src = ("The Royal Geographical Society of London and other geographical societies in Europe had great influence "
           "and were able to fund travelers who would come back with tales of their discoveries.")
    copy = "Imperialism " + src[:-1] + " [1]."
    assert verifier.verify(copy, [src], titles=["Imperialism — Exploration"])[0][0].label == "supported"
    assert verifier.verify(copy, [src])[0][0].label != "supported"  # without the title it is not the source's text
    # only the source's title is stripped, never other leading words
    neg = "Never " + src[:-1] + " [1]."
    assert verifier.verify(neg, [src], titles=["Imperialism"])[0][0].score < 1.0


def test_a_wrong_span_from_another_sentence_of_the_source_scores_below_the_answer(verifier):
    # the hallucination a small model makes: a real span of the passage, given as the
    # answer to a question it does not answer ("1850" is the library's year, not the founding's)
    src = ("Harrow College was founded in 1636 by the town council. "
           "Its library was opened in 1850 and today holds two million volumes.")
    q = "When was Harrow College founded?"
    right = judged_score(verifier.verify("1636 [1].", [src], question=q)[0])
    wrong = judged_score(verifier.verify("1850 [1].", [src], question=q)[0])
    assert right > wrong
    # a phrase that is not a sentence is judged as the answer to the question, not as a verbatim copy
    q2 = "Who founded Harrow College?"
    right = verifier.verify("the town council [1]", [src], question=q2)[0]
    wrong = verifier.verify("today holds two million volumes [1]", [src], question=q2)[0]
    assert judged_score(right) > judged_score(wrong)
    assert wrong[0].score < 1.0  # every word of it is in the source, which does not make it the answer


def test_a_one_word_answer_is_a_claim_and_debris_beside_sentences_is_not():
    assert split_claims("42 [1]") == [("42", [1])]
    assert split_claims("The answer is 42 [1]. Ok.") == [("The answer is 42.", [1])]


def test_a_copied_source_line_without_a_full_stop_stays_the_sources_own_words(verifier):
    # extractive answers copy bullets and headings whole: those are the source's text
    src = "Install the package with pip install groundwork\nThen run the app from the project folder."
    claims, _ = verifier.verify("Install the package with pip install groundwork [1]", [src],
                                question="How do I install the package?")
    assert claims[0].score == 1.0 and claims[0].label == "supported"


def test_claims_without_any_source_are_unsupported_not_an_error(verifier):
    # e.g. an LLM answer whose passages were all filtered out: nothing can back it
    for q in (None, "When was it founded?"):
        claims, score = verifier.verify("It was founded in 1636 [1]. 1636.", [], question=q)
        assert [c.label for c in claims] == ["unsupported", "unsupported"] and score == 0.0


def test_a_copied_sentence_under_a_list_bullet_is_a_verbatim_copy(verifier):
    """Issue 50: an outline item with no heading is "- <the section's sentence> [n]"; the bullet
    was read as the copy's first word and a sentence copied word for word (one cut short where
    a formula followed) read unsupported."""
    src = ["In the ring Z of integers, the set of prime elements equals the set of irreducible elements, which is",
           "Most early Greeks did not even consider 1 to be a number, so they could not consider it to be a prime."]
    answer = ("- In the ring Z of integers, the set of prime elements equals the set of irreducible elements, which is [1]\n"
              "- Most early Greeks did not even consider 1 to be a number, so they could not consider it to be a "
              "prime [2].")
    claims, score = verifier.verify(answer, src, question="Summarize Prime_number")
    assert [c.score for c in claims] == [1.0, 1.0] and score == 1.0
    swapped, _ = verifier.verify("- Most early Greeks did consider 1 to be a prime number [2].\n- Other line here "
                                 "that says nothing [1].", src, question="Summarize Prime_number")
    assert swapped[0].label != "supported"  # the bullet is layout; the words after it are still judged


def test_a_copy_of_its_cited_source_reads_no_other_source(verifier):
    """Issue 52: a sentence copied from the source it cites is supported whatever the other
    sources say, so they are not read; a sentence that is not a copy still reads them all, and
    the claims come out exactly as when everything was read (cited unknown)."""
    sources = ["The impeller seal must be replaced every 1,500 hours of operation. Check it monthly.",
               "Pumps are serviced by the maintenance team. The seal kit is stored in room 4.",
               "Bearings are greased every 500 hours of operation with lithium grease."]
    answer = ("The impeller seal must be replaced every 1,500 hours of operation [1]. "
              "The seal kit is kept in the maintenance room [2].")
    read: list[tuple[str, str]] = []
    real = verifier.reader.supports

    def counting(claims, evidence):
        read.extend(zip(claims, evidence))
        return real(claims, evidence)

    verifier.reader.supports = counting
    try:
        claims, score = verifier.verify(answer, sources, question="How often is the impeller seal replaced?")
        copied = [e for c, e in read if c.startswith("The impeller seal")]
        written = {e for c, e in read if c.startswith("The seal kit")}
        read.clear()
        parts = split_claims(answer)
        every = verifier._support([p[0] for p in parts], sources, "How often is the impeller seal replaced?", [""] * 3)
    finally:
        verifier.reader.supports = real
    assert copied == [] and claims[0].label == "supported" and claims[0].best_source == 1
    # the paraphrase is read against every source, its own and the others
    assert any(e in sources[1] for e in written) and any(e in sources[0] or e in sources[2] for e in written)
    # reading everything (cited unknown) gives the same scores for what is shown
    assert [c.score for c in claims] == pytest.approx([float(max(every[0][i][n - 1] for n in p[1])) for i, p in
                                                      enumerate(parts)], abs=1e-3)
    assert any(c.startswith("The impeller seal") for c, _ in read)  # ... and did read it
