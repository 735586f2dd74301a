"""Confidence that means "probably right" (issue 25): P(answers) is calibrated on three
domains, so a right short answer, judged with the sentence that states it, shows confidence
≥ 0.5 on a manual and on Wikipedia-like text, and a supported sentence that only mentions the
topic shows less. Real reader model (under the SQuAD-only calibration `q()` read 0.19)."""

from __future__ import annotations

import pytest

from rag_core.grounding.verify import Verifier, answers_question, confidence, grounding_score
from rag_core.reader import get_reader

MANUAL = ("Quitting R. To end an R session, type q() at the prompt. R asks whether to save the "
          "workspace image. The R prompt is a greater-than sign.")
ENCYCLOPEDIA = "India is a country in South Asia. Its capital is Delhi. India has many languages."


@pytest.fixture(scope="module")
def verifier():
    return Verifier(reader=get_reader())


def scores(verifier, answer: str, source: str, question: str) -> tuple[float, float]:
    claims, _ = verifier.verify(answer + " [1]", [source], question=question)
    g, aq = grounding_score(claims), answers_question(claims)
    return g, confidence(g, aq)


@pytest.mark.parametrize("answer,source,question", [
    ("q()", MANUAL, "How do I quit R?"),
    ("Delhi.", ENCYCLOPEDIA, "What is the capital of India?"),
])
def test_a_right_short_answer_shows_confidence_of_at_least_half(verifier, answer, source, question):
    g, c = scores(verifier, answer, source, question)
    assert g == 1.0 and c >= 0.5


def test_a_supported_topical_sentence_shows_less_than_the_answer(verifier):
    _, right = scores(verifier, "q()", MANUAL, "How do I quit R?")
    g, topical = scores(verifier, "The R prompt is a greater-than sign.", MANUAL, "How do I quit R?")
    assert g == 1.0 and topical < 0.5 and topical < right
