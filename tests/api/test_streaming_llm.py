"""Streaming with a language model, on a real uvicorn server (in a thread of this process so the
model can be a test double): tokens reach the client while the model is still writing, before
the verified answer; a client that disconnects mid-stream stops the work.

The chat model is LangChain's fake chat model (GenericFakeChatModel), slowed down per token: a
paid LLM API cannot run here. Everything else — server, chain, retrieval, verification — is real."""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time

import httpx
import pytest
import uvicorn
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag_core.api.app import create_app
from rag_core.api_keys import ApiKeys
from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.generation.local_server import free_port
from rag_core.workspace import Workspace
from tests.api.conftest import build_data

# distinct sentences: one sentence said twenty times is a loop, which the stream guard stops
ANSWER = "The office opens at 8 o'clock on weekdays [1]. " + "".join(
    f"It says so in section {i} of the handbook [1]. " for i in range(20))


class SlowFakeChat(GenericFakeChatModel):
    """Streams its answer word by word, `delay` seconds apart, and counts what it produced."""

    delay: float = 0.03
    produced: list = []

    def _stream(self, *args, **kwargs):
        for chunk in super()._stream(*args, **kwargs):
            time.sleep(self.delay)
            self.produced.append(time.perf_counter())
            yield chunk


@contextlib.contextmanager
def serving(tmp_path_factory, name: str, chat, **settings):
    """(base URL, a read key for alice, the workspace) of an in-process API server whose answer
    model is `chat` (a LangChain fake chat model: no paid API here)."""
    data = build_data(tmp_path_factory.mktemp(name))
    ws = Workspace(get_settings(data).model_copy(update={"llm_crag": False, "llm_condense": False, "llm_verify": False,
                                                         **settings}))
    ws.__dict__["chat_model"] = chat  # before the answer engine is built from it
    key = ApiKeys(ws.db).create("alice", "read", by=Caller.operator()).key
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(workspace=ws), host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    deadline = time.time() + 60
    while not server.started:
        assert time.time() < deadline and t.is_alive(), "server did not start"
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}", key, ws
    finally:
        server.should_exit = True
        t.join(30)
        ws.close()


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory):
    chat = SlowFakeChat(messages=itertools.cycle([AIMessage(ANSWER)]), produced=[])
    with serving(tmp_path_factory, "llm", chat) as (base, key, _):
        yield base, key, chat


BODY = {"question": "When does the office open?", "knowledge_bases": ["handbook"], "stream": True}


def test_tokens_arrive_while_the_model_writes_and_before_the_final_event(llm_server):
    base, key, chat = llm_server
    arrivals, final = [], None
    with httpx.stream("POST", f"{base}/v1/query", json=BODY, headers={"Authorization": f"Bearer {key}"},
                      timeout=120) as r:
        assert r.status_code == 200
        event = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "token":
                arrivals.append(time.perf_counter())
            elif line.startswith("data: ") and event == "answer":
                final = (time.perf_counter(), json.loads(line[6:]))
    assert final is not None and final[1]["mode"] == "llm" and final[1]["query_id"]
    assert len(arrivals) > 60
    # The first token came long before the model finished: streamed, not buffered.
    assert arrivals[0] < chat.produced[-1] - 2.0
    assert arrivals[-1] <= final[0]


def test_a_client_that_disconnects_mid_stream_stops_the_work(llm_server):
    base, key, chat = llm_server
    chat.produced.clear()
    with httpx.stream("POST", f"{base}/v1/query", json=BODY, headers={"Authorization": f"Bearer {key}"},
                      timeout=120) as r:
        tokens = 0
        for line in r.iter_lines():
            if line.startswith("event: token"):
                tokens += 1
                if tokens == 10:
                    break  # leave: the response is closed here
    at_leave = len(chat.produced)
    time.sleep(2.0)  # a model still writing would add ~65 more words in this time
    after = len(chat.produced)
    assert after - at_leave <= 3, (at_leave, after)
    assert after < len(ANSWER.split()) / 2


