"""Chat-model factory: any OpenAI-compatible endpoint (OpenAI, Azure OpenAI's v1 endpoint,
Ollama, vLLM, llama.cpp server, or our own managed llama.cpp server for RAG_LLM_GGUF)
through langchain-openai's ChatOpenAI."""

from __future__ import annotations

from functools import lru_cache

from ..config import Settings
from ..errors import MissingDependency


@lru_cache(maxsize=4)
def _build(model: str, base_url: str | None, api_key: str | None, temperature: float, timeout: float, retries: int,
           max_tokens: int):
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:  # pragma: no cover
        raise MissingDependency("LLM mode needs langchain-openai: pip install langchain-openai") from exc
    return ChatOpenAI(
        model=model,
        base_url=base_url,
        # Local servers accept any key; the client library insists on one.
        api_key=api_key or "not-needed",
        temperature=temperature,
        timeout=timeout,
        max_retries=retries,
        # A looping small model must not run until the timeout.
        max_tokens=max_tokens,
        streaming=True,
        stream_usage=True,  # token counts also when streaming from a custom base_url
    )


def make_chat_model(settings: Settings):
    """None when no endpoint is configured: the app then answers extractively, offline.
    RAG_LLM_GGUF starts (once per process) the built-in llama.cpp server and talks to it."""
    if not settings.llm_configured:
        return None
    if settings.llm_gguf:
        from .local_server import ensure_server

        srv = ensure_server(settings.llm_gguf, settings.llm_threads, settings.llm_ctx)
        return _build(srv.model, srv.base_url + "/v1", None, settings.llm_temperature, settings.llm_timeout,
                      settings.llm_retries, settings.llm_max_tokens)
    return _build(
        settings.llm_model, settings.openai_base_url, settings.openai_api_key,
        settings.llm_temperature, settings.llm_timeout, settings.llm_retries, settings.llm_max_tokens,
    )
