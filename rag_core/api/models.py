"""Request bodies of the HTTP API (DESIGN.md §6b). Unknown fields are refused (a typo such as
`knowledge_base` must not silently ask every knowledge base nothing); the OpenAI-compatible
bodies are the exception (openai_compat.py): clients send many optional fields of their own."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Name = Field(min_length=1, max_length=200)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QueryRequest(Strict):
    question: str = Field(min_length=1)
    knowledge_bases: list[str] = Field(min_length=1, max_length=50)
    documents: list[str] | None = Field(default=None, max_length=1000, description="scope: these document ids only")
    thread_id: str | None = Field(default=None, description="a conversation (POST /v1/threads) to continue and save to")
    stream: bool = False
    after: str | None = Field(default=None, description="YYYY-MM-DD: only documents dated on or after this day")
    before: str | None = Field(default=None, description="YYYY-MM-DD: only documents dated on or before this day")
    route: Literal["search", "document", "compare"] | None = Field(
        default=None, description="the route instead of the planner's ('search' = search instead)")
    no_cache: bool = Field(default=False, description="answer afresh, not from the answer cache")
    top_k: int | None = Field(default=None, ge=1, le=50, description="passages per answer (default: the knowledge bases')")
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description="the model's sampling temperature")
    max_tokens: int | None = Field(default=None, ge=1, le=8192, description="the most tokens the model may write")
    kb_weights: dict[str, float] | None = Field(
        default=None, description="knowledge base (name or id) → factor on its passages' scores; 0 leaves it out")
    grounded_only: bool = Field(default=False, description="only sentences the sources support (never switches "
                                "off an owner's grounded-only)")
    include_drafts: bool = Field(default=False, description="answer from documents their owners marked draft too")

    def options(self):
        from ..generation.steps import AnswerOptions

        return AnswerOptions(top_k=self.top_k, temperature=self.temperature, max_tokens=self.max_tokens,
                             kb_weights=dict(self.kb_weights or {}), grounded_only=self.grounded_only,
                             include_drafts=self.include_drafts)


class SearchRequest(Strict):
    query: str = Field(min_length=1)
    knowledge_bases: list[str] = Field(min_length=1, max_length=50)
    top_k: int = Field(default=10, ge=1, le=100)
    mode: Literal["hybrid", "keyword", "vector"] = "hybrid"
    rerank: bool = True
    after: str | None = Field(default=None, description="YYYY-MM-DD: only documents dated on or after this day")
    before: str | None = Field(default=None, description="YYYY-MM-DD: only documents dated on or before this day")
    include_drafts: bool = Field(default=False, description="search documents their owners marked draft too")


class RetrievalIn(Strict):
    top_k: int | None = Field(default=None, ge=1, le=50)
    alpha: float | None = Field(default=None, ge=0.0, le=1.0)
    fusion: Literal["relative_score", "rrf"] | None = None
    rerank: bool | None = None
    mmr_lambda: float | None = Field(default=None, ge=0.0, le=1.0)
    score_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    context_tokens: int | None = Field(default=None, ge=200, le=100_000)
    recency_half_life_days: float | None = Field(default=None, ge=0.0, le=100_000)
    stale_after_days: int | None = Field(default=None, ge=0, le=100_000,
                                         description="flag cited sources older than this many days (0 = never)")
    # the knowledge base's answer policy ("" = the app's RAG_ANSWER_POLICY)
    answer_policy: Literal["", "auto", "conservative", "model"] | None = None
    # moderation of questions and answers here ("" = the app's RAG_MODERATION)
    moderation: Literal["", "off", "standard", "strict"] | None = None


class KnowledgeBaseCreate(Strict):
    name: str = Name
    description: str = Field(default="", max_length=2000)
    instructions: str = Field(default="", max_length=8000)
    grounded_only: bool = False
    retrieval: RetrievalIn | None = None
    allow_users: list[str] = Field(default_factory=list)
    allow_groups: list[str] = Field(default_factory=list)
    owners: list[str] = Field(default_factory=list)


class KnowledgeBaseUpdate(Strict):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    instructions: str | None = Field(default=None, max_length=8000)
    grounded_only: bool | None = None
    retrieval: RetrievalIn | None = None
    allow_users: list[str] | None = None
    allow_groups: list[str] | None = None
    owners: list[str] | None = None
    retention_days: int | None = Field(default=None, ge=0, le=36500, description="query-log retention; 0 = keep")
    query_log: Literal["full", "anonymous", "off", ""] | None = Field(
        default=None, description="what the query log keeps of questions asked here; '' = the deployment's RAG_QUERY_LOG")


class UrlIngest(Strict):
    url: str = Field(min_length=8, max_length=2000, description="a web page, or a sitemap (XML) of pages")
    max_pages: int = Field(default=50, ge=1, le=1000)


class AlertRuleCreate(Strict):
    metric: Literal["p95_latency_ms", "abstention_rate", "thumbs_down_rate", "error_rate"]
    threshold: float = Field(ge=0)
    window_minutes: int = Field(default=15, ge=1, le=10080)
    min_answers: int = Field(default=5, ge=1)
    webhook: str | None = Field(default=None, max_length=2000)


class FeedbackRequest(Strict):
    query_id: str = Field(min_length=1, max_length=64)
    rating: Literal[1, -1]
    reason: str | None = None
    comment: str = Field(default="", max_length=2000)


class DocumentUpdate(Strict):
    date: str | None = Field(default=None, description="YYYY-MM-DD: the document's date")
    language: str | None = Field(default=None, description="ISO 639-1: the language the document is written in "
                                 "(its keyword index is rebuilt in it)")
    trust: Literal["trusted", "normal", "draft"] | None = Field(
        default=None, description="trusted: ranks higher and is named first in a conflict; draft: left out of "
                                  "answers unless a request asks for drafts")


class ThreadCreate(Strict):
    title: str = Field(default="New chat", min_length=1, max_length=120)


class ThreadRename(Strict):
    title: str = Field(min_length=1, max_length=120)
