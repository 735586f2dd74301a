"""A model's stream is stopped when it loops, echoes the prompt's markup, runs past the length
limit or the time limit (generation/stream_guard.py), unit by unit and through the chain.

Through the chain the model is scripted: the benchmark's oracle server on loopback (real HTTP
and SSE streaming through langchain-openai), a stand-in for a model that misbehaves, as the
developers' guide allows. Store, reader, verifier and policy are the real ones."""

from __future__ import annotations

import time

import pytest

from rag_core.generation.stream_guard import AnswerTimeLimit, StreamGuard
from tests.generation.test_answer_path import DESCALE, OP, Paced, Script, workspace

@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("guard_docs")
    (root / "kettle.md").write_text("# Kettle care\n\n## Cleaning\n\nDescale the kettle monthly with white vinegar. "
                                    "Rinse it twice afterwards.\n")
    (root / "office.md").write_text("# Office rules\n\nVisitors sign in at the front desk.\n")
    return root


LOOP = "Each of these commands will clear the output device before drawing. "


def feed_all(guard: StreamGuard, text: str, size: int = 5) -> str:
    shown = ""
    for i in range(0, len(text), size):
        shown += guard.feed(text[i:i + size])
        if guard.reason:
            break
    return shown


def test_a_repeated_sentence_is_cut_before_the_repeat():
    g = StreamGuard(max_chars=100_000, seconds=60)
    feed_all(g, "Descale it monthly [1]. " + LOOP * 3000)
    assert g.reason == "it began to repeat itself"
    assert g.text == ("Descale it monthly [1]. " + LOOP).strip()


def test_a_loop_without_full_stops_is_cut():
    g = StreamGuard(max_chars=100_000, seconds=60)
    feed_all(g, "The answer is " + "the device the device " * 500)
    assert g.reason == "it began to repeat itself" and len(g.text) < 80 and g.text.startswith("The answer is")


def test_the_prompts_markup_is_cut_where_it_starts():
    g = StreamGuard(max_chars=100_000, seconds=60)
    shown = feed_all(g, "Use help(solve) [1].\n</source>\n## Spiderplot\nmore")
    assert g.reason == "it began to repeat the prompt's markup"
    assert g.text == "Use help(solve) [1]." and "</source" not in shown


def test_the_length_limit_and_the_time_limit():
    g = StreamGuard(max_chars=200, seconds=60)
    feed_all(g, " ".join(f"Step {i} checks valve {i}." for i in range(100)))
    assert g.reason.startswith("it passed the length limit") and len(g.text) <= 200
    g = StreamGuard(max_chars=100_000, seconds=0.05)
    g.feed("Descale")
    time.sleep(0.08)
    with pytest.raises(AnswerTimeLimit):
        g.feed(" it monthly.")


def test_distinct_sentences_and_short_repeats_pass():
    g = StreamGuard(max_chars=100_000, seconds=60)
    text = "Run it [1]. Run it [1]. " + " ".join(f"Step {i} checks valve number {i} of the pump." for i in range(30))
    assert feed_all(g, text) == text and not g.reason


def test_a_looping_model_is_stopped_and_the_answer_says_so(tmp_path, server, docs):
    server.reader = Script({DESCALE: "Descale the kettle monthly with white vinegar [1]. " + LOOP * 3000})
    ws = workspace(tmp_path, docs, server.base_url)
    t = time.perf_counter()
    events = list(ws.answers.chain.stream(ws.answer_request(["k"], DESCALE, caller=OP)))
    took = time.perf_counter() - t
    a = events[-1].answer
    assert took < 30, took  # was: not back after 5 minutes
    assert a.text.count("clear the output device") <= 1 and "monthly" in a.text
    assert "repeat itself" in a.models["llm_cut"]
    assert any(e.kind == "notice" and "cut" in e.text for e in events)
    ws.close()


def test_markup_from_the_model_never_reaches_the_answer(tmp_path, server, docs):
    server.reader = Script({DESCALE: "Descale the kettle monthly with white vinegar [1].\n</source>\n"
                                     "<source id=\"2\">## Spiderplot\nIgnore this."})
    ws = workspace(tmp_path, docs, server.base_url)
    a = ws.ask(["k"], DESCALE, caller=OP)
    assert "source" not in a.text and "Spiderplot" not in a.text and "monthly" in a.text
    assert "markup" in a.models["llm_cut"]
    ws.close()


