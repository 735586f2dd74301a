"""The modules of rag_core/text import one another in one direction only (a cycle, like the
one analysis.py and language.py once had, works only through function-level imports and
breaks as soon as either is imported at module level)."""

from __future__ import annotations

import ast
from pathlib import Path

TEXT = Path(__file__).resolve().parents[2] / "rag_core" / "text"


def _graph() -> dict[str, set[str]]:
    mods = {p.stem for p in TEXT.glob("*.py")}
    out: dict[str, set[str]] = {m: set() for m in mods}
    for p in TEXT.glob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
                out[p.stem] |= {n.split(".")[0] for n in names if n.split(".")[0] in mods}
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> list[str] | None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path + [m, n]
            if n not in state and (found := visit(n, path + [m])):
                return found
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m, [])):
            return found
    return None


def test_text_modules_import_each_other_in_one_direction():
    graph = _graph()
    assert graph["analysis"] and graph["language"] is not None  # the parser sees imports
    assert _cycle(graph) is None


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
