"""Groundwork: chat with your documents (all logic; no Streamlit imports).

`from rag_core import GroundworkRetriever` is the public LangChain face (loaded on first use, so
the CLI does not pay for LangChain's import when it does not need it)."""

__all__ = ["GroundworkRetriever"]


def __getattr__(name: str):
    if name == "GroundworkRetriever":
        from .public import GroundworkRetriever

        return GroundworkRetriever
    raise AttributeError(f"module 'rag_core' has no attribute {name!r}")