def test_past_the_time_limit_the_offline_answer_stands_in_and_says_why(tmp_path, server, docs):
    # its four pieces 0.4 s apart
    server.reader = Paced({DESCALE: "Descale the kettle monthly with white vinegar [1]. Rinse it afterwards [1]. "
                                    "Then boil fresh water once [1]. Then it is ready [1]."}, pace=0.4)
    ws = workspace(tmp_path, docs, server.base_url, llm_answer_seconds=0.5)
    events = list(ws.answers.chain.stream(ws.answer_request(["k"], DESCALE, caller=OP)))
    a = events[-1].answer
    assert "no complete answer within 0 s" in a.models["llm_error"]  # 0.5 s, as "%.0f" writes it
    assert a.mode == "extractive" and "boil" not in a.text
    assert any(e.kind == "restart" for e in events)  # what the model had written is taken back
    ws.close()


def test_the_page_is_told_what_happens_before_the_first_words(tmp_path, server, docs):
    """Before the model's first words the chain says what it reads and with which model; once
    this process has timed an answer, how long the first words usually take here."""
    server.reader = Script({DESCALE: "Descale the kettle monthly with white vinegar [1]."})
    ws = workspace(tmp_path, docs, server.base_url)
    first = list(ws.answers.chain.stream(ws.answer_request(["k"], DESCALE, caller=OP, no_cache=True)))
    assert first[0].kind == "status" and first[0].text.startswith("Reading ") and "scripted" in first[0].text
    assert "usually" not in first[0].text  # nothing measured yet: no made-up estimate
    again = list(ws.answers.chain.stream(ws.answer_request(["k"], DESCALE, caller=OP, no_cache=True)))
    assert again[0].kind == "status" and "first words usually after about 1 s on this machine" in again[0].text
    ws.close()


def test_a_stopped_loop_hangs_up_on_the_model(tmp_path, server, docs):
    """Cutting the stream must stop the model, not read it to its end: LangChain drains a closed
    stream for tracing, so the guard hangs up from inside the client (kit._Hangup). The server
    sees its later writes fail."""
    server.reader = Paced({DESCALE: "Descale the kettle monthly with white vinegar [1]. " + LOOP * 400}, pace=1.0)
    server.dropped = 0
    ws = workspace(tmp_path, docs, server.base_url)
    try:
        a = ws.ask(["k"], DESCALE, caller=OP)
        assert "repeat itself" in a.models["llm_cut"] and "monthly" in a.text
        deadline = time.time() + 10
        while server.dropped == 0 and time.time() < deadline:
            time.sleep(0.2)
        assert server.dropped == 1
    finally:
        ws.close()


def test_a_cancelled_answer_ends_and_hangs_up_on_the_model(tmp_path, server, docs):
    """The chat page's Stop sets AnswerRequest.cancel: the chain ends at the model's next piece
    with AnswerCancelled (no fallback answers in its place) and the model's stream is closed."""
    import dataclasses
    import threading

    from rag_core.generation.kit import AnswerCancelled

    server.reader = Paced({DESCALE: "Descale the kettle monthly with white vinegar, then rinse it twice and "
                                    "boil fresh water once before use [1]."}, pace=1.0)
    server.dropped = 0
    ws = workspace(tmp_path, docs, server.base_url)
    try:
        req = dataclasses.replace(ws.answer_request(["k"], DESCALE, caller=OP), cancel=threading.Event())
        seen = []
        with pytest.raises(AnswerCancelled):
            for ev in ws.answers.chain.stream(req):
                seen.append(ev.kind)
                if ev.kind == "token":
                    req.cancel.set()
        assert "answer" not in seen and seen.count("token") == 1
        deadline = time.time() + 10
        while server.dropped == 0 and time.time() < deadline:
            time.sleep(0.2)
        assert server.dropped == 1
    finally:
        ws.close()
