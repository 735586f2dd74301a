"""The command line as a user runs it: real subprocesses, real files, real data folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rag_core.access import Caller

REPO = Path(__file__).resolve().parents[1]


def run(data: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "rag_core", *args, "--data-dir", str(data)],
                       capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture
def data(tmp_path) -> Path:
    return tmp_path / "data"


def test_kb_create_list_ingest_search_delete(data, tmp_path):
    out = json.loads(run(data, "kb", "create", "Handbook", "--description", "HR rules", "--json").stdout)
    assert out["name"] == "Handbook"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\n\n## Parental leave\n\nParents get 20 weeks of paid parental leave.\n")
    (docs / "travel.txt").write_text("Travel costs are reimbursed within 30 days of the trip.")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 truncated")
    rep = json.loads(run(data, "ingest", "--kb", "Handbook", str(docs), "--json").stdout)
    status = {r["file"]: r["status"] for r in rep["files_report"]}
    assert status == {"leave.md": "ingested", "travel.txt": "ingested", "broken.pdf": "failed"}
    assert rep["ingested"] == 2 and rep["failed"] == 1 and rep["chunks"] >= 2
    failed = next(r for r in rep["files_report"] if r["status"] == "failed")
    assert failed["reason"] and "Traceback" not in failed["reason"]

    kbs = json.loads(run(data, "kb", "list", "--json").stdout)
    assert kbs[0]["name"] == "Handbook" and kbs[0]["documents"] == 2

    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "q1", "question": "How long is parental leave?"}) + "\n"
                 + json.dumps({"id": "q2", "text": "reimbursement of travel"}) + "\n")
    r_path = tmp_path / "r.jsonl"
    for mode in ("keyword", "vector", "hybrid"):
        run(data, "search", "--kb", "Handbook", "--queries", str(q), "--top-k", "2", "--out", str(r_path), "--mode", mode)
        rows = [json.loads(l) for l in r_path.read_text().splitlines()]
        assert [r["id"] for r in rows] == ["q1", "q2"]
        leave_id = next(r for r in rep["files_report"] if r["file"] == "leave.md")["doc_ids"][0]
        assert rows[0]["results"][0]["doc_id"] == leave_id, mode
        assert set(rows[0]["results"][0]) == {"doc_id", "chunk_id", "score"}

    human = run(data, "search", "--kb", "Handbook", "--query", "parental leave", "--mode", "keyword").stdout
    assert "leave.md" in human

    run(data, "delete", "--kb", "Handbook", leave_id)
    run(data, "search", "--kb", "Handbook", "--queries", str(q), "--top-k", "5", "--out", str(r_path))
    rows = [json.loads(l) for l in r_path.read_text().splitlines()]
    assert all(res["doc_id"] != leave_id for row in rows for res in row["results"])


def test_bad_input_exits_2_with_one_line(data, tmp_path):
    run(data, "kb", "create", "kb1")
    cases = [
        ("kb", "create", "kb1"),  # duplicate name
        ("kb", "create", "bad/name"),
        ("ingest", "--kb", "nope", str(tmp_path)),
        ("ingest", "--kb", "kb1", str(tmp_path / "missing.pdf")),
        ("delete", "--kb", "kb1", "no-such-doc"),
        ("search", "--kb", "kb1", "--queries", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o.jsonl")),
    ]
    bad_q = tmp_path / "bad.jsonl"
    bad_q.write_text("{not json}\n")
    cases.append(("search", "--kb", "kb1", "--queries", str(bad_q), "--out", str(tmp_path / "o.jsonl")))
    only_bad = tmp_path / "only.txt"
    only_bad.write_bytes(b"")
    cases.append(("ingest", "--kb", "kb1", str(only_bad)))
    for args in cases:
        p = run(data, *args, ok=False)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith("indexing")]
        assert lines and lines[-1].startswith("error:"), (args, p.stderr)
        assert "Traceback" not in p.stderr, args


def test_jsonl_ids_in_search_output(data, tmp_path):
    run(data, "kb", "create", "corpus")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"_id": f"doc-{i}", "title": t, "text": x}) for i, (t, x) in enumerate([
        ("Mitochondria", "Mitochondria produce ATP through oxidative phosphorylation."),
        ("Photosynthesis", "Chloroplasts convert light into chemical energy."),
    ])))
    run(data, "ingest", "--kb", "corpus", str(corpus))
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": 7, "question": "How do cells make ATP?"}) + "\n")
    out = tmp_path / "r.jsonl"
    run(data, "search", "--kb", "corpus", "--queries", str(q), "--top-k", "1", "--out", str(out))
    row = json.loads(out.read_text())
    assert row["id"] == 7 and row["results"][0]["doc_id"] == "doc-0"


def test_identity_flags_enforce_acl(data, tmp_path):
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(data))
    ws.create_kb("board", acl_groups=["board"], caller=Caller.operator())
    ws.close()
    f = tmp_path / "minutes.txt"
    f.write_text("The board approved the merger with Globex.")
    run(data, "ingest", "--kb", "board", str(f))
    # to the intern the knowledge base does not exist: the same answer as a missing one
    for cmd in (["search", "--kb", "board", "--query", "merger Globex", "--mode", "keyword"],
                ["ask", "--kb", "board", "What did the board approve?"],
                ["ingest", "--kb", "board", str(f)], ["delete", "--kb", "board", "x"]):
        p = run(data, *cmd, "--user", "intern", "--groups", "staff", ok=False)
        assert p.returncode != 0 and "no knowledge base named 'board'" in p.stderr and "Globex" not in p.stdout
    listed = json.loads(run(data, "kb", "list", "--json", "--user", "intern", "--groups", "staff").stdout)
    assert listed == []
    out = run(data, "search", "--kb", "board", "--query", "merger Globex", "--mode", "keyword",
              "--user", "cfo", "--groups", "board,finance").stdout
    assert "minutes.txt" in out


def test_kb_access_flags_and_edits_apply_at_once(data, tmp_path):
    run(data, "kb", "create", "hr", "--tenant", "acme", "--allow-groups", "hr")
    f = tmp_path / "salaries.txt"
    f.write_text("The salary review happens every March.")
    run(data, "ingest", "--kb", "hr", str(f))
    ask = ["ask", "--kb", "hr", "When is the salary review?", "--json"]
    as_ann = ["--user", "ann", "--groups", "hr", "--tenant", "acme"]
    assert "March" in json.loads(run(data, *ask, *as_ann).stdout)["answer"]
    assert run(data, *ask, "--user", "ann", "--groups", "hr", "--tenant", "globex", ok=False).returncode != 0
    assert run(data, *ask, "--user", "bob", "--groups", "sales", "--tenant", "acme", ok=False).returncode != 0
    # an edit: bob's group is let in, and it applies to the document already there
    run(data, "kb", "update", "hr", "--allow-groups", "hr,sales")
    assert "March" in json.loads(run(data, *ask, "--user", "bob", "--groups", "sales", "--tenant", "acme").stdout)["answer"]
    rows = json.loads(run(data, "kb", "list", "--json", "--user", "bob", "--groups", "sales", "--tenant", "acme").stdout)
    assert [(r["name"], r["tenant"], r["groups"]) for r in rows] == [("hr", "acme", ["hr", "sales"])]
    # and taking ann's group out locks her out at once
    run(data, "kb", "update", "hr", "--allow-groups", "sales")
    assert run(data, *ask, *as_ann, ok=False).returncode != 0


def test_verify_judges_answers_as_answers_to_the_question(data, tmp_path):
    src = ("The Karlsbrücke observatory was built in 1887 on the northern hill. It was funded by the merchant guild, "
           "and its first director was Anna Weber.")
    pairs = tmp_path / "P.jsonl"
    rows = [
        {"id": "right", "question": "Who was the first director of the observatory?", "answer": "Anna Weber.", "sources": [src]},
        {"id": "wrong", "question": "Who was the first director of the observatory?", "answer": "Karl Brandt.", "sources": [src]},
        {"id": "sentence", "answer": "The Karlsbrücke observatory was built in 1887 on the northern hill [1].", "sources": [src]},
        {"id": "swapped", "answer": "The Karlsbrücke observatory was built in 1921 on the northern hill [1].", "sources": [src]},
    ]
    pairs.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "V.jsonl"
    run(data, "verify", "--pairs", str(pairs), "--out", str(out))
    res = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert res["right"]["grounding_score"] > res["wrong"]["grounding_score"]
    assert res["right"]["answers_question"] > res["wrong"]["answers_question"]
    assert res["right"]["claims"][0]["label"] == "supported" and res["wrong"]["claims"][0]["label"] != "supported"
    assert res["sentence"]["claims"][0]["label"] == "supported" and res["swapped"]["claims"][0]["label"] != "supported"
    assert "answers_question" not in res["sentence"]  # no question, no answering score
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "answer": 5}\n')
    p = run(data, "verify", "--pairs", str(bad), "--out", str(out), ok=False)
    assert p.returncode == 2 and "needs 'answer'" in p.stderr


def test_ask_runs_the_answer_chain(data, tmp_path):
    """`ask` goes through the same chain as the chat page (tests/test_app.py, the browser test):
    the LangChain callbacks see the same steps."""
    from tests.helpers import CHAIN_STEPS, traced_steps

    run(data, "kb", "create", "geo")
    (tmp_path / "v.md").write_text("# Volcanoes\n\nIceland has about 130 volcanoes.\n")
    run(data, "ingest", "--kb", "geo", str(tmp_path / "v.md"))
    trace = tmp_path / "trace.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAG_TRACE": f"jsonl:{trace}"}
    p = subprocess.run([sys.executable, "-m", "rag_core", "ask", "--kb", "geo", "How many volcanoes does Iceland have?",
                        "--json", "--data-dir", str(data)], capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert "130" in json.loads(p.stdout)["answer"]
    steps = traced_steps(trace)
    assert steps[0] == "groundwork_answer" and set(steps) >= CHAIN_STEPS
    out = json.loads(p.stdout)
    assert out["decided_by"] == "reader" and out["policy"] and "evidence" in out["signals"]
    # the one question-length limit (RAG_API_MAX_QUESTION_CHARS, 4,000): at it, and one above
    at = "How many volcanoes does Iceland have? " + "x" * (4000 - 38)
    assert len(at) == 4000
    assert not json.loads(run(data, "ask", "--kb", "geo", at, "--json").stdout)["answer"].startswith("error")
    over = run(data, "ask", "--kb", "geo", at + "x", ok=False)
    assert over.returncode == 2 and "the limit is 4000" in over.stderr


def test_serve_refuses_no_auth_off_loopback(tmp_path):
    from rag_core.cli import main

    assert main(["--data-dir", str(tmp_path / "d"), "serve", "--host", "0.0.0.0", "--no-auth"]) == 2


def test_chunks_exports_what_was_extracted_with_access_applied(data, tmp_path):
    from tests.helpers import make_pdf

    pdf = tmp_path / "guide.pdf"
    pdf.write_bytes(make_pdf(["Install the package with the installer.", "Run the program with its name."]))
    run(data, "kb", "create", "guide", "--user", "alice", "--allow-users", "alice")
    run(data, "ingest", "--kb", "guide", str(pdf), "--user", "alice")
    out = tmp_path / "C.jsonl"
    summary = json.loads(run(data, "chunks", "--kb", "guide", "--out", str(out), "--json", "--user", "alice").stdout)
    rows = [json.loads(line) for line in out.open()]
    assert summary["chunks"] == len(rows) >= 1
    assert set(rows[0]) == {"chunk_id", "doc_id", "source", "page_start", "page_end", "section", "language", "text"}
    assert rows[0]["source"] == "guide.pdf" and rows[0]["page_start"] == 1
    assert rows[-1]["page_end"] == 2 and "Run the program" in " ".join(r["text"] for r in rows)
    p = run(data, "chunks", "--kb", "guide", "--out", str(tmp_path / "bob.jsonl"), "--user", "bob", ok=False)
    assert p.returncode == 2 and "no knowledge base named 'guide'" in p.stderr
    assert not (tmp_path / "bob.jsonl").exists()
