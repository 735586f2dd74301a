"""Token counting with a real tokenizer.

tiktoken would download its BPE tables from the network on first use, which these machines
cannot do; the bundled MiniLM WordPiece tokenizer is local and real. Its counts run within
~10–20% of GPT-style BPE on English prose, close enough for a context budget (which keeps
a safety margin anyway)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _tokenizer():
    import tokenizers

    from ..embeddings import _tokenizer_path

    tok = tokenizers.Tokenizer.from_file(str(_tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)
