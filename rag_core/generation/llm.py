"""Chat-model factory: any OpenAI-compatible endpoint (OpenAI, Azure OpenAI's v1 endpoint,
Ollama, vLLM, llama.cpp server, or our own managed llama.cpp server for RAG_LLM_GGUF)
through langchain-openai's ChatOpenAI."""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Any, AsyncIterator, Iterator

from langchain_core.language_models.chat_models import BaseChatModel, agenerate_from_stream, generate_from_stream
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult

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


class LocalServerChat(BaseChatModel):
    """RAG_LLM_GGUF's chat model. The workspace builds its chat model once, but the managed
    llama.cpp server may die (a native crash, the OOM killer) and come back on another port.
    So every request first asks `ensure_server()` for the process's server — restarting it if
    it died — and goes to that server's current URL through a ChatOpenAI built for it.

    Cheap while the server lives: `ensure_server` is a lock and a `poll()` of the child, and
    the ChatOpenAI for an unchanged (model, URL) comes from `_build`'s cache; nothing reloads.
    A request already under way when the server dies still fails (the chain then answers
    offline and says so); the next one finds a new server."""

    gguf: str
    threads: int = 2
    ctx: int = 4096
    temperature: float = 0.0
    timeout: float = 60.0
    retries: int = 0
    max_tokens: int = 512

    @property
    def _llm_type(self) -> str:
        return "groundwork-local-gguf"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"gguf": self.gguf, "threads": self.threads, "ctx": self.ctx}

    def current(self):
        """The ChatOpenAI for the server that runs now (started or restarted if needed)."""
        from .local_server import ensure_server

        srv = ensure_server(self.gguf, self.threads, self.ctx)
        return _build(srv.model, srv.base_url + "/v1", None, self.temperature, self.timeout, self.retries,
                      self.max_tokens)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        # The ChatOpenAI behind it is built to stream (answers stream to the page): its own
        # _generate would get an SSE stream back and fail ("Unexpected response type … got
        # Stream"), which every `invoke` (condensing, planning, relevance checks) did until the
        # fast model's benchmark showed it. A whole reply is the stream, joined.
        return generate_from_stream(self._stream(messages, stop=stop, run_manager=run_manager, **kwargs))

    def _stream(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        yield from self.current()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)

    async def _agenerate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        return await agenerate_from_stream(self._astream(messages, stop=stop, run_manager=run_manager, **kwargs))

    async def _astream(self, messages: list[BaseMessage], stop=None, run_manager=None,
                       **kwargs) -> AsyncIterator[ChatGenerationChunk]:
        chat = await asyncio.to_thread(self.current)
        async for chunk in chat._astream(messages, stop=stop, run_manager=run_manager, **kwargs):
            yield chunk


def make_chat_model(settings: Settings):
    """None when no endpoint is configured: the app then answers extractively, offline.
    RAG_LLM_GGUF starts the built-in llama.cpp server now (so a bad model file is reported at
    once) and returns a `LocalServerChat`, which finds (or restarts) the server at each request."""
    if not settings.llm_configured:
        return None
    if settings.llm_gguf:
        from .local_server import ensure_server

        ensure_server(settings.llm_gguf, settings.llm_threads, settings.llm_ctx)
        return LocalServerChat(gguf=str(settings.llm_gguf), threads=settings.llm_threads, ctx=settings.llm_ctx,
                               temperature=settings.llm_temperature, timeout=settings.llm_timeout,
                               retries=settings.llm_retries, max_tokens=settings.llm_max_tokens)
    return _build(
        settings.llm_model, settings.openai_base_url, settings.openai_api_key,
        settings.llm_temperature, settings.llm_timeout, settings.llm_retries, settings.llm_max_tokens,
    )


def make_fast_chat_model(settings: Settings):
    """The model for the small steps (condense, plan, relevance check, rewrites): None offline;
    RAG_LLM_FAST_GGUF's own local server; RAG_LLM_FAST_MODEL on the answer model's endpoint;
    else the answer model itself with the short output budget (`llm_fast_max_tokens`)."""
    if not settings.llm_configured:
        return None
    n = settings.llm_fast_max_tokens
    if settings.llm_fast_gguf or settings.llm_gguf:
        from .local_server import ensure_server

        gguf = settings.llm_fast_gguf or settings.llm_gguf
        ensure_server(gguf, settings.llm_threads, settings.llm_ctx)
        return LocalServerChat(gguf=str(gguf), threads=settings.llm_threads, ctx=settings.llm_ctx,
                               temperature=0.0, timeout=settings.llm_timeout, retries=settings.llm_retries, max_tokens=n)
    return _build(settings.llm_fast_model or settings.llm_model, settings.openai_base_url, settings.openai_api_key,
                  0.0, settings.llm_timeout, settings.llm_retries, n)
