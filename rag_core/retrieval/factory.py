"""The one place that picks a reranker from the settings."""

from __future__ import annotations

from ..config import Settings
from ..errors import GroundworkError
from .rerank import FeatureReranker, LLMReranker, ReaderReranker, load_weights


def make_reranker(settings: Settings, store, chat_model=None):
    idf = getattr(store, "idf", None)
    base = FeatureReranker(idf=idf, weights=load_weights())
    if settings.reranker == "none":
        return None
    if settings.reranker == "features":
        return base
    if settings.reranker == "reader":
        from ..reader import get_reader

        return ReaderReranker(get_reader(settings.reader_threads), base)
    if settings.reranker == "llm":
        if chat_model is None:
            raise GroundworkError("RAG_RERANKER=llm needs an LLM: set OPENAI_API_KEY and/or OPENAI_BASE_URL")
        return LLMReranker(chat_model, base=base)
    raise GroundworkError(f"unknown reranker '{settings.reranker}'")
