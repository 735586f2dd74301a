"""Page logic through Streamlit's AppTest (the real scripts, headless, no browser)."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rag_core.config import get_settings
from rag_core.workspace import Workspace
from rag_core.access import Caller

REPO = Path(__file__).resolve().parents[1]


def TODAY() -> str:
    """The upload day: the date of a document whose file states none (UTC, as stored)."""
    import time

    from rag_core.models import upload_day

    return upload_day(time.time())


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("RAG_DATA_DIR", str(d))
    monkeypatch.chdir(REPO)
    st.cache_resource.clear()  # each test gets its own workspace
    yield d
    st.cache_resource.clear()


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=120)


def seed(data_dir: Path, tmp: Path) -> Workspace:
    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Geo", caller=Caller.operator())
    f = tmp / "volcanoes.md"
    f.write_text("# Volcanoes\n\nIceland has about 130 volcanoes. Lava flows are watched by tourists.\n")
    ws.ingest("Geo", [f], caller=Caller.operator())
    return ws


def test_empty_app_guides_a_new_user(data_dir):
    at = app().run()
    assert not at.exception
    assert any("Upload" in i.value for i in at.info)


def test_create_kb_on_settings_page(data_dir):
    at = app().run()
    at.switch_page("pages/knowledge_bases.py").run()
    at.text_input[0].set_value("Handbook")
    at.text_input[1].set_value("HR rules")
    at.button[0].click().run()
    assert not at.exception
    ws = Workspace(get_settings(data_dir))
    assert ws.get_kb("Handbook", caller=Caller.operator()).description == "HR rules"
    # bad name: a message, not a traceback
    at.switch_page("pages/knowledge_bases.py").run()
    at.text_input[0].set_value("bad/name")
    at.button[0].click().run()
    assert not at.exception and any("name" in e.value for e in at.error)


def test_ask_question_shows_cited_answer_and_logs_it(data_dir, tmp_path, monkeypatch):
    from tests.helpers import CHAIN_STEPS, traced_steps

    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("RAG_TRACE", f"jsonl:{trace}")  # the page must run the one answer chain
    ws = seed(data_dir, tmp_path)
    at = app().run()
    assert "Geo" in at.caption[0].value  # the only KB is selected by default
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    assert not at.exception
    texts = " ".join(m.value for m in at.markdown)
    assert "130 volcanoes" in texts
    # each citation is a button naming its file and page (a click opens the page viewer)
    assert [b.label for b in at.button if "volcanoes\\.md" in b.label] == [f"[¹] volcanoes\\.md · p. 1 · {TODAY()}"]  # file names are escaped; the document's date
    assert any("Supported 100%" in c.value and "Answers the question" in c.value for c in at.caption)
    df = ws.feedback.frame()
    assert list(df["question"]) == ["How many volcanoes does Iceland have?"]
    steps = traced_steps(trace)
    assert steps[0] == "groundwork_answer" and set(steps) >= CHAIN_STEPS
    # an unanswerable question is shown as such, with suggestions
    at.chat_input[0].set_value("Who painted the Mona Lisa?").run()
    assert any("could not confirm an answer" in i.value for i in at.info)
    assert len(ws.feedback.frame()) == 2


def test_document_html_is_escaped(data_dir, tmp_path):
    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Web", caller=Caller.operator())
    f = tmp_path / "evil.txt"
    f.write_text("The launch code is <script>alert(1)</script> ![x](http://tracker.invalid/p.png) banana42.")
    ws.ingest("Web", [f], caller=Caller.operator())
    at = app().run()
    at.chat_input[0].set_value("What is the launch code banana42?").run()
    md = " ".join(m.value for m in at.markdown)
    assert "<script>" not in md and "\\<script\\>" in md
    assert "![x](" not in md


def test_analytics_page_counts_feedback(data_dir, tmp_path):
    ws = seed(data_dir, tmp_path)
    a = ws.ask(["Geo"], "How many volcanoes does Iceland have?", caller=Caller.operator())
    qid = ws.feedback.log_answer(a, [ws.get_kb("Geo", caller=Caller.operator()).kb_id])
    ws.feedback.rate(qid, 1, "spot on")
    b = ws.ask(["Geo"], "Who painted the Mona Lisa?", caller=Caller.operator())
    ws.feedback.log_answer(b, [ws.get_kb("Geo", caller=Caller.operator()).kb_id])
    at = app().run()
    at.switch_page("pages/analytics.py").run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Answers"] == "2" and metrics["Rated"] == "1" and metrics["Helpful"] == "100%"
    assert metrics["Abstained"] == "50%"


def test_feedback_log_and_frames(data_dir, tmp_path):
    ws = seed(data_dir, tmp_path)
    a = ws.ask(["Geo"], "How many volcanoes does Iceland have?", caller=Caller.operator())
    qid = ws.feedback.log_answer(a, [ws.get_kb("Geo", caller=Caller.operator()).kb_id], user="ann")
    ws.feedback.rate(qid, -1)
    ws.feedback.rate(qid, 1, "changed my mind")  # re-rating replaces
    assert ws.feedback.rating_of(qid) == (1, "changed my mind", None)
    df = ws.feedback.frame({ws.get_kb("Geo", caller=Caller.operator()).kb_id: "Geo"})
    assert df.loc[0, "kb"] == "Geo" and df.loc[0, "rating"] == 1 and df.loc[0, "sources"] == "volcanoes.md"
    lat = ws.feedback.latency(df)
    assert "total" in set(lat["stage"]) and (lat["p95_ms"] >= lat["p50_ms"]).all()
    assert ws.feedback.per_kb(df).loc[0, "answers"] == 1
    with pytest.raises(Exception):
        ws.feedback.rate("nope", 1)


def two_docs(data_dir: Path, tmp: Path) -> Workspace:
    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Geo", caller=Caller.operator())
    (tmp / "volcanoes.md").write_text("# Volcanoes\n\nIceland has about 130 volcanoes.\n")
    (tmp / "rivers.md").write_text("# Rivers\n\nThe Thames is 346 kilometres long.\n")
    ws.ingest("Geo", [tmp / "volcanoes.md", tmp / "rivers.md"], caller=Caller.operator())
    return ws


def test_scoping_a_question_to_chosen_documents(data_dir, tmp_path):
    ws = two_docs(data_dir, tmp_path)
    at = app().run()
    scope = at.multiselect(key="scope_docs")
    assert sorted(scope.options) == ["rivers.md", "volcanoes.md"]  # shown by file name
    rivers = next(d.doc_id for d in ws.appdb.list_documents(ws.get_kb("Geo", caller=Caller.operator()).kb_id) if d.source == "rivers.md")
    scope.set_value([rivers]).run()
    assert any("only 1 chosen document" in c.value for c in at.caption)
    # the answer is in volcanoes.md, which is out of scope: abstain, never cite it
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    assert not at.exception
    assert any("could not confirm an answer" in i.value for i in at.info)
    assert not [b for b in at.button if "volcanoes.md" in b.label]
    # back to all documents: answered from volcanoes.md
    at.multiselect(key="scope_docs").set_value([]).run()
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    assert [b.label for b in at.button if "volcanoes\\.md" in b.label] == [f"[¹] volcanoes\\.md · p. 1 · {TODAY()}"]  # file names are escaped; the document's date


def test_regenerate_replaces_the_last_answer_and_new_chat_clears(data_dir, tmp_path):
    ws = two_docs(data_dir, tmp_path)
    at = app().run()
    at.chat_input[0].set_value("How long is the Thames?").run()
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    assert len(at.chat_message) == 4
    regen = [b for b in at.button if b.label == "Regenerate"]
    assert len(regen) == 1  # only the last answer can be regenerated
    regen[0].click().run()
    assert not at.exception
    msgs = at.session_state["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert msgs[2]["content"] == "How many volcanoes does Iceland have?" and "130" in msgs[3]["answer"].text
    log = ws.feedback.frame()
    assert list(log["question"]).count("How many volcanoes does Iceland have?") == 2  # both answers logged
    assert msgs[3]["query_id"] == log.iloc[-1]["query_id"]  # the new one is on screen
    next(b for b in at.button if b.label == "New chat").click().run()
    assert at.session_state["messages"] == [] and len(at.chat_message) == 0


def test_thumbs_down_reasons_are_validated_and_counted(data_dir, tmp_path):
    ws = seed(data_dir, tmp_path)
    kb = [ws.get_kb("Geo", caller=Caller.operator()).kb_id]
    q1 = ws.feedback.log_answer(ws.ask(["Geo"], "How many volcanoes does Iceland have?", caller=Caller.operator()), kb)
    q2 = ws.feedback.log_answer(ws.ask(["Geo"], "Do tourists watch lava flows?", caller=Caller.operator()), kb)
    ws.feedback.rate(q1, -1, "it missed the number", reason="incomplete")
    ws.feedback.rate(q2, -1)
    assert ws.feedback.rating_of(q1) == (-1, "it missed the number", "incomplete")
    with pytest.raises(Exception, match="reason"):
        ws.feedback.rate(q1, -1, reason="because")
    with pytest.raises(Exception, match="reason"):
        ws.feedback.rate(q1, 1, reason="wrong")  # a reason belongs to a thumbs down
    df = ws.feedback.frame({kb[0]: "Geo"})
    r = ws.feedback.reasons(df)
    assert dict(zip(r["reason"], r["count"])) == {"incomplete": 1, "no reason given": 1}
    s = ws.feedback.summary(df)
    assert s["citation_coverage"] == 1.0 and s["unsupported_rate"] == 0.0 and s["confidence_mean"] > 0
    # the date filter and the knowledge-base filter
    today = df["time"].max().date()
    assert len(ws.feedback.select(df, today, today, ["Geo"])) == 2
    assert ws.feedback.select(df, kbs=["Other"]).empty
    import datetime as dt
    assert ws.feedback.select(df, today + dt.timedelta(days=1), None).empty


def test_feedback_log_from_before_reasons_is_migrated(data_dir):
    import sqlite3

    data_dir.mkdir(parents=True)
    con = sqlite3.connect(data_dir / "groundwork.db")
    con.executescript("""
        CREATE TABLE queries (query_id TEXT PRIMARY KEY, ts REAL NOT NULL, user TEXT, kb_ids TEXT NOT NULL,
            question TEXT NOT NULL, answer TEXT NOT NULL, citations TEXT NOT NULL, claims TEXT NOT NULL,
            grounding REAL NOT NULL, confidence REAL NOT NULL, abstained INTEGER NOT NULL, mode TEXT NOT NULL,
            timings TEXT NOT NULL);
        CREATE TABLE feedback (query_id TEXT PRIMARY KEY, rating INTEGER NOT NULL, comment TEXT NOT NULL DEFAULT '',
            ts REAL NOT NULL);
        INSERT INTO queries VALUES ('q1', 1700000000, NULL, '[]', 'old?', 'old.', '[]', '[]', 1, 1, 0, 'extractive', '{}');
        INSERT INTO feedback VALUES ('q1', -1, 'meh', 1700000001);
    """)
    con.commit()
    con.close()
    ws = Workspace(get_settings(data_dir))
    assert ws.feedback.rating_of("q1") == (-1, "meh", None)
    df = ws.feedback.frame()
    assert df.loc[0, "question"] == "old?" and pd_isna(df.loc[0, "answers_question"])
    assert list(ws.feedback.reasons(df)["reason"]) == ["no reason given"]
    ws.close()


def pd_isna(v) -> bool:
    import pandas as pd

    return bool(pd.isna(v))


def test_conversations_are_saved_and_resumed_in_a_new_session(data_dir, tmp_path):
    seed(data_dir, tmp_path)
    at = app().run()
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    assert not at.exception
    # a new browser session (a reload) reopens the last conversation, with its answer
    at2 = app().run()
    msgs = at2.session_state["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant"] and "130" in msgs[1]["answer"].text
    assert any("130 volcanoes" in m.value for m in at2.markdown)
    # listed by its topic, with when and how long
    saved = [b for b in at2.sidebar.button if b.label.startswith("Volcanoes Iceland · ")]
    assert len(saved) == 1 and saved[0].label.endswith(" · 1 question")
    # "New chat" starts an empty one; the saved one opens again from the list
    next(b for b in at2.button if b.label == "New chat").click().run()
    assert at2.session_state["messages"] == []
    next(b for b in at2.sidebar.button if b.label.startswith("Volcanoes Iceland · ")).click().run()
    assert [m["role"] for m in at2.session_state["messages"]] == ["user", "assistant"]
    # a follow-up goes into the same thread
    at2.chat_input[0].set_value("Do tourists watch the lava?").run()
    ws = Workspace(get_settings(data_dir))
    [t] = ws.threads.list(None)
    assert len(ws.threads.messages(t.thread_id, None)) == 4 and t.messages == 4
    ws.close()
    at3 = app().run()
    assert next(b for b in at3.sidebar.button if b.label.startswith("Volcanoes Iceland")).label.endswith("2 questions")


def test_only_owners_and_admins_change_a_knowledge_base(data_dir, monkeypatch):
    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Open", caller=Caller.operator())  # everyone sees it
    ws.create_kb("Anns", acl_users=["ann"], caller=Caller(user="ann"))  # she created it: she owns it
    ws.create_kb("Hidden", acl_users=["zed"], caller=Caller.operator())
    ws.close()
    monkeypatch.setenv("RAG_USER", "ann")  # an identity: the policy applies to her
    at = app().run()
    at.switch_page("pages/knowledge_bases.py").run()
    assert not at.exception
    assert sorted(at.selectbox(key="settings_kb").options) == ["Anns", "Open"]  # not "Hidden"
    at.selectbox(key="settings_kb").set_value("Open").run()
    assert next(b for b in at.button if b.label == "Save").disabled  # "Open" is not hers to change
    at.selectbox(key="settings_kb").set_value("Anns").run()
    assert not next(b for b in at.button if b.label == "Save").disabled


def test_an_llm_that_does_not_answer_falls_back_visibly(data_dir, tmp_path, monkeypatch):
    """The sidebar names the model; when its endpoint is down the answer is composed offline
    and the page says so (a real connection refused, no fake)."""
    from rag_core.generation.local_server import free_port

    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    monkeypatch.setenv("RAG_LLM_MODEL", "my-model")
    monkeypatch.setenv("RAG_LLM_RETRIES", "0")
    seed(data_dir, tmp_path)
    at = app().run()
    assert any("LLM · my\\-model" in c.value for c in at.sidebar.caption)  # Markdown-escaped: names are input
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    assert not at.exception
    assert any("did not answer" in w.value and "composed offline" in w.value for w in at.warning)
    assert "130 volcanoes" in " ".join(m.value for m in at.markdown)


EVIL = "![x](http://evil.example/x.png)"


def test_document_markdown_in_a_citation_label_and_tooltip_is_escaped(data_dir, tmp_path):
    """A file name and a passage are document text: in the citation button's label and in its
    tooltip (both render Markdown) `![x](…)` must not load an image nor `**bold**` format."""
    from rag_core.render import escape_md

    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Web", caller=Caller.operator())
    f = tmp_path / "**bold** ![x](x.png).txt"  # a file name cannot hold the "/" of a full URL
    f.write_text(f"The launch code banana42 is printed **bold** on the door beside {EVIL} in red.")
    ws.ingest("Web", [f], caller=Caller.operator())
    ws.close()
    at = app().run()
    at.chat_input[0].set_value("What is the launch code banana42?").run()
    assert not at.exception
    [cite] = [b for b in at.button if (b.key or "").startswith("src_")]
    assert escape_md(f.name) in cite.label
    assert "![" not in cite.label and "**bold**" not in cite.label
    tip = cite.proto.help
    assert "banana42" in tip and escape_md(EVIL) in tip
    assert "![" not in tip and "**bold**" not in tip


def test_analytics_expander_labels_escape_the_question(data_dir, tmp_path):
    ws = seed(data_dir, tmp_path)
    question = f"How many volcanoes **bold** {EVIL} does Iceland have?"
    a = ws.ask(["Geo"], question, caller=Caller.operator())
    qid = ws.feedback.log_answer(a, [ws.get_kb("Geo", caller=Caller.operator()).kb_id])
    ws.feedback.rate(qid, -1, "meh")  # listed under "Lowest rated"
    ws.close()
    at = app().run()
    at.switch_page("pages/analytics.py").run()
    assert not at.exception
    labels = [e.label for e in at.expander if "volcanoes" in e.label]
    assert labels
    for label in labels:
        assert "![" not in label and "**bold**" not in label
        assert escape_md_of(question[:100]) in label


def escape_md_of(text: str) -> str:
    from rag_core.render import escape_md

    return escape_md(text)


def test_rag_reranker_none_shows_the_rerank_switch_unavailable(data_dir, monkeypatch):
    monkeypatch.setenv("RAG_RERANKER", "none")
    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Geo", caller=Caller.operator())
    ws.close()
    at = app().run()
    at.switch_page("pages/knowledge_bases.py").run()
    assert not at.exception
    [switch] = [t for t in at.toggle if t.label.startswith("Rerank candidates")]
    assert switch.disabled and "unavailable" in switch.label
    assert any("RAG_RERANKER=none" in c.value for c in at.caption)


def test_an_answer_emptied_by_the_minimum_relevance_says_how_many_it_dropped(data_dir, tmp_path):
    from rag_core.models import RetrievalSettings

    ws = seed(data_dir, tmp_path)
    ws.update_kb("Geo", caller=Caller.operator(), retrieval=RetrievalSettings(score_threshold=1.0))  # nothing passes
    ws.close()
    at = app().run()
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    assert not at.exception
    assert any("don't have information" in i.value for i in at.info)
    assert any("Minimum relevance" in c.value and "dropped 1 passage(s)" in c.value for c in at.caption)


def test_an_abstention_shows_the_closest_passages_under_a_heading_that_says_so(data_dir, tmp_path):
    seed(data_dir, tmp_path)
    at = app().run()
    at.chat_input[0].set_value("How many tourists visited Iceland's volcanoes in 2019?").run()
    assert not at.exception
    assert any("could not confirm an answer" in i.value for i in at.info)
    from rag_core.render import CLOSEST_HEADING

    # the heading says no answer could be confirmed, never that the passages hold none
    box = [e for e in at.expander if e.label == CLOSEST_HEADING]
    assert "could be confirmed" in CLOSEST_HEADING and "do not answer" not in CLOSEST_HEADING
    assert box, "no closest-passages section"
    assert [b.label for b in at.button if b.label.startswith("volcanoes")] == [f"volcanoes\\.md · p. 1 · {TODAY()}"]
    assert not any("Supported" in c.value for c in at.caption)  # not scored like an answer


def test_admin_creates_shows_once_and_revokes_an_api_key(data_dir):
    from rag_core.api_keys import ApiKeys

    at = app().run()
    at.switch_page("pages/knowledge_bases.py").run()  # the local operator is an admin
    by_label = lambda widgets, label: next(w for w in widgets if w.label == label)  # noqa: E731
    by_label(at.text_input, "User").set_value("slackbot")
    by_label(at.text_input, "Label").set_value("Slack bot")
    by_label(at.selectbox, "Scope").set_value("read")
    by_label(at.button, "Create key").click().run()
    assert not at.exception
    shown = [c.value for c in at.code if c.value.startswith("gwk_")]
    assert len(shown) == 1
    ws = Workspace(get_settings(data_dir))
    try:
        key = ApiKeys(ws.db).authenticate(shown[0])
        assert key is not None and key.user == "slackbot" and key.scope == "read" and key.label == "Slack bot"
        at.run()  # shown once: gone on the next run
        assert not [c for c in at.code if c.value.startswith("gwk_")]
        by_label(at.button, "Revoke").click().run()
        assert not at.exception
        assert ApiKeys(ws.db).authenticate(shown[0]) is None
    finally:
        ws.close()


def test_api_keys_section_is_for_admins_only(data_dir, monkeypatch):
    monkeypatch.setenv("RAG_USER", "bob")
    at = app().run()
    at.switch_page("pages/knowledge_bases.py").run()
    assert not at.exception
    assert not [b for b in at.button if b.label == "Create key"]


def test_renaming_a_knowledge_base_keeps_it_selected(data_dir):
    ws = Workspace(get_settings(data_dir))
    for name in ("Alpha", "Beta", "Gamma"):
        ws.create_kb(name, caller=Caller.operator())
    ws.close()
    at = app().run()
    at.switch_page("pages/knowledge_bases.py").run()
    picker = next(s for s in at.selectbox if s.label == "Knowledge base")
    picker.set_value("Gamma").run()
    name = next(t for t in at.text_input if t.label == "Name" and t.value == "Gamma")
    name.set_value("Gamma renamed")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception
    assert next(s for s in at.selectbox if s.label == "Knowledge base").value == "Gamma renamed"
    assert any(t.label == "Name" and t.value == "Gamma renamed" for t in at.text_input)


def test_weakest_answers_lists_only_weak_ones(data_dir, tmp_path):
    from rag_core.models import Answer

    ws = seed(data_dir, tmp_path)
    kb_id = ws.get_kb("Geo", caller=Caller.operator()).kb_id
    a = ws.ask(["Geo"], "How many volcanoes does Iceland have?", caller=Caller.operator())
    assert a.grounding_score == 1.0 and a.confidence >= 0.5
    ws.feedback.log_answer(a, [kb_id])
    at = app().run()
    at.switch_page("pages/analytics.py").run()
    assert any("Every answer in this range is fully supported" in c.value for c in at.caption)
    weak = Answer(question="How hot is the lava?", text="Lava is hot [1].", grounding_score=0.5, answers_question=0.4,
                  confidence=0.2)
    ws.feedback.log_answer(weak, [kb_id])
    at.run()
    labels = [e.label for e in at.expander]
    assert any("How hot is the lava" in x for x in labels)
    assert not any("How many volcanoes" in x for x in labels)
    ws.close()


def test_upload_page_shows_and_edits_a_documents_date_and_chat_filters_by_it(data_dir, tmp_path):
    import datetime

    ws = seed(data_dir, tmp_path)
    doc = ws.list_documents("Geo", caller=Caller.operator())[0]
    at = app().run()
    at.switch_page("pages/upload.py").run()
    assert not at.exception
    picker = next(d for d in at.date_input if d.key == f"date_{doc.doc_id}")
    assert picker.value == datetime.date.fromisoformat(doc.date) and "upload day" in picker.label
    picker.set_value(datetime.date(2019, 3, 4)).run()
    assert not at.exception
    saved = ws.list_documents("Geo", caller=Caller.operator())[0]
    assert (saved.date, saved.date_source) == ("2019-03-04", "set")
    at.switch_page("pages/chat.py").run()
    next(d for d in at.date_input if d.key == "scope_after").set_value(datetime.date(2020, 1, 1)).run()
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    assert not at.exception
    assert any("dated 2020-01-01" in c.value for c in at.caption)
    assert not any("130" in m.value for m in at.markdown if "Iceland" in m.value)  # the only document is older


def test_knowledge_base_page_saves_retention_and_recency(data_dir, tmp_path):
    seed(data_dir, tmp_path)
    at = app().run()
    at.switch_page("pages/knowledge_bases.py").run()
    assert not at.exception
    next(n for n in at.number_input if n.label.startswith("Keep questions")).set_value(30)
    next(n for n in at.number_input if n.label.startswith("Prefer newer")).set_value(365)
    next(n for n in at.number_input if n.label.startswith("Flag sources older")).set_value(90)
    next(s for s in at.selectbox if s.label.startswith("Query log")).set_value("anonymous")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception
    kb = Workspace(get_settings(data_dir)).get_kb("Geo", caller=Caller.operator())
    assert kb.retention_days == 30 and kb.retrieval.recency_half_life_days == 365.0
    assert kb.retrieval.stale_after_days == 90 and kb.query_log == "anonymous"


def test_upload_page_messages_escape_file_names(data_dir, tmp_path):
    """A file named like a Markdown link or image stays text in the toasts that name it."""
    import datetime

    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Geo", caller=Caller.operator())
    f = tmp_path / "![x](http:evil.example) notes.md"
    f.write_text("# Notes\n\nThe bridge opens at nine.\n")
    ws.ingest("Geo", [f], caller=Caller.operator())
    doc = ws.list_documents("Geo", caller=Caller.operator())[0]
    at = app().run()
    at.switch_page("pages/upload.py").run()
    next(d for d in at.date_input if d.key == f"date_{doc.doc_id}").set_value(datetime.date(2019, 3, 4)).run()
    assert not at.exception
    toast = [t.value for t in at.toast]
    assert toast and all("](" not in t and "\\!\\[x\\]" in t for t in toast), toast


def test_the_pages_folder_holds_only_pages():
    """Before st.navigation runs, Streamlit's legacy multipage mode lists every `pages/*.py`
    in the sidebar (streamlit/runtime/scriptrunner/script_runner.py, `_mpa_v1`: the folder's
    *.py files except dotfiles and __init__.py): a helper module there flashed in as a
    "common" page on first load. Helpers live in a package below it (pages/common/)."""
    root = Path(__file__).resolve().parents[1]
    listed = sorted(p.stem for p in (root / "pages").glob("*.py") if not p.name.startswith(".") and p.name != "__init__.py")
    assert listed == ["analytics", "chat", "knowledge_bases", "upload"]


def test_a_document_searchable_before_its_vectors_is_listed_with_the_indexing_share(data_dir, tmp_path):
    """During an upload the list shows documents as soon as their words are searchable (the
    list is a fragment that reruns while a job runs), with the share of vectors computed."""
    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Geo", caller=Caller.operator())
    a, b = tmp_path / "lava.md", tmp_path / "ash.md"
    a.write_text("# Lava\n\nLava flows are watched by tourists.\n")
    b.write_text("# Ash\n\nAsh clouds close airports.\n")
    ws.ingest("Geo", [a], caller=Caller.operator())
    ws.ingest("Geo", [b], caller=Caller.operator(), embed=False)  # words indexed, vectors to come
    at = app().run()
    at.switch_page("pages/upload.py").run()
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Indexing 50%") for c in captions), captions
    assert any("searchable, vectors being computed" in c for c in captions)
    # while an upload runs, its bar is the one progress figure: no second percentage below it
    kb_id = ws.get_kb("Geo", caller=Caller.operator()).kb_id
    ws.jobs.submit(kb_id, [("more.md", b"# More\n\nMore text.\n")], None)
    job = ws.jobs.claim_next()  # held by this process's live lease: the app's worker leaves it
    ws.jobs.set_progress(job.job_id, phase="embedding", chunks_done=9, chunks_total=10)
    at.run()
    captions = [c.value for c in at.caption]
    assert not any(c.startswith("Indexing") for c in captions), captions
    assert any(c.startswith("Vectors are being computed (progress above)") for c in captions), captions
    ws.jobs.finish(job.job_id, "cancelled")
    ws.fill_vectors("Geo", caller=Caller.operator())
    at.run()
    assert not any(c.value.startswith("Indexing") for c in at.caption)


def test_a_large_knowledge_base_lists_a_page_of_documents_and_finds_the_rest(data_dir, tmp_path):
    import json

    ws = Workspace(get_settings(data_dir))
    ws.create_kb("Bulk", caller=Caller.operator())
    f = tmp_path / "bulk.jsonl"
    f.write_text("\n".join(json.dumps({"_id": f"b{i}", "title": f"Bulletin {i}", "text": f"Bulletin {i} on roads."})
                           for i in range(120)))
    ws.ingest("Bulk", [f], caller=Caller.operator())
    assert len(ws.list_documents("Bulk", caller=Caller.operator())) == 120
    at = app().run()
    at.switch_page("pages/upload.py").run()
    assert not at.exception
    assert len(at.date_input) == 50
    assert any("Showing 50 of 120 documents" in c.value for c in at.caption)
    next(t for t in at.text_input if t.label == "Find a document").set_value("Bulletin 117").run()
    assert len(at.date_input) == 1


def test_the_knowledge_bases_page_shows_the_answer_policy_and_lets_an_admin_calibrate(data_dir, tmp_path):
    seed(data_dir, tmp_path)
    at = app().run()
    at.switch_page("pages/knowledge_bases.py").run()  # the local operator is an admin
    assert not at.exception
    assert any(e.label == "Answer policy in force: conservative" for e in at.expander)
    assert any("the reader decides" in m.value for m in at.markdown)
    assert [b for b in at.button if b.label == "Calibrate for this model"]
    policy = next(s for s in at.selectbox if s.label == "Answer policy")
    assert policy.value == "" and "Model: the language model's own verdict decides" in policy.options
    policy.set_value("model")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception
    ws = Workspace(get_settings(data_dir))
    try:
        kb = ws.list_kbs(caller=Caller.operator())[0]
        assert kb.retrieval.answer_policy == "model"
    finally:
        ws.close()


def test_a_summary_says_it_read_the_document_and_search_instead_asks_again_as_a_search(data_dir, tmp_path):
    ws = seed(data_dir, tmp_path)
    at = app().run()
    at.chat_input[0].set_value("Summarize volcanoes.md").run()
    assert not at.exception
    a = at.session_state["messages"][-1]["answer"]
    assert a.route == "document" and a.decided_by == "document"
    assert any("Read as a whole" in c.value and "volcanoes\\.md" in c.value for c in at.caption)
    assert any("not judged (a whole-document answer)" in c.value for c in at.caption)
    next(b for b in at.button if b.label == "Search instead").click().run()
    assert not at.exception
    msgs = at.session_state["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert msgs[-1]["answer"].route == "search" and msgs[-1]["answer"].plan["by"] == "user"
    assert not [b for b in at.button if b.label == "Search instead"]
    assert list(ws.feedback.frame()["route"]) == ["document", "search"]


def test_a_repeated_question_shows_it_is_cached_and_regenerate_computes_it_again(data_dir, tmp_path):
    seed(data_dir, tmp_path)
    at = app().run()
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    at.chat_input[0].set_value("How many volcanoes does Iceland have?").run()
    msgs = at.session_state["messages"]
    assert not msgs[1]["answer"].cached and msgs[3]["answer"].cached
    assert any("Cached answer, first computed" in c.value for c in at.caption)
    next(b for b in at.button if b.label == "Regenerate").click().run()
    assert not at.session_state["messages"][-1]["answer"].cached
