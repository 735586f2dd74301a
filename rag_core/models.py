"""Typed records that cross module boundaries (DESIGN.md §3).

Dataclasses rather than pydantic: chunks are created by the hundred thousand during
ingestion and dataclass construction is ~10x cheaper; validation happens at the edges
(loaders, CLI, settings) instead.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import date as _date, datetime, timezone
from typing import Any, Literal

TRUST_LEVELS = ("trusted", "normal", "draft")  # Document.trust
ChunkType = Literal["paragraph", "table", "code", "list", "heading", "ocr"]  # ocr: text read from a page image
DocStatus = Literal["indexing", "searchable", "indexed", "failed"]  # searchable: keyword index written, vectors pending


@dataclass
class RetrievalSettings:
    """Per-knowledge-base retrieval knobs (the retrieval issue uses all of them)."""

    top_k: int = 5
    alpha: float = 0.5  # 0 = keyword only, 1 = vector only
    fusion: Literal["relative_score", "rrf"] = "relative_score"
    rerank: bool = True
    mmr_lambda: float = 0.7
    score_threshold: float = 0.0
    context_tokens: int = 3000
    # Recency preference (rag_core/retrieval/recency.py): 0 = off; otherwise a passage's
    # relevance is blended with 0.5 ** (age in days / half-life).
    recency_half_life_days: float = 0.0
    # A cited source dated more than this many days before today is flagged as old (0 = never);
    # one superseded by a newer version of the same document is flagged whatever this is.
    stale_after_days: int = 0
    # The answer policy for questions asked here (rag_core/generation/policy.py): "" = the
    # app's setting (RAG_ANSWER_POLICY); "auto", "conservative" or "model".
    answer_policy: str = ""
    # Moderation here (generation/moderation.py): "" = the app's RAG_MODERATION; off, standard, strict
    moderation: str = ""


@dataclass
class KnowledgeBase:
    kb_id: str
    name: str
    description: str = ""
    instructions: str = ""
    grounded_only: bool = False
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    tenant: str | None = None
    acl_users: list[str] = field(default_factory=list)
    acl_groups: list[str] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    # Who may change it (rag_core/access.py): the creator, and co-owners they name.
    owners: list[str] = field(default_factory=list)
    # Days the query log and feedback of questions asked here are kept (0: kept until deleted);
    # rag_core/privacy.py deletes older rows.
    retention_days: int = 0
    # What the query log keeps of questions asked here (rag_core/privacy.py): "full",
    # "anonymous" (not who asked) or "off" (nothing); "" = the deployment's RAG_QUERY_LOG.
    query_log: str = ""


@dataclass
class LoadedDocument:
    """What a loader returns: text split by page, before chunking.

    `pages` holds one string per page (one element for formats without pages). Text is
    normalised to a light Markdown so that a single chunker sees structure for every
    format: headings as `#` lines, list items as `- `, tables as `| a | b |` rows, code in
    ``` fences.
    """

    source: str  # file name as uploaded
    title: str
    mime: str
    pages: list[str]
    doc_id: str | None = None  # set by loaders whose records carry their own id (JSONL)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def page_count(self) -> int:
        return len(self.pages)


@dataclass
class Chunk:
    chunk_id: str
    doc_id: str
    kb_id: str
    text: str  # the passage itself, shown and cited
    title: str = ""
    section: str = ""  # heading path, " > " joined
    source: str = ""
    ordinal: int = 0  # position in the document
    page_start: int = 1
    page_end: int = 1
    char_start: int = 0
    char_end: int = 0
    line_start: int = 1
    line_end: int = 1
    chunk_type: ChunkType = "paragraph"
    tenant: str | None = None
    acl_users: list[str] = field(default_factory=list)
    acl_groups: list[str] = field(default_factory=list)
    # The document's date as a day number (models.iso_to_day; 0: unknown); the store filters on it.
    doc_day: int = 0
    # ISO 639-1 ("": unknown, read as English: every chunk stored before languages). Keyword
    # analysis follows it (rag_core/text/analysis.py).
    language: str = ""

    @property
    def date(self) -> str:
        return day_to_iso(self.doc_day)

    @property
    def heading(self) -> str:
        """Title and section path: the context a passage's own words lack."""
        return " — ".join(p for p in (self.title, self.section) if p)

    def index_text(self) -> str:
        """Text that is embedded and keyword-indexed: title and section give a passage
        the context its own words lack (a chunk of a CV rarely repeats the person's name)."""
        head = self.heading
        return f"{head}\n{self.text}" if head else self.text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Document:
    doc_id: str
    kb_id: str
    source: str
    title: str
    mime: str
    sha256: str
    pages: int = 0
    chunks: int = 0
    status: DocStatus = "indexing"
    reason: str = ""
    created_at: float = field(default_factory=time.time)
    tenant: str | None = None
    acl_users: list[str] = field(default_factory=list)
    acl_groups: list[str] = field(default_factory=list)
    stored_path: str | None = None  # the original file, kept for download
    # The document's own date, YYYY-MM-DD: what the file states (its metadata), else the
    # upload day, or what an owner set. `date_source` says which: "metadata" | "upload" | "set".
    date: str = ""
    date_source: str = "upload"
    # ISO 639-1, detected at ingest ("": not known); `language_source` "detected" | "set" (an owner's override)
    language: str = ""
    language_source: str = "detected"
    # An owner's mark (TRUST_LEVELS): "trusted" passages rank a little higher and are named
    # first in a conflict; "draft" documents are left out of answers unless asked for.
    trust: str = "normal"
    # What it says it is, read at ingest (ingest/pipeline.describe): its first heading or line;
    # the planner matches questions against it beside the file name and title
    description: str = ""

    @property
    def doc_day(self) -> int:
        return iso_to_day(self.date) if self.date else iso_to_day(upload_day(self.created_at))


@dataclass
class SearchFilters:
    """Applied inside the store query, never after it. Access is decided per knowledge base
    (rag_core/access.py), which yields the kb_ids a caller may see; chunks are not filtered
    by the users and groups stamped on them at ingest (an access edit would leave those
    stale)."""

    kb_ids: list[str] | None = None  # None: every knowledge base; []: none
    tenant: str | None = None
    # who asked (for logs and traces); the stores do not filter on these
    user: str | None = None
    groups: list[str] = field(default_factory=list)
    doc_ids: list[str] | None = None
    # Document-date range, inclusive, YYYY-MM-DD (None: open); a document without a date
    # (days 0) is outside every range.
    after: str | None = None
    before: str | None = None
    # Not a filter: the languages of the documents searched, most common first. The keyword
    # side reads the question in its own language and in these (text/analysis.query_terms).
    languages: tuple[str, ...] = ()
    # Draft documents (kb_id, doc_id) left out unless the caller asks for them (Document.trust)
    exclude_docs: tuple[tuple[str, str], ...] = ()
    # Not a filter: the trusted documents among those searched, (kb_id, doc_id); ranking boosts them
    trusted_docs: frozenset = frozenset()

    def day_range(self) -> tuple[int, int] | None:
        """(first, last) day numbers, or None when no date filter is set."""
        if self.after is None and self.before is None:
            return None
        return (iso_to_day(self.after) if self.after else 1, iso_to_day(self.before) if self.before else 2**31 - 1)


@dataclass
class ScoredChunk:
    chunk: Chunk
    score: float
    # per-signal scores kept for explanation and fusion
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class FileReport:
    """One line of an ingest report."""

    file: str
    status: Literal["ingested", "duplicate", "failed"]
    reason: str = ""
    doc_ids: list[str] = field(default_factory=list)
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    ocr_pages: list[int] = field(default_factory=list)  # pages read by OCR (no text layer)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Citation:
    n: int  # the marker number as shown: [n]
    doc_id: str
    source: str
    page: int
    chunk_id: str
    snippet: str  # the passage text that supports the sentence(s) citing it
    score: float  # retrieval (rerank or fused) score of the passage
    kb_id: str = ""
    title: str = ""
    section: str = ""
    ocr: bool = False  # the passage was read by OCR from a page image (may hold misreadings)
    # Why this source may be out of date ("" = no reason known): older than the knowledge
    # base's stale_after_days, or superseded by a newer version of the same document (aging.py)
    stale: str = ""
    date: str = ""  # the document's date, YYYY-MM-DD
    # An abstention's closest passage: the paragraph, list or code block around `snippet` (its
    # best sentence), shown with that sentence highlighted. Empty for an answer's citations.
    passage: str = ""
    trusted: bool = False  # its document is marked trusted by an owner (a badge where it is shown)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


ClaimLabel = Literal["supported", "partial", "unsupported"]


@dataclass
class Claim:
    text: str
    label: ClaimLabel
    score: float  # support strength in [0, 1]
    cited: list[int] = field(default_factory=list)  # marker numbers the sentence cites
    best_source: int | None = None  # marker of the passage that supports it best
    # marker of the passage, among all given, that supports it (≥ the supported level) when
    # that is not one it cites: the checker moves a wrong citation there
    supported_by: int | None = None
    answers: float | None = None  # P(this sentence answers the question), when a question is known
    # Who placed the sentence's citation: "model" (written with the answer: the LLM's own
    # marker, or the extractive answer's by construction), "checker" (the citation checker
    # cited a sentence left uncited, or moved a citation to the passage that supports it),
    # None (uncited). Logged with the query, so analytics can tell whether the model cites.
    cited_by: str | None = None
    # Facts of the sentence (a number, code, name, frequency, negation) the passage it is judged
    # against does not state (grounding/facts.py): why a fluent sentence reads unsupported.
    missing: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Answer:
    question: str
    text: str  # with inline [n] markers
    citations: list[Citation] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    grounding_score: float = 0.0  # *supported*: share of sentences backed by the sources they cite
    # calibrated P(the answer answers the question) — reader model; None: not judged (the
    # reader does not read the question's language)
    answers_question: float | None = 0.0
    # answers_question × grounding_score (grounding/verify.py: confidence); the support alone
    # where answers_question was not judged (shown as such)
    confidence: float = 0.0
    abstained: bool = False
    reason: str = ""
    suggestions: list[str] = field(default_factory=list)
    invalid_citations: int = 0
    retrieval_score: float = 0.0  # best passage's reranker probability (or fused score)
    evidence_score: float = 0.0  # best P(answers) over the retrieved sentences: what abstention compares
    mode: Literal["llm", "extractive"] = "extractive"
    models: dict[str, str] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    standalone_question: str = ""
    revised: int = 0  # times corrective retrieval rewrote the answer (shown with the answer)
    auto_cited: int = 0  # sentences the checker cited: left uncited, or citing a passage that does not support them
    below_threshold: int = 0  # passages the knowledge base's "Minimum relevance" dropped (retrieval/pipeline.py)
    # On an abstention: the passages nearest to answering (they mention the topic but do not
    # answer it), for a person to judge. Never citations: not styled, scored or logged as an answer.
    closest: list[Citation] = field(default_factory=list)
    # Sources that state different values for what was asked (grounding/conflicts.py): each
    # {"kind", "sides": [{"n", "doc_id", "source", "date", "text", "values"}, ...]}; both
    # sides are cited in the text.
    conflicts: list[dict] = field(default_factory=list)
    # The answer policy's decision (rag_core/generation/policy.py): the rule that decided to
    # show, flag or withhold this answer, the policy in force, and the signals it read.
    decided_by: str = ""
    policy: str = ""
    signals: dict[str, Any] = field(default_factory=dict)
    # Offline answers show a passage: the sentence in it that scored best, shown highlighted.
    highlight: str = ""
    language: str = "en"  # the question's (ISO 639-1): the refusal and help texts are in it
    # The planner's route (generation/planner.py): "search" | "document" | "compare", and its
    # record (who decided, why, the documents it read).
    route: str = "search"
    plan: dict[str, Any] = field(default_factory=dict)
    # Served from the answer cache (rag_core/answer_cache.py), first computed at `cached_at` (ISO, UTC).
    cached: bool = False
    cached_at: str = ""
    # The passages the answer was made from (an abstention: those it read), each {"n",
    # "chunk_id", "doc_id", "kb_id", "source", "score", "cited"}: what an API client audits.
    sources: list[dict] = field(default_factory=list)
    # Tokens each model read and wrote for this answer: {model: {"input_tokens",
    # "output_tokens", "total_tokens"}} ({} offline, and for an answer served from the cache).
    usage: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Answer:
        """Back from `to_dict` (a saved conversation); unknown keys from other versions are ignored."""
        known = {f for f in cls.__dataclass_fields__}
        d = {k: v for k, v in d.items() if k in known}
        d["citations"] = [Citation(**c) for c in d.get("citations", [])]
        d["closest"] = [Citation(**c) for c in d.get("closest", [])]
        d["claims"] = [Claim(**c) for c in d.get("claims", [])]
        return cls(**d)


# Day numbers count from 1899-12-31, so every plausible date (loaders keep 1900 on) is ≥ 1
# and 0 can mean unknown.
_EPOCH = _date(1899, 12, 31)


def iso_to_day(value: str) -> int:
    """'YYYY-MM-DD' → its day number (ValueError on anything else)."""
    return (_date.fromisoformat(value.strip()[:10]) - _EPOCH).days


def day_to_iso(day: int) -> str:
    return (_EPOCH.fromordinal(_EPOCH.toordinal() + day)).isoformat() if day else ""


def upload_day(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).date().isoformat()


def conflict_note(conflict: dict) -> str:
    """An Answer.conflicts entry as one plain sentence saying who says what, dated, the trusted
    source first and why (every surface shows the same words; the pages escape it for Markdown)."""
    parts = [f"{s['source']}" + (f" ({s['date']})" if s["date"] else "") + (" (trusted)" if s.get("trusted") else "")
             + f" [{s['n']}] says " + (", ".join(s["values"]) or "otherwise") for s in conflict["sides"]]
    note = f"The sources disagree on this {conflict['kind']}: " + "; ".join(parts) + "."
    trusted = [s["source"] for s in conflict["sides"] if s.get("trusted")]
    if trusted and len(trusted) < len(conflict["sides"]):
        note += f" {trusted[0]} is named first: its knowledge base's owner marked it trusted."
    return note


def trusted_first(conflict: dict | None, trusted_doc_ids: set[str]) -> dict | None:
    """A conflict record with each side marked trusted or not, the trusted sides first (stable)."""
    if conflict is None:
        return None
    for s in conflict["sides"]:
        s["trusted"] = s["doc_id"] in trusted_doc_ids
    conflict["sides"].sort(key=lambda s: not s["trusted"])
    return conflict
