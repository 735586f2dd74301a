"""The README's command-line examples, run as written (issue 40: claims match the code).

Every `python -m rag_core …` line of the README's "Command line" block that names no
placeholder (DOC_ID, Q.jsonl, an optional `[--flag]`, a `|` of alternatives) runs verbatim,
in order, in a folder holding the files it names (docs/, more/report.pdf), with the data
folder from $RAG_DATA_DIR as the README says; each must succeed. The HTTP examples (curl and
the `openai` client) run in tests/api/test_readme_examples.py.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from rag_core.cli import main
from tests.helpers import make_pdf

README = Path(__file__).resolve().parents[1] / "README.md"
PLACEHOLDER = re.compile(r"DOC_ID|KEY_ID|\bQ\.jsonl|\bP\.jsonl|\[--|\s\|\s|\.\./shared|\bserve\b|--of bob")


def readme_block(after_heading: str, needle: str) -> str:
    """The first fenced block after `after_heading` that contains `needle`."""
    text = README.read_text()
    rest = text[text.index(after_heading):]
    for block in re.findall(r"```(?:bash|python)?\n(.*?)```", rest, re.S):
        if needle in block:
            return block
    raise AssertionError(f"no block with {needle!r} after {after_heading!r} in the README")


def runnable_commands() -> list[str]:
    out = []
    for line in readme_block("## Command line", "python -m rag_core kb create").splitlines():
        cmd = re.sub(r"\s+#.*$", "", line).strip()  # the README's trailing comments
        if cmd.startswith("python -m rag_core") and not PLACEHOLDER.search(cmd):
            out.append(cmd)
    return out


def test_the_readmes_command_line_examples_run_as_written(tmp_path, monkeypatch, capsys):
    cmds = runnable_commands()
    # the examples a newcomer tries first are among them (a README edit cannot drop them silently)
    for must in ("kb create handbook", "ingest --kb handbook docs/ more/report.pdf", "search --kb handbook --query",
                 'ask --kb handbook "How long is parental leave?"', "chunks --kb handbook --out C.jsonl", "kb list"):
        assert any(must in c for c in cmds), must
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "leave.md").write_text(
        "# Parental leave\n\nParental leave is 16 weeks at full pay. It can be split into two blocks.\n")
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "report.pdf").write_bytes(make_pdf(["Annual report. Staff grew to 120 people in 2025."]))
    (tmp_path / "travel.pdf").write_bytes(make_pdf(["Travel policy. The travel allowance is 40 euros a day."]))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    for cmd in cmds:
        argv = shlex.split(cmd)[3:]
        capsys.readouterr()
        code = main(argv)
        out = capsys.readouterr()
        assert code == 0, f"{cmd}\n{out.out[-2000:]}\n{out.err[-2000:]}"
        if argv[:1] == ["ask"] and "parental leave" in cmd:
            assert "16 weeks" in out.out and "[1]" in out.out
    assert (tmp_path / "C.jsonl").read_text().count("\n") >= 2  # the chunks export wrote the documents' chunks
