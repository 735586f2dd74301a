"""Source code (Python, JavaScript/TypeScript, Go, Java, C/C++, C#, Rust, Ruby, PHP, shell, SQL).

A code file is cut where its language cuts it: tree-sitter parses the file with the
language's grammar, and every top-level definition (function, class, method, struct,
interface, `CREATE TABLE`, ...) becomes a unit of its own, with the comments written just
above it. A class too long for one passage is cut again into its header and its methods.
Short statements between definitions (imports, constants) are kept together.

Each unit is written in the loaders' light Markdown as a heading, whose text is the unit's
first line and its line numbers in the file (`## def read_csv(path) — lines 12–40`), then the
unit's code, unchanged, in a fence that names the language. The chunker then starts a new
passage at every heading (a passage never spans two definitions), files the passage under
that heading's path ("class Reader — lines 5–90 > def parse(self) — lines 20–41"), and the
answer and source views show the fence as code.

Why tree-sitter (one grammar wheel per language, a few hundred KB each): Python's own `ast`
covers one language only, and regular expressions over braces miss strings, comments and
nesting. The language is read from the file's extension (`.h` is read as C).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rag_core.errors import MissingDependency
from rag_core.models import LoadedDocument
from rag_core.text.source_code import LANGUAGES

from .common import LoadOptions, _decode_text

EXTENSIONS = {ext: mime for ext, (_, _, _, mime) in LANGUAGES.items()}

# A passage longer than this is cut again at the definitions inside it (a class at its
# methods). Near the chunker's default passage size, so a method is usually one passage.
SPLIT_CHARS = 1200
_HEADING_CHARS = 110  # the first line shown as a unit's heading, cut with "…" beyond this
# Node types that are definitions in some grammar: a unit of their own, however short.
_DEFINITION = re.compile(
    r"function|method|class|interface|struct|enum|trait|impl_item|module|namespace|type_declaration"
    r"|type_alias|type_definition|constructor|record|decorated_definition|template_declaration|create_")
# Definitions whose members are cut apart when they are too long for one passage (a function
# is not: its body is cut between lines by the chunker, never into statements under headings).
_CONTAINER = re.compile(r"class|interface|impl_item|trait|module|namespace|struct|enum|object|record")
# Node types that hold a definition's body, where methods and nested definitions live.
_BODY = re.compile(r"body|block|declaration_list|field_declaration_list")
# Wrappers whose definition is inside (`@decorator def`, `export function`, `template <...> class`)
_WRAPPERS = ("decorated_definition", "export_statement", "template_declaration")


@lru_cache(maxsize=None)
def _parser(module: str, entry: str):
    try:
        from tree_sitter import Language, Parser

        grammar = importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(f"reading source code needs tree-sitter and {module.replace('_', '-')} "
                                "(pip install -r requirements.txt)") from exc
    return Parser(Language(getattr(grammar, entry)()))


@dataclass
class _Unit:
    first: int  # 0-based line numbers in the file, inclusive
    last: int
    depth: int = 0  # 0: top level; 1: inside a class ...
    span_last: int | None = None  # a class header's heading names the whole class's lines


def load(path: Path, source: str, opts: LoadOptions) -> list[LoadedDocument]:
    ext = Path(source).suffix.lower() if Path(source).suffix.lower() in LANGUAGES else path.suffix.lower()
    language, module, entry, mime = LANGUAGES[ext]
    data = path.read_bytes()
    text = _decode_text(data).replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    tree = _parser(module, entry).parse(text.encode("utf-8"))
    units = _units(tree.root_node.children, lines, depth=0)
    if not units:  # a file the grammar reads as one unknown node: keep it whole, cut by lines
        units = [_Unit(0, len(lines) - 1)]
    markdown = "\n\n".join(_unit_markdown(u, lines, language) for u in units)
    return [LoadedDocument(source=source, title=Path(source).name, mime=mime, pages=[markdown],
                           metadata={"code_language": language})]


def _rows(node) -> tuple[int, int]:
    first, last = node.start_point[0], node.end_point[0]
    if node.end_point[1] == 0 and last > first:  # ends at the start of the next line
        last -= 1
    return first, last


def _is_definition(node) -> bool:
    if node.type in ("export_statement",):
        return any(_is_definition(c) for c in node.named_children)
    if node.type in ("lexical_declaration", "variable_declaration"):  # const f = () => {...}
        return any(_is_definition(c) or "arrow_function" in c.type or "function" in c.type
                   for d in node.named_children for c in d.named_children)
    if node.type == "statement":  # SQL: CREATE ... is a definition, SELECT/INSERT are statements
        return any(_DEFINITION.search(c.type) for c in node.named_children)
    return bool(_DEFINITION.search(node.type))


def _body(node):
    """The node holding the members of a class-like `node` (its body), or None."""
    while node.type in _WRAPPERS:
        inner = [c for c in node.named_children if _is_definition(c)]
        if not inner:
            return None
        node = inner[-1]
    if not _CONTAINER.search(node.type) or re.search("function|method", node.type):
        return None
    body = node.child_by_field_name("body")
    if body is None:
        body = next((c for c in reversed(node.named_children) if _BODY.search(c.type)), None)
    return body


def _units(nodes, lines: list[str], depth: int) -> list[_Unit]:
    """Units of a run of sibling nodes: definitions alone (with the comments right above
    them), other statements together, a long definition cut again at its members."""
    out: list[_Unit] = []
    run: _Unit | None = None  # statements gathered so far
    pending: int | None = None  # first line of comments waiting for the definition below them
    prev_last = -2
    for node in nodes:
        if not node.is_named:
            continue
        first, last = _rows(node)
        if "comment" in node.type:
            if pending is None or first > prev_last + 1:
                pending = first
            prev_last = last
            continue
        own = _is_definition(node) or last - first >= 2
        if pending is not None and not (own and first <= prev_last + 1):
            # comments not attached to a definition below: they join the statements
            run = _extend(out, run, pending, prev_last, depth)
            pending = None
        if not own:
            run = _extend(out, run, first, last, depth)
            prev_last = last
            continue
        run = None
        start = pending if pending is not None else first
        pending = None
        prev_last = last
        body = _body(node) if _text_len(lines, start, last) > SPLIT_CHARS and depth < 3 else None
        members = _units(body.children, lines, depth + 1) if body is not None else []
        if len(members) > 1 or (members and members[0].first > start):
            head_last = members[0].first - 1
            if head_last >= start:
                out.append(_Unit(start, head_last, depth, span_last=last))
                members[-1].last = max(members[-1].last, last)  # a closing brace stays with the last member
                out += members
                continue
        out.append(_Unit(start, last, depth))
    if pending is not None:
        _extend(out, run, pending, prev_last, depth)
    return out


def _extend(out: list[_Unit], run: _Unit | None, first: int, last: int, depth: int) -> _Unit:
    if run is not None and out and out[-1] is run:
        run.last = max(run.last, last)
        return run
    unit = _Unit(first, last, depth)
    out.append(unit)
    return unit


def _text_len(lines: list[str], first: int, last: int) -> int:
    return sum(len(ln) + 1 for ln in lines[first: last + 1])


def _unit_markdown(u: _Unit, lines: list[str], language: str) -> str:
    body = "\n".join(ln.rstrip() for ln in lines[u.first: u.last + 1]).strip("\n")
    shown = [ln for ln in body.split("\n") if ln.strip()]
    code_lines = [ln for ln in shown if not _comment_line(ln, language)] or shown
    label = next((ln for ln in code_lines if not ln.lstrip().startswith("@")), code_lines[0])
    label_at = body.split("\n").index(label)
    label = " ".join(label.split())
    if len(label) > _HEADING_CHARS:
        label = label[: _HEADING_CHARS - 1].rstrip() + "…"
    end = u.last if u.span_last is None else u.span_last
    where = f"line {u.first + 1}" if u.first == end else f"lines {u.first + 1}–{end + 1}"
    doc = _doc_text(body.split("\n"), label_at, language)
    ticks = max(3, max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
    fence = "`" * ticks
    heading = f"{'#' * min(6, 2 + u.depth)} {label} — {where}"
    return "\n".join([heading, *([doc, ""] if doc else []), f"{fence}{language}", body, fence])


_DOCSTRING = re.compile(r"^\s*[rRuUbBfF]{0,2}(\"\"\"|\'\'\')")
_COMMENT_MARKS = re.compile(r"^\s*(?:/\*\*?|\*/|\*(?!/)|//+!?|#+|--+|<!--|-->)\s?|\s*\*/\s*$")
DOC_CHARS = 600  # the most of a unit's comments and docstring repeated as prose


def _doc_text(lines: list[str], label_at: int, language: str) -> str:
    """What the author wrote about a unit, as one paragraph of prose: the comment lines right
    above its first line and, in Python, its docstring. It stands before the code so that the
    offline reader, which quotes sentences, finds "Read a CSV file and return a list of
    dictionaries" (the fence keeps the code itself, its comments included, unchanged)."""
    words: list[str] = []
    for ln in lines[:label_at]:
        if _comment_line(ln, language):
            words.append(_COMMENT_MARKS.sub("", ln).strip())
    rest = lines[label_at:] if _DOCSTRING.match(lines[label_at]) else lines[label_at + 1:]  # a module's docstring
    if language == "python":
        i = next((k for k, ln in enumerate(rest) if ln.strip()), None)
        m = _DOCSTRING.match(rest[i]) if i is not None else None
        if m:
            quote = m.group(1)
            text = "\n".join(rest[i:])
            start = text.index(quote) + 3
            end = text.find(quote, start)
            if end > 0:
                words.append(text[start:end])
    prose = " ".join(" ".join(words).split())
    return prose[:DOC_CHARS].rsplit(" ", 1)[0] + " …" if len(prose) > DOC_CHARS else prose


_COMMENT_START = re.compile(r"^\s*(//|/\*|\*|--|<!--)")
_HASH_COMMENTS = frozenset({"python", "ruby", "bash", "php"})  # in C and C++ a "#" line is the preprocessor's


def _comment_line(line: str, language: str) -> bool:
    s = line.lstrip()
    if s.startswith("#"):
        return language in _HASH_COMMENTS and not s.startswith("#!")
    return bool(_COMMENT_START.match(s))
