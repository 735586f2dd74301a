"""Typed shapes at the boundary, shared by the CLI's JSON (DESIGN.md §6: an `A.jsonl` line) and
the HTTP API (§6b: the body of `POST /v1/query`'s answer). One definition, so the two cannot
drift apart. Pydantic only: the CLI imports this without FastAPI."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .models import Answer, Citation

CITATION_FIELDS = ("n", "doc_id", "source", "page", "chunk_id", "snippet", "score", "date", "section", "trusted")


class CitationOut(BaseModel):
    n: int
    doc_id: str
    source: str
    page: int
    chunk_id: str
    snippet: str
    score: float
    date: str = ""  # the document's date, YYYY-MM-DD
    section: str = ""  # the heading path of the cited passage (in source code: the definition and its lines)
    trusted: bool = False  # its document is marked trusted by an owner

    @classmethod
    def of(cls, c: Citation) -> CitationOut:
        return cls(**{k: getattr(c, k) for k in CITATION_FIELDS})


class AnswerOut(BaseModel):
    """A verified answer as the outside sees it: the text with [n] markers, its citations, the
    two scores and the confidence shown, or an abstention with its reason and the closest
    passages (never counted as an answer)."""

    model_config = ConfigDict(extra="allow")  # the API adds query_id / thread_id

    id: Any = None
    answer: str
    abstained: bool
    reason: str = ""
    citations: list[CitationOut] = Field(default_factory=list)
    grounding_score: float
    answers_question: float | None  # None: not judged (the reader does not read the question's language)
    confidence: float
    evidence_score: float = 0.0
    mode: str
    claims: list[dict[str, Any]] = Field(default_factory=list)
    invalid_citations: int = 0
    timings_ms: dict[str, float] = Field(default_factory=dict)
    closest: list[CitationOut] = Field(default_factory=list)
    conflicts: list[dict[str, Any]] = Field(default_factory=list)
    # The answer policy's decision (rag_core/generation/policy.py): the rule that decided, the
    # policy in force, and the signals it read.
    decided_by: str = ""
    policy: str = ""
    signals: dict[str, Any] = Field(default_factory=dict)
    language: str = "en"  # the question's, ISO 639-1 (the refusal and help texts are in it)
    # The planner's route (search | document | compare) and its record: who decided, why, and
    # the documents read whole.
    route: str = "search"
    plan: dict[str, Any] = Field(default_factory=dict)
    cached: bool = False  # served from the answer cache; `cached_at`: when it was first computed (UTC)
    cached_at: str = ""
    # What the answer was made with: the models (and the answer policy), the passages read or
    # cited (ids, scores), and each model's tokens in and out ({} offline or from the cache)
    models: dict[str, str] = Field(default_factory=dict)
    sources: list[dict[str, Any]] = Field(default_factory=list)
    usage: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @classmethod
    def of(cls, a: Answer, id: Any = None, **extra: Any) -> AnswerOut:
        return cls(id=id, answer=a.text, abstained=a.abstained, reason=a.reason,
                   citations=[CitationOut.of(c) for c in a.citations], grounding_score=a.grounding_score,
                   answers_question=a.answers_question, confidence=a.confidence, evidence_score=a.evidence_score,
                   mode=a.mode, claims=[c.to_dict() for c in a.claims], invalid_citations=a.invalid_citations,
                   timings_ms=a.timings_ms, closest=[CitationOut.of(c) for c in a.closest], conflicts=a.conflicts,
                   decided_by=a.decided_by, policy=a.policy, signals=a.signals, language=a.language,
                   route=a.route, plan=a.plan, cached=a.cached, cached_at=a.cached_at, models=a.models,
                   sources=a.sources, usage=a.usage, **extra)


def kb_row(kb) -> dict[str, Any]:
    """A knowledge base as the CLI's `kb list --json` and the API's /v1/knowledge-bases show it."""
    return {"kb_id": kb.kb_id, "name": kb.name, "description": kb.description, "tenant": kb.tenant,
            "owners": kb.owners, "users": kb.acl_users, "groups": kb.acl_groups,
            "grounded_only": kb.grounded_only, "instructions": kb.instructions, "retention_days": kb.retention_days,
            "query_log": kb.query_log or "default"}


def kb_listing(ws, kb, caller) -> dict[str, Any]:
    """kb_row with what a caller sees in a list: its counts and whether it may change it
    (`kb list --json` and /v1/knowledge-bases; `ws` is the caller's Workspace)."""
    docs, chunks = ws.kb_counts(kb.kb_id, caller=caller)
    return {**kb_row(kb), "documents": docs, "chunks": chunks, "may_change": ws.can_write(kb.kb_id, caller=caller)}
