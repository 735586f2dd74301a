"""The public LangChain face: `from rag_core import GroundworkRetriever`, buildable from anyone's
code over a Groundwork data folder. It is the retrieval layer's retriever plus a constructor that
opens the folder (a Workspace), which is why it lives above the Workspace (tests/test_layering.py)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .retrieval.retriever import GroundworkRetriever as _Retriever


class GroundworkRetriever(_Retriever):
    """Hybrid search → rerank over Groundwork knowledge bases, as a LangChain retriever::

        from rag_core import GroundworkRetriever

        retriever = GroundworkRetriever.from_data_dir("./.groundwork", ["Handbook"], k=4, user="alice")
        docs = retriever.invoke("How many vacation days do I get?")      # or .ainvoke / .batch
        docs = retriever.invoke("vacation days", k=1)                      # LangChain's k per call
    """

    # What from_data_dir opened, kept alive with the retriever; close() releases it.
    workspace: Any = Field(default=None, exclude=True, repr=False)

    @classmethod
    def from_data_dir(cls, data_dir, knowledge_bases: list[str], k: int | None = 4, user: str | None = None,
                      groups=None, tenant: str | None = None, mode: str = "hybrid") -> GroundworkRetriever:
        """Identity as everywhere else (rag_core/access.py): `user`/`groups`/`tenant` are the caller;
        with none it is an anonymous caller who sees only open knowledge bases, never the operator.
        A knowledge base it may not see is reported like a missing one (NotFound)."""
        from .access import Caller
        from .config import get_settings
        from .retrieval.settings import merged_settings
        from .workspace import Workspace

        ws = Workspace(get_settings(data_dir))
        try:
            caller = Caller.of(user, groups, tenant)
            kbs = ws.resolve_kbs(list(knowledge_bases), caller=caller)
        except Exception:
            ws.close()
            raise
        return cls(pipeline=ws.retrieval, filters=ws.search_filters(kbs, caller=caller), settings=merged_settings(kbs),
                   mode=mode, k=k, workspace=ws)

    def close(self) -> None:
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None
