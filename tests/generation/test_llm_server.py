"""LLM mode against a REAL local OpenAI-compatible server (not a fake).

SmolLM2-135M-Instruct served by llama.cpp's HTTP server (xllamacpp), one thread, see
tests/llm_server.py. Its answers are poor, so nothing here checks what it says; what is
tested is our wiring over real HTTP: the chat-model factory, SSE streaming through the
AnswerEngine, citation clean-up on real model output, and the timeout and connection-error
paths of the client as our settings configure it.
"""

from __future__ import annotations

import re

import openai
import pytest

from rag_core.access import Caller
from rag_core.config import Settings, get_settings
from rag_core.grounding.citations import attach_markers, markers_in
from rag_core.generation.llm import make_chat_model
from rag_core.generation.local_server import free_port
from tests.llm_server import LLMServerUnavailable, start_llm_server

pytestmark = pytest.mark.slow
OP = Caller.operator()  # the local no-auth user


@pytest.fixture(scope="module")
def server():
    try:
        srv = start_llm_server(threads=1, ctx=2048, n_predict=48)
    except LLMServerUnavailable as exc:
        pytest.skip(f"no local LLM server: {exc}")
    yield srv
    srv.stop()


def chat_settings(srv, **kw) -> Settings:
    return Settings(openai_base_url=srv.base_url + "/v1", openai_api_key="x", llm_model=srv.model, **kw)


def test_factory_invoke_and_stream(server):
    chat = make_chat_model(chat_settings(server, llm_timeout=60))
    reply = chat.invoke("Say hello")
    assert isinstance(reply.content, str) and reply.content.strip()

    chunks = [c.content for c in chat.stream("Say hello in five words")]
    assert len([c for c in chunks if c]) > 1, chunks  # real SSE deltas, not one blob
    assert "".join(chunks).strip()


def test_answer_engine_streams_real_llm_answer(server, tmp_path):
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(
        tmp_path / "data", openai_base_url=server.base_url + "/v1", openai_api_key="x",
        llm_model=server.model, llm_timeout=60, llm_crag=False, llm_condense=False,
        answer_threshold=0.0,  # the wiring is under test here, not the reader's abstention cut-off
    ))
    try:
        (tmp_path / "paris.md").write_text(
            "# France\n\nParis is the capital of France. The Seine flows through Paris.\n"
        )
        (tmp_path / "moon.txt").write_text("The Moon orbits the Earth every 27.3 days.\n")
        ws.create_kb("facts", caller=OP)
        ws.ingest("facts", [tmp_path / "paris.md", tmp_path / "moon.txt"], caller=OP)
        chunk_ids = {r.chunk.chunk_id for r in ws.search(["facts"], "What is the capital of France?", caller=OP).results}

        assert ws.answers.mode == "llm"
        events = list(ws.answers.stream(ws.answer_request(["facts"], "What is the capital of France?", caller=OP)))
    finally:
        ws.close()

    tokens = [e for e in events[:-1] if e["type"] == "token"]
    assert len(tokens) > 1, events  # streamed piece by piece from the server
    # tokens first, then the verification step announced, then the verified answer; SmolLM2
    # often loops ("The answer is Paris." again and again): then the stream guard takes the
    # repeats back (a restart) and says so (a notice) before the verification starts
    kinds = [e["type"] for e in events]
    # first what the page says while the model reads ("Reading 2 passages with …")
    assert kinds[0] == "status" and events[0]["text"].startswith("Reading "), kinds
    kinds = kinds[1:]
    assert kinds[:len(tokens)] == ["token"] * len(tokens) and kinds[-2:] == ["status", "answer"], kinds
    assert set(kinds[len(tokens):-2]) <= {"restart", "notice"}, kinds
    assert ("restart" in kinds) == ("llm_cut" in events[-1]["answer"].models), kinds
    last = events[-1]
    assert last["type"] == "answer"
    a = last["answer"]
    assert a.mode == "llm" and not a.abstained and a.text.strip()
    assert a.models.get("llm") == server.model
    # whatever the small model cited, only markers that point to retrieved sources survive,
    # and every marker of the streamed draft that pointed to no source is counted invalid
    streamed_markers = markers_in(attach_markers("".join(e["text"] for e in tokens)))
    assert a.invalid_citations == sum(1 for n in streamed_markers if not 1 <= n <= len(chunk_ids))
    assert [c.n for c in a.citations] == list(range(1, len(a.citations) + 1))
    for c in a.citations:
        assert c.chunk_id in chunk_ids and c.source in {"paris.md", "moon.txt"}
    markers = [int(n) for n in re.findall(r"\[(\d+)\]", a.text)]
    assert all(1 <= n <= len(a.citations) for n in markers), (a.text, len(a.citations))
    # the streamed text is the draft the answer was built from (before marker clean-up)
    streamed = "".join(e["text"] for e in tokens)
    assert streamed.strip()


def test_timeout_raises_from_the_client(server):
    """The configured timeout reaches the client: with 1 ms nothing can answer in time, so
    the call ends with a timeout error (with the default the same request is answered), and
    the server is still there for the next client."""
    chat = make_chat_model(chat_settings(server, llm_timeout=0.001, llm_retries=0))
    # langchain-openai re-raises httpx's timeout as its OpenAITimeoutError(openai.APITimeoutError)
    with pytest.raises(openai.APITimeoutError):
        chat.invoke("Write a long story about a dragon.")
    # the factory caches by its arguments: the normal-timeout model is another instance
    patient = make_chat_model(chat_settings(server, llm_timeout=60))
    assert patient is not chat
    reply = patient.invoke("Write a long story about a dragon.")
    assert isinstance(reply.content, str) and reply.content.strip()


def test_nothing_listening_raises_a_connection_error(server):
    port = free_port()  # bound and released: nothing listens there
    chat = make_chat_model(Settings(
        openai_base_url=f"http://127.0.0.1:{port}/v1", openai_api_key="x", llm_model=server.model,
        llm_timeout=10, llm_retries=0,
    ))
    with pytest.raises(openai.APIConnectionError) as err:
        chat.invoke("Say hello")
    assert not isinstance(err.value, openai.APITimeoutError)  # refused, not timed out
    # what refused it: the connection itself (httpx's ConnectError, from the OS's refusal)
    causes, e = [], err.value
    while e is not None and len(causes) < 10:
        causes.append(type(e).__name__)
        e = e.__cause__ or e.__context__
    assert "ConnectError" in causes, causes