def test_a_model_that_stops_inside_a_code_block_leaves_no_fence_open(tmp_path_factory):
    """Issue 50: an unclosed ``` in the model's answer swallowed the "Sources:" list. Both the
    OpenAI-compatible endpoint's message and /v1/query's answer come back balanced."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    said = "The office opens at 8 o'clock on weekdays [1].\n\n```\nopen --weekdays --at 8"
    with serving(tmp_path_factory, "fence", FakeListChatModel(responses=[said] * 10)) as (base, key, _):
        auth = {"Authorization": f"Bearer {key}"}
        msg = [{"role": "user", "content": "When does the office open?"}]
        r = httpx.post(f"{base}/v1/chat/completions", json={"model": "groundwork/handbook", "messages": msg},
                       headers=auth, timeout=120).json()
        content = r["choices"][0]["message"]["content"]
        assert content.count("```") % 2 == 0 and "Sources:" in content, content
        assert content.index("Sources:") > content.rindex("```")  # the list is outside the code block
        streamed = ""
        with httpx.stream("POST", f"{base}/v1/chat/completions", headers=auth, timeout=120,
                          json={"model": "groundwork/handbook", "messages": msg, "stream": True}) as resp:
            for line in resp.iter_lines():
                if line.startswith("data: {"):
                    delta = json.loads(line[6:])["choices"][0]["delta"]
                    streamed += delta.get("content") or ""
        assert streamed.count("```") % 2 == 0 and streamed.index("Sources:") > streamed.rindex("```"), streamed
        q = httpx.post(f"{base}/v1/query", json={"question": "When does the office open?",
                                                 "knowledge_bases": ["handbook"]}, headers=auth, timeout=120).json()
        assert q["answer"].count("```") % 2 == 0, q["answer"]


def test_a_models_image_or_link_never_comes_back_live(tmp_path_factory):
    """Issue 51: a document told a model to write a Markdown image whose URL carries the answer,
    and /v1/query and /v1/chat/completions returned it live (`![status](http://…/pixel.png?q=…)`,
    `decided_by: model`): a front-end rendering that content fetches the image and leaks the
    conversation. Every URL a model writes comes back as code (text/links.py), streamed or not;
    checked by rendering with a CommonMark parser (has_live_url)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from rag_core.text.links import has_live_url

    said = ("The office opens at 8 o'clock on weekdays [1]. ![Status](http://127.0.0.1:9/pixel.png?q=opens+at+8) "
            "See [details](http://127.0.0.1:9/?q=office+opens+at+8) or <http://127.0.0.1:9/a> or "
            "http://127.0.0.1:9/b. <img src=\"http://127.0.0.1:9/c.png\">")
    # the policy that shows the model's answer as written (the case: decided_by model)
    with serving(tmp_path_factory, "exfil", FakeListChatModel(responses=[said] * 20),
                 answer_policy="model") as (base, key, _):
        auth = {"Authorization": f"Bearer {key}"}
        msg = [{"role": "user", "content": "When does the office open?"}]
        ask = {"question": "When does the office open?", "knowledge_bases": ["handbook"]}
        q = httpx.post(f"{base}/v1/query", json=ask, headers=auth, timeout=120).json()
        assert "8 o'clock" in q["answer"] and "127.0.0.1:9/pixel.png" in q["answer"], (q["decided_by"], q["reason"])
        assert not has_live_url(q["answer"]), q["answer"]
        assert not any(has_live_url(c["text"]) for c in q["claims"])
        tokens, final = "", None
        with httpx.stream("POST", f"{base}/v1/query", json={**ask, "stream": True}, headers=auth, timeout=120) as r:
            event = None
            for line in r.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "token":
                    tokens += json.loads(line[6:])["text"]
                elif line.startswith("data: ") and event == "answer":
                    final = json.loads(line[6:])
        assert tokens and not has_live_url(tokens), tokens
        assert final and not has_live_url(final["answer"])
        r = httpx.post(f"{base}/v1/chat/completions", json={"model": "groundwork/handbook", "messages": msg},
                       headers=auth, timeout=120).json()
        assert not has_live_url(r["choices"][0]["message"]["content"]), r["choices"][0]["message"]["content"]
        streamed = ""
        with httpx.stream("POST", f"{base}/v1/chat/completions", headers=auth, timeout=120,
                          json={"model": "groundwork/handbook", "messages": msg, "stream": True}) as resp:
            for line in resp.iter_lines():
                if line.startswith("data: {"):
                    streamed += json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
        assert "8 o'clock" in streamed and not has_live_url(streamed), streamed
