"""The LangChain face of retrieval: a `BaseRetriever`, so it composes into LCEL chains,
streams and traces like any LangChain retriever, over whichever store is configured."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from ..models import RetrievalSettings, ScoredChunk, SearchFilters


def to_lc_document(r: ScoredChunk) -> LCDocument:
    c = r.chunk
    return LCDocument(
        id=c.chunk_id,
        page_content=c.text,
        metadata={
            "chunk_id": c.chunk_id, "doc_id": c.doc_id, "kb_id": c.kb_id, "source": c.source, "title": c.title,
            "section": c.section, "page_start": c.page_start, "page_end": c.page_end, "char_start": c.char_start,
            "char_end": c.char_end, "line_start": c.line_start, "line_end": c.line_end, "chunk_type": c.chunk_type,
            "score": r.score, "scores": dict(r.scores),
        },
    )


class GroundworkRetriever(BaseRetriever):
    """Hybrid search → rerank → MMR → budget, with filters applied inside the store."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pipeline: Any  # RetrievalPipeline
    filters: SearchFilters
    settings: RetrievalSettings
    mode: str = "hybrid"
    last: Any = None  # the last Retrieved (timings, lookup info) for callers that want it

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        self.last = self.pipeline.run(query, self.filters, self.settings, mode=self.mode)
        return [to_lc_document(r) for r in self.last.results]
