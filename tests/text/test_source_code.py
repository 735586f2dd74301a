"""Source-code helpers (rag_core/text/source_code.py) and identifier words (analysis.py)."""

from __future__ import annotations

from rag_core.models import Chunk
from rag_core.text.analysis import chunk_terms, identifier_words
from rag_core.text.source_code import code_language, code_part, language_of_mime, prose_part

PASSAGE = "## def f(x) — lines 3–5\nDoubles x.\n\n```python\ndef f(x):\n    return 2 * x\n```"


def test_the_language_comes_from_the_extension_and_the_mime_type():
    assert code_language("pkg/reader.PY") == "python" and code_language("a.tsx") == "tsx"
    assert code_language("notes.txt") is None and code_language("Makefile") is None
    assert language_of_mime("text/x-go") == "go" and language_of_mime("text/x-typescript") == "typescript"
    assert language_of_mime("application/pdf") is None


def test_a_code_passage_splits_into_its_prose_and_its_code():
    assert prose_part(PASSAGE) == "## def f(x) — lines 3–5\nDoubles x."
    assert code_part(PASSAGE) == "def f(x):\n    return 2 * x"
    # a passage cut inside a long unit: the code runs to its end, or from its start
    assert code_part("## def g() — lines 1–90\n```go\nfunc g() {\n  a := 1") == "func g() {\n  a := 1"
    assert code_part("  b := 2\n  return b\n}\n```") == "  b := 2\n  return b\n}"
    assert prose_part("no fence here") == "no fence here"


def test_identifier_words_split_snake_camel_and_acronyms():
    assert identifier_words("x = read_csv(p); getUserById(1); HTTPServer; MAX_SIZE") == \
        "read csv get User By Id HTTP Server MAX SIZE"
    assert identifier_words("plain words, utf8 and R2D2") == ""


def test_code_passages_index_identifier_words_and_prose_does_not():
    code = Chunk(chunk_id="c", doc_id="d", kb_id="k", text="getUserById(id)", chunk_type="code", source="u.js")
    prose = Chunk(chunk_id="p", doc_id="d", kb_id="k", text="getUserById(id)", source="u.txt")
    assert {"getuserbyid", "user"} <= set(chunk_terms(code))
    assert "getuserbyid" in chunk_terms(prose) and "user" not in chunk_terms(prose)
