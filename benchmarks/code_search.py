"""Source code search (issue 53, part 9): code read as code against the same files read as prose.

    python benchmarks/code_search.py [--per-language 150]

The corpus is code nobody on this project wrote or read for this: modules of Python's standard
library (this interpreter's) and of Go's (`go env GOROOT`). Every function, method, class and
type with a doc comment or docstring gives two questions:

- identifier: its name as typed ("dedent", "TrimLeft", "DictReader");
- description: the first sentence of its documentation with the name taken out ("Remove any
  common leading whitespace from every line in `text`"), as someone asks who does not know it.

A question finds its definition when a passage among the first k holds the definition's line
(`def dedent(`, `func TrimLeft(`). Two knowledge bases hold the same files: as code (`.py`,
`.go`: cut at definitions, identifiers' words indexed) and as plain text (the same bytes saved
as `.txt`: what the product did before, cut as prose). Hybrid search, the product's default.
Reports hit@1 and hit@5 per language and kind, and the passages per file.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OP = Caller.operator()
PY_FILES = ["textwrap.py", "csv.py", "shutil.py", "argparse.py", "json/decoder.py", "json/encoder.py", "heapq.py",
            "bisect.py", "difflib.py", "fnmatch.py", "glob.py", "base64.py", "calendar.py", "string.py",
            "statistics.py", "tempfile.py", "configparser.py", "ipaddress.py"]
GO_FILES = ["strings/strings.go", "strings/builder.go", "bytes/buffer.go", "sort/sort.go", "path/path.go",
            "path/filepath/path.go", "strconv/atoi.go", "io/io.go", "bufio/scan.go", "unicode/utf8/utf8.go",
            "net/url/url.go", "time/format.go"]


def first_sentence(doc: str) -> str:
    doc = " ".join(doc.split())
    m = re.match(r"(.+?[.!?])(\s|$)", doc)
    return (m.group(1) if m else doc)[:200]


def python_definitions(path: Path) -> list[dict]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").split("\n")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("__"):
            doc = ast.get_docstring(node) or ""
            line = lines[node.lineno - 1].strip()
            if line.startswith("@"):
                continue
            out.append({"name": node.name, "line": line, "doc": first_sentence(doc)})
    return out


_GO_DEF = re.compile(r"^(func (?:\([^)]*\) )?([A-Za-z_]\w*)\s*[\[(]|type ([A-Za-z_]\w*) )")


def go_definitions(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").split("\n")
    out = []
    for i, line in enumerate(lines):
        m = _GO_DEF.match(line)
        if not m:
            continue
        name = m.group(2) or m.group(3)
        doc, j = [], i - 1
        while j >= 0 and lines[j].startswith("//"):
            doc.insert(0, lines[j][2:].strip())
            j -= 1
        out.append({"name": name, "line": line.strip(), "doc": first_sentence(" ".join(doc))})
    return out


def description_query(d: dict) -> str:
    """The doc's first sentence without the name (Go's doc comments start with it)."""
    q = re.sub(rf"\b{re.escape(d['name'])}\b", " ", d["doc"])
    return " ".join(q.split())


def corpus(tmp: Path) -> dict[str, list[tuple[Path, list[dict]]]]:
    pylib = Path(sysconfig.get_paths()["stdlib"])
    goroot = Path(subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True).stdout.strip() or "/usr/local/go")
    out: dict[str, list] = {"python": [], "go": []}
    for lang, root, files, defs in (("python", pylib, PY_FILES, python_definitions),
                                    ("go", goroot / "src", GO_FILES, go_definitions)):
        for rel in files:
            src = root / rel
            if src.is_file():
                name = rel.replace("/", "_")
                dst = tmp / "code" / name
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                (tmp / "text").mkdir(exist_ok=True)
                shutil.copyfile(src, tmp / "text" / (name + ".txt"))
                out[lang].append((dst, defs(src)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-language", type=int, default=150, help="definitions sampled per language")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "code_search.json"))
    args = ap.parse_args()
    rng = random.Random(53)
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        files = corpus(tmp)
        ws = Workspace(get_settings(tmp / "data", answer_cache=False))
        report: dict = {"files": {k: len(v) for k, v in files.items()}}
        try:
            for kb, folder in (("as-code", "code"), ("as-text", "text")):
                ws.create_kb(kb, caller=OP)
                stats = ws.ingest(kb, sorted((tmp / folder).iterdir()), caller=OP)
                bad = [(r.file, r.reason) for r in stats.reports if r.status != "ingested"]
                assert not bad, bad
                report[f"{kb}_passages"] = sum(r.chunks for r in stats.reports)
            for lang, entries in files.items():
                defs = [d for _, ds in entries for d in ds]
                names = {}
                for d in defs:
                    names.setdefault(d["name"], []).append(d)
                unique = [ds[0] for ds in names.values() if len(ds) == 1]  # a name defined once: one right answer
                sample = rng.sample(unique, min(args.per_language, len(unique)))
                for kind in ("identifier", "description"):
                    qs = [(d["name"] if kind == "identifier" else description_query(d), d) for d in sample]
                    qs = [(q, d) for q, d in qs if len(q.split()) >= (1 if kind == "identifier" else 4)]
                    for kb in ("as-code", "as-text"):
                        h1 = h5 = 0
                        for q, d in qs:
                            res = ws.search([kb], q, k=5, caller=OP).results
                            found = [d["line"] in r.chunk.text for r in res]
                            h1 += bool(found[:1] and found[0])
                            h5 += any(found)
                        report[f"{lang} {kind} {kb}"] = {"questions": len(qs), "hit@1": round(h1 / max(len(qs), 1), 3),
                                                         "hit@5": round(h5 / max(len(qs), 1), 3)}
                        print(f"{lang:7s} {kind:11s} {kb:8s} n={len(qs):3d} hit@1 {h1 / max(len(qs), 1):.3f} "
                              f"hit@5 {h5 / max(len(qs), 1):.3f}", flush=True)
        finally:
            ws.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
