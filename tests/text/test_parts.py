"""Cutting a question of several parts (rag_core/text/parts.py, issue 53 part 1)."""

from __future__ import annotations

import pytest

from rag_core.text.parts import split_question


@pytest.mark.parametrize("question, language, parts", [
    ("What are the rules for expenses and how long is parental leave?", "en",
     ["What are the rules for expenses?", "How long is parental leave?"]),
    ("When does the office open? How many vacation days do we get?", "en",
     ["When does the office open?", "How many vacation days do we get?"]),
    ("How tall is the tower; when was it built?", "en", ["How tall is the tower?", "When was it built?"]),
    ("Wie lange dauert die Elternzeit und was gilt für Spesen?", "de",
     ["Wie lange dauert die Elternzeit?", "Was gilt für Spesen?"]),
    ("¿Cuándo abre la oficina y cuántos días de vacaciones hay?", "es",
     ["¿Cuándo abre la oficina?", "¿Cuántos días de vacaciones hay?"]),
    ("Quand ouvre le bureau et combien de jours de congé avons-nous ?", "fr",
     ["Quand ouvre le bureau?", "Combien de jours de congé avons-nous ?"]),
])
def test_a_question_of_several_parts_is_cut_into_them(question, language, parts):
    assert split_question(question, language) == parts


@pytest.mark.parametrize("question", [
    "Who founded it and when?",  # the second half means nothing alone
    "How do I install and configure the server?",  # no question word after "and"
    "What are the pros and cons of flat files?",
    "What does the handbook say about travel and expenses?",
    "What is the capital of France?",
    "A? B? C? D? E?",
])
def test_a_question_that_asks_one_thing_stays_whole(question):
    assert split_question(question) == [question]


def test_at_most_four_parts():
    five = " ".join(f"What is item number {i}?" for i in range(5))
    assert split_question(five) == [five]
    four = " ".join(f"What is item number {i}?" for i in range(4))
    assert len(split_question(four)) == 4
