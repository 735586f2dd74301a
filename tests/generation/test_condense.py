"""Offline follow-up condensing: the pronoun gives way to the earlier question's topic."""

from __future__ import annotations

import pytest

from rag_core.generation.condense import condense, depends_on_context, topic


def hist(*questions: str) -> list[tuple[str, str]]:
    out = []
    for q in questions:
        out += [("user", q), ("assistant", "Some answer [1].")]
    return out


@pytest.mark.parametrize("earlier, follow_up, standalone", [
    ("Where is the Eiffel Tower?", "When was it built?", "When was the Eiffel Tower built?"),
    ("When did Beyoncé start becoming popular?", "What areas did she compete in?", "What areas did Beyoncé compete in?"),
    ("Tell me about France", "and its capital?", "and France's capital?"),
    ("What did the Normans conquer in 1066?", "Who led them?", "Who led the Normans?"),
    ('Who wrote "War and Peace"?', "When was it published?", "When was War and Peace published?"),
    ("What is photosynthesis?", "Where does it happen in the plant?", "Where does photosynthesis happen in the plant?"),
    ("Who is Marie Curie?", "What did her research show?", "What did Marie Curie's research show?"),
    ("Who is Marie Curie?", "Who gave her to the committee?", "Who gave Marie Curie to the committee?"),
])
def test_pronoun_replaced_by_topic(earlier, follow_up, standalone):
    assert condense(follow_up, hist(earlier)) == standalone


def test_fragment_gets_the_topic_appended():
    assert condense("and in 1990?", hist("What was the population of Paris?")) == "and in 1990 (Paris)?"


def test_standalone_questions_are_left_alone():
    h = hist("Where is the Eiffel Tower?")
    assert condense("How tall is the Statue of Liberty in New York?", h) == "How tall is the Statue of Liberty in New York?"
    assert condense("When was it built?", []) == "When was it built?"  # nothing to refer back to
    # the topic is named already
    assert condense("Is the Eiffel Tower in it?", h) == "Is the Eiffel Tower in it?"


def test_the_latest_earlier_question_with_a_topic_wins():
    h = hist("Where is the Eiffel Tower?", "What about the Louvre?")
    assert condense("When did it open?", h) == "When did the Louvre open?"


def test_topic_and_dependency():
    assert topic("What is the boiling point of water?") == "boiling point of water"
    assert topic("How does it work?") is None
    assert depends_on_context("Why?") and depends_on_context("What is its area?")
    assert not depends_on_context("What is the area of Lake Geneva?")
