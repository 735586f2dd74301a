"""Saved conversations: per user, resumable with their answers, renamed, exported, deleted,
and never readable by another user."""

from __future__ import annotations

import pytest

from rag_core.config import get_settings
from rag_core.errors import NotFound
from rag_core.workspace import Workspace
from rag_core.access import Caller


@pytest.fixture
def ws(tmp_path):
    w = Workspace(get_settings(tmp_path / "data"))
    w.create_kb("Geo", caller=Caller.operator())
    f = tmp_path / "volcanoes.md"
    f.write_text("# Volcanoes\n\nIceland has about 130 volcanoes.\n")
    w.ingest("Geo", [f], caller=Caller.operator())
    yield w
    w.close()


def test_a_thread_round_trips_with_its_answers(ws):
    tid = ws.threads.create("ann@example.com")
    q = "How many volcanoes does Iceland have?"
    ws.threads.add(tid, "ann@example.com", "user", q)
    a = ws.ask(["Geo"], q, caller=Caller.operator())
    qid = ws.feedback.log_answer(a, [ws.get_kb("Geo", caller=Caller.operator()).kb_id], "ann@example.com", thread_id=tid)
    ws.threads.add(tid, "ann@example.com", "assistant", a.text, a, qid)
    [t] = ws.threads.list("ann@example.com")
    assert t.title == "Volcanoes Iceland"  # named by its first question's topic words
    assert t.messages == 2
    msgs = ws.threads.messages(tid, "ann@example.com")
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    back = msgs[1]["answer"]
    assert back.text == a.text and back.citations[0].source == "volcanoes.md" and back.grounding_score == a.grounding_score
    assert msgs[1]["query_id"] == qid
    assert ws.feedback.frame().loc[0, "thread_id"] == tid  # the query log records the thread
    md = ws.threads.markdown(tid, "ann@example.com")
    assert md.startswith("# Volcanoes Iceland") and "**You:** " + q in md and "[1] volcanoes.md, page 1" in md

    ws.threads.rename(tid, "ann@example.com", "Iceland")
    assert ws.threads.list("ann@example.com")[0].title == "Iceland"
    ws.threads.drop_last(tid, "ann@example.com", 1)
    assert [m["role"] for m in ws.threads.messages(tid, "ann@example.com")] == ["user"]


def test_threads_are_their_owners_only(ws):
    tid = ws.threads.create("ann@example.com")
    ws.threads.add(tid, "ann@example.com", "user", "secret plans")
    assert ws.threads.list("bob@example.com") == []
    for call in (lambda: ws.threads.messages(tid, "bob@example.com"),
                 lambda: ws.threads.markdown(tid, "bob@example.com"),
                 lambda: ws.threads.rename(tid, "bob@example.com", "mine now"),
                 lambda: ws.threads.add(tid, "bob@example.com", "user", "hi"),
                 lambda: ws.threads.delete(tid, "bob@example.com")):
        with pytest.raises(NotFound):
            call()
    ws.threads.delete(tid, "ann@example.com")
    assert ws.threads.list("ann@example.com") == []
    with pytest.raises(NotFound):
        ws.threads.messages(tid, "ann@example.com")


def test_titles_are_the_questions_topic_words():
    from rag_core.threads import title_for

    assert title_for("How do I quit R?") == "Quit R"
    assert title_for("What is the capital of France?") == "Capital France"
    assert title_for("Why?") == "Why?"  # no topic words: the question itself
    assert len(title_for("word " * 100)) <= 80


def test_a_conversation_remembers_the_knowledge_bases_it_asked(tmp_path):
    """Opening a conversation selects its knowledge bases again (issue 50: the sidebar kept the
    previous ones); another user's conversation tells nothing."""
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(tmp_path / "data"))
    ann = Caller(user="ann")
    for name, text in (("Geo", "Iceland has about 130 volcanoes."), ("Food", "Sourdough rises for twelve hours.")):
        ws.create_kb(name, caller=ann)
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\n{text}\n")
        ws.ingest(name, [tmp_path / f"{name}.md"], caller=ann)
    convs, log = ws.conversations(caller=ann), ws.feedback_for(caller=ann)
    tid = convs.create()
    for kb, q in (("Geo", "How many volcanoes does Iceland have?"), ("Food", "How long does sourdough rise?")):
        a = ws.ask([kb], q, caller=ann)
        convs.add(tid, "user", q)
        convs.add(tid, "assistant", a.text, a, log.log_answer(a, [ws.get_kb(kb, caller=ann).kb_id], thread_id=tid))
    assert ws.thread_kbs(tid, caller=ann) == ["Food"]  # its last question's
    import pytest

    from rag_core.errors import NotFound

    with pytest.raises(NotFound):  # not bob's conversation: it reads like a missing one
        ws.thread_kbs(tid, caller=Caller(user="bob"))
    ws.close()
