"""The data flows one way (DESIGN.md §2): a module may import its own package and the layers
below it, never a layer above. Parsed from the source, so a new upward import fails here."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "rag_core"

# Lowest first. Packages in one layer must not import each other either, except as listed.
LAYERS = [
    {"faults", "process"},  # process-level hooks with no dependencies (fault points, malloc arenas)
    {"errors", "models", "config", "db"},
    {"text", "access", "leases", "inference", "privacy"},  # the shared lowest layer of logic
    {"embeddings", "stores", "reader", "appdb", "evaluation", "feedback", "threads", "api_keys", "schemas",
     "answer_cache"},
    {"ingest", "retrieval", "grounding", "gaps", "alerts"},
    {"generation", "citation_view", "render"},
    {"workspace"},
    {"public", "api"},  # what outsiders build on: the LangChain retriever, the HTTP service
    {"cli"},
    {"__main__", "rag_core"},  # the entry points: `python -m rag_core`, `from rag_core import …`
]
SAME_LAYER_OK = {("ingest", "embeddings"), ("ingest", "appdb"), ("appdb", "db")}
LEVEL = {p: i for i, layer in enumerate(LAYERS) for p in layer}


def _imports() -> list[tuple[str, str, str]]:
    """(file, importing package, imported package) for every rag_core import."""
    out = []
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        pkg_parts = parts[:-1]  # a module's package; for __init__.py, the package itself
        if parts[-1] == "__init__":
            parts = parts[:-1]
        me = parts[1] if len(parts) > 1 else "rag_core"
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg_parts[: len(pkg_parts) - (node.level - 1)]
                    targets.append(".".join(base + ([node.module] if node.module else [])))
                elif node.module:
                    targets.append(node.module)
            elif isinstance(node, ast.Import):
                targets += [a.name for a in node.names]
            for t in targets:
                tp = t.split(".")
                if tp[0] == "rag_core" and len(tp) > 1 and tp[1] != me:
                    out.append((str(rel), me, tp[1]))
    return out


def test_every_package_has_a_layer():
    found = {p.stem if p.is_file() else p.name for p in ROOT.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert found - set(LEVEL) == set(), "add new packages to LAYERS"


def test_no_upward_or_sideways_imports():
    bad = [(f, a, b) for f, a, b in _imports()
           if LEVEL[b] > LEVEL[a] or (LEVEL[b] == LEVEL[a] and (a, b) not in SAME_LAYER_OK)]
    assert bad == []


def test_the_checker_sees_imports():
    # Guard against a parser that finds nothing (then the test above would pass vacuously).
    pairs = {(a, b) for _, a, b in _imports()}
    assert ("generation", "retrieval") in pairs and ("stores", "text") in pairs
