"""Questions and documents in several languages, through the whole chain, on a real workspace.

Offline the reader reads English only: a question in another language is answered with the
closest passages (its best sentence marked), never a bare refusal, in words of its own
language. LLM mode uses LangChain's fake chat model (no capable model runs here): what is
tested is our side, the prompt naming the language and the scores saying what was judged.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.generation.chain import AnswerEngine
from rag_core.text import messages
from rag_core.workspace import Workspace

OP = Caller.operator()
DOCS = {
    "richtlinie.md": "# Urlaubsrichtlinie\n\nAlle Mitarbeiterinnen und Mitarbeiter haben Anspruch auf 30 Urlaubstage "
                     "pro Kalenderjahr. Urlaubsanträge müssen zwei Wochen im Voraus über das Personalportal gestellt "
                     "werden.\n\n# Homeoffice\n\nHomeoffice ist an bis zu drei Tagen pro Woche erlaubt.\n",
    "policy.md": "# Vacation policy\n\nEmployees are entitled to 25 vacation days per calendar year. Requests must "
                 "be submitted two weeks in advance through the HR portal.\n",
    "kisoku.md": "# 休暇規程\n\n従業員は年間20日の有給休暇を取得できます。休暇の申請は人事ポータルから2週間前までに行ってください。\n",
    "reglement.md": "# Règlement des congés\n\nChaque salarié a droit à 28 jours de congés payés par année civile. "
                    "Les demandes de congé sont déposées sur le portail RH.\n",
    "guize.md": "# 休假制度\n\n每位员工每年享有十五天带薪年假。请假申请须提前两周通过人事门户提交。\n",
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("languages")
    w = Workspace(get_settings(root / "data"))
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    w.create_kb("mixed", caller=OP)
    w.ingest("mixed", [root / n for n in DOCS], caller=OP)
    w.create_kb("english", caller=OP)
    w.ingest("english", [root / "policy.md"], caller=OP)
    w.create_kb("empty", caller=OP)
    yield w
    w.close()


def test_each_document_has_its_language(ws):
    got = {d.source: d.language for d in ws.list_documents("mixed", caller=OP)}
    assert got == {"richtlinie.md": "de", "policy.md": "en", "kisoku.md": "ja", "reglement.md": "fr", "guize.md": "zh"}
    assert ws.appdb.languages([ws.get_kb("english", caller=OP).kb_id]) == ("en",)


@pytest.mark.parametrize("question, source", [
    ("Wie viele Urlaubstage habe ich pro Jahr?", "richtlinie.md"),
    ("Wo stelle ich einen Urlaubsantrag?", "richtlinie.md"),  # the compound in the singular
    ("有給休暇は年間何日ですか？", "kisoku.md"),
    ("Combien de jours de congés payés ai-je ?", "reglement.md"),
    ("每年有多少天带薪年假？", "guize.md"),
])
def test_a_question_finds_its_own_languages_passage_by_keyword(ws, question, source):
    res = ws.search(["mixed"], question, k=3, mode="keyword", caller=OP).results
    assert res and res[0].chunk.source == source


def test_offline_a_german_question_shows_the_german_passage_not_a_refusal(ws):
    a = ws.ask(["mixed"], "Wie viele Urlaubstage habe ich pro Jahr?", caller=OP)
    assert a.abstained and a.decided_by == "reader_language" and a.language == "de"
    # the first line says what it offers, in German; the passage is there with its sentence marked
    assert a.text == messages.text("language", "de") and "Englisch" in a.text
    assert a.closest[0].source == "richtlinie.md"
    assert "30 Urlaubstage" in a.closest[0].snippet and "30 Urlaubstage" in a.closest[0].passage
    assert all("Prüfen" in s or "Versuchen" in s or "Laden" in s for s in a.suggestions)
    assert "ich" not in a.suggestions[1]  # German stop words are not offered as key terms


def test_offline_a_japanese_question_marks_the_japanese_sentence(ws):
    a = ws.ask(["mixed"], "有給休暇は年間何日ですか？", caller=OP)
    assert a.decided_by == "reader_language" and a.text == messages.text("language", "ja")
    assert a.closest[0].source == "kisoku.md"
    # one sentence of the two (。 ends a sentence), the one sharing the question's words
    assert a.closest[0].snippet == "従業員は年間20日の有給休暇を取得できます。"


def test_the_mixed_knowledge_base_answers_english_from_the_english_document(ws):
    a = ws.ask(["mixed"], "How many vacation days do employees get per year?", caller=OP)
    assert not a.abstained and a.decided_by == "reader" and a.language == "en"
    assert a.citations[0].source == "policy.md" and "25 vacation days" in a.text


def test_the_refusal_follows_the_questions_language(ws):
    for question, lang in (("Wie viele Urlaubstage habe ich?", "de"), ("¿Cuántos días de vacaciones tengo?", "es"),
                           ("How many vacation days do I get?", "en"), ("有給休暇は何日ですか？", "ja")):
        a = ws.ask(["empty"], question, caller=OP)
        assert a.abstained and a.decided_by == "retrieval" and not a.closest
        assert a.text == messages.text("abstain", lang) and a.reason == messages.text("retrieval", lang)
    assert ws.ask(["empty"], "Wie viele Urlaubstage habe ich?", caller=OP).text.startswith("Dazu habe ich")


class RecordingChat(FakeListChatModel):
    seen: list[Any] = []

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(messages)
        yield from super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)


def test_llm_mode_asks_for_the_questions_language_and_does_not_score_what_the_reader_cannot_read(ws, monkeypatch):
    monkeypatch.setattr(ws.settings, "llm_crag", False)
    chat = RecordingChat(responses=["Sie haben Anspruch auf 30 Urlaubstage pro Kalenderjahr [1]."])
    chat.seen.clear()
    engine = AnswerEngine(ws.retrieval, ws.embedder, ws.store, ws.settings, chat=chat)
    a = engine.answer(ws.answer_request(["mixed"], "Wie viele Urlaubstage habe ich pro Jahr?", caller=OP))
    user = chat.seen[-1][-1].content
    assert "Write the answer in German" in user
    assert not a.abstained and a.decided_by == "model" and a.citations[0].source == "richtlinie.md"
    assert a.answers_question is None and a.confidence == a.grounding_score  # not judged, and said so
    english = RecordingChat(responses=["Employees are entitled to 25 vacation days per calendar year [1]."])
    english.seen.clear()
    b = AnswerEngine(ws.retrieval, ws.embedder, ws.store, ws.settings, chat=english).answer(
        ws.answer_request(["english"], "How many vacation days do I get?", caller=OP))
    assert "Write the answer in" not in english.seen[-1][-1].content and b.answers_question is not None


def test_a_model_declining_in_german_is_an_abstention(ws, monkeypatch):
    monkeypatch.setattr(ws.settings, "llm_crag", False)
    chat = FakeListChatModel(responses=["Dazu habe ich keine Informationen in den Quellen."])
    a = AnswerEngine(ws.retrieval, ws.embedder, ws.store, ws.settings, chat=chat).answer(
        ws.answer_request(["mixed"], "Wie hoch ist das Gehalt?", caller=OP))
    assert a.abstained and a.decided_by == "model_declined" and a.text == messages.text("unconfirmed", "de") and a.closest
