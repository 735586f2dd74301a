"""Which files are source code, in which language, and the prose an author wrote about it.

One table for the loader (rag_core/ingest/loaders/code.py: which grammar parses a file), the
reader (which passages are code) and the views (how to colour a stored document's code)."""

from __future__ import annotations

import re
from pathlib import PurePath

# extension → (language, as fences and syntax colouring name it; grammar module; its entry point; MIME type)
LANGUAGES: dict[str, tuple[str, str, str, str]] = {
    ".py": ("python", "tree_sitter_python", "language", "text/x-python"),
    ".pyi": ("python", "tree_sitter_python", "language", "text/x-python"),
    ".js": ("javascript", "tree_sitter_javascript", "language", "text/javascript"),
    ".mjs": ("javascript", "tree_sitter_javascript", "language", "text/javascript"),
    ".cjs": ("javascript", "tree_sitter_javascript", "language", "text/javascript"),
    ".jsx": ("javascript", "tree_sitter_javascript", "language", "text/javascript"),
    ".ts": ("typescript", "tree_sitter_typescript", "language_typescript", "text/x-typescript"),
    ".tsx": ("tsx", "tree_sitter_typescript", "language_tsx", "text/x-typescript"),
    ".go": ("go", "tree_sitter_go", "language", "text/x-go"),
    ".java": ("java", "tree_sitter_java", "language", "text/x-java"),
    ".c": ("c", "tree_sitter_c", "language", "text/x-c"),
    ".h": ("c", "tree_sitter_c", "language", "text/x-c"),
    ".cpp": ("cpp", "tree_sitter_cpp", "language", "text/x-c++"),
    ".cc": ("cpp", "tree_sitter_cpp", "language", "text/x-c++"),
    ".cxx": ("cpp", "tree_sitter_cpp", "language", "text/x-c++"),
    ".hpp": ("cpp", "tree_sitter_cpp", "language", "text/x-c++"),
    ".cs": ("csharp", "tree_sitter_c_sharp", "language", "text/x-csharp"),
    ".rs": ("rust", "tree_sitter_rust", "language", "text/x-rust"),
    ".rb": ("ruby", "tree_sitter_ruby", "language", "text/x-ruby"),
    ".php": ("php", "tree_sitter_php", "language_php", "text/x-php"),
    ".sh": ("bash", "tree_sitter_bash", "language", "text/x-shellscript"),
    ".bash": ("bash", "tree_sitter_bash", "language", "text/x-shellscript"),
    ".sql": ("sql", "tree_sitter_sql", "language", "text/x-sql"),
}
_BY_MIME = {mime: ("typescript" if lang == "tsx" else lang) for lang, _, _, mime in LANGUAGES.values()}


def code_language(name: str) -> str | None:
    """The programming language of a file name ('reader.py' → 'python'); None for other files."""
    entry = LANGUAGES.get(PurePath(name).suffix.lower())
    return entry[0] if entry else None


def language_of_mime(mime: str) -> str | None:
    """The language of a stored document's MIME type ('text/x-python' → 'python'), else None."""
    return _BY_MIME.get(mime)


_FENCE = re.compile(r"(?m)^ {0,3}(?:`{3,}|~{3,})")


def prose_part(text: str) -> str:
    """A source-code passage without its code: its heading and what the author wrote about it
    (the loader puts comments and docstrings as prose before the fence). The offline reader
    quotes sentences and was trained on prose; from a code file it quotes this, and the code
    is shown in the source view."""
    m = _FENCE.search(text)
    return text[: m.start()].rstrip() if m else text


def code_part(text: str) -> str:
    """The code of a source-code passage: the lines inside its fence, without the heading and
    prose the loader put around them. The loader's opening fence always names the language
    (```python); a passage cut inside a long unit starts or ends inside the code."""
    lines = text.split("\n")
    opening = next((i for i, ln in enumerate(lines) if _FENCE.match(ln) and ln.strip("`~ ")), None)
    first = opening + 1 if opening is not None else 0
    closing = next((i for i in range(first, len(lines)) if _FENCE.match(lines[i])), len(lines))
    return "\n".join(lines[first:closing]).strip("\n")
