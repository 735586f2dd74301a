"""Words that ask for the latest (text/latest.py), in the languages the app speaks."""

from __future__ import annotations

import pytest

from rag_core.text.latest import asks_for_latest


@pytest.mark.parametrize("question, language", [
    ("What is the latest travel allowance?", "en"),
    ("What is the current policy on remote work?", "en"),
    ("As of now, how many vacation days do we get?", "en"),
    ("Which is the most recent version of the handbook?", "en"),
    ("Wie hoch ist die aktuelle Reisepauschale?", "de"),
    ("Was gilt derzeit für Homeoffice?", "de"),
    ("¿Cuál es la política vigente de teletrabajo?", "es"),
    ("¿Cuál es la última versión del manual?", "es"),
    ("Quelle est la politique actuelle de télétravail ?", "fr"),
    ("最新の出張手当はいくらですか？", "ja"),
    ("現在の在宅勤務の規則は？", "ja"),
])
def test_questions_asking_for_the_latest(question, language):
    assert asks_for_latest(question, language)


@pytest.mark.parametrize("question, language", [
    ("What was the travel allowance in 2023?", "en"),
    ("How do I fit a Poisson regression?", "en"),
    ("Wie hoch war die Reisepauschale 2023?", "de"),
    ("¿Cómo se reserva un viaje?", "es"),
    ("出張手当はいくらでしたか？", "ja"),
])
def test_questions_that_do_not(question, language):
    assert not asks_for_latest(question, language)
