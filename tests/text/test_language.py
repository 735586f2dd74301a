"""Language detection on short texts written for these tests (rag_core/text/language.py)."""

from __future__ import annotations

import pytest

from rag_core.text.language import UNKNOWN, chunk_languages, detect, document_language, question_language

TEXTS = {
    "en": "Employees are entitled to twenty-five days of paid leave every calendar year.",
    "de": "Alle Mitarbeiterinnen und Mitarbeiter haben Anspruch auf dreißig Urlaubstage pro Kalenderjahr.",
    "fr": "Les salariés ont droit à trente jours de congés payés par année civile.",
    "es": "Los empleados tienen derecho a treinta días de vacaciones pagadas por año natural.",
    "ja": "従業員は年間二十日の有給休暇を取得できます。",
    "zh": "员工每个日历年享有二十天的带薪年假。",
}


@pytest.mark.parametrize("lang", sorted(TEXTS))
def test_each_language_is_detected(lang):
    assert detect(TEXTS[lang])[0] == lang


@pytest.mark.parametrize("question, lang", [
    ("Wie viele Urlaubstage habe ich?", "de"), ("Combien de jours de congé ai-je ?", "fr"),
    ("¿Cuántos días de vacaciones tengo?", "es"), ("有給休暇は何日ですか？", "ja"), ("我有多少天年假？", "zh"),
    ("How many vacation days do I get?", "en"),
])
def test_questions_are_detected(question, lang):
    assert question_language(question, "en") == lang


def test_a_plain_keyword_query_keeps_the_documents_language():
    # Too short to tell: the searched documents' language stands, not a guess (langid says lb).
    assert question_language("Tamoxifen dosage", "en") == "en"
    assert question_language("sudo apt-get", "de") == "de"
    assert detect("42 !!")[0] == UNKNOWN


def test_a_guess_of_a_language_the_app_cannot_analyse_keeps_the_documents_language():
    # langid's guess here is Nigerian Pidgin (p 0.52): English-like, no stemmer, no messages
    assert detect("How do I run Maxima inside a Jupyter notebook?")[0] != "en"
    assert question_language("How do I run Maxima inside a Jupyter notebook?", "en") == "en"


def test_all_kanji_is_japanese_where_the_documents_are():
    assert question_language("有給休暇", "ja") == "ja"
    assert question_language("有給休暇", "en") == "zh"


def test_a_document_is_judged_by_its_body_and_a_long_chunk_in_another_language_by_itself():
    body = [TEXTS["de"] * 3, "Homeoffice ist an bis zu drei Tagen pro Woche erlaubt, mit Zustimmung der Leitung. " * 3]
    assert document_language(body) == "de"
    summary = "This English summary of the German policy explains the leave rules for every employee in detail. " * 3
    assert chunk_languages([body[0], summary, "| a | b |"], "de") == ["de", "en", "de"]
