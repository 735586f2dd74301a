"""Source code over HTTP (issue 53, part 9), against a real API server: `.py`, `.js` and `.sql`
files upload like any document, each definition is a passage cited under its first line and
its lines in the file, an identifier finds its definition by keyword, and the offline answer
quotes what the author wrote about the code."""

from __future__ import annotations

import uuid

import pytest

from tests.api.conftest import wait_for_job

LOADER = ('"""Reading tables from files."""\n\nimport csv\n\n\n'
          "# Parse a CSV file into rows; the separator defaults to a comma.\n"
          'def read_csv(path, sep=","):\n'
          '    """Read a CSV file and return a list of dictionaries, one per row."""\n'
          "    with open(path) as fh:\n        return list(csv.DictReader(fh, delimiter=sep))\n")
USERS = ("// User lookups for the admin console.\nexport async function getUserById(id) {\n"
         "  const res = await fetch(`/api/users/${id}`);\n  return res.json();\n}\n")
SCHEMA = ("-- The shop's customer accounts, one row per login.\nCREATE TABLE accounts (\n  id INTEGER PRIMARY KEY,\n"
          "  email TEXT NOT NULL UNIQUE\n);\n")


@pytest.fixture
def kb(client):
    name = f"code-{uuid.uuid4().hex[:8]}"
    alice = client("alice")
    assert alice.post("/v1/knowledge-bases", json={"name": name}).status_code == 201
    r = alice.post(f"/v1/knowledge-bases/{name}/documents", files=[
        ("files", ("loader.py", LOADER.encode(), "text/x-python")),
        ("files", ("users.js", USERS.encode(), "text/javascript")),
        ("files", ("schema.sql", SCHEMA.encode(), "application/sql"))])
    assert r.status_code == 202, r.text
    job = wait_for_job(alice, r.json()["job_id"])
    assert [x["status"] for x in job["reports"]] == ["ingested"] * 3, job["reports"]
    yield name
    alice.delete(f"/v1/knowledge-bases/{name}")


def test_code_files_are_documents_in_their_language(client, kb):
    docs = {d["source"]: d for d in client("alice").get(f"/v1/knowledge-bases/{kb}/documents").json()["data"]}
    assert docs["loader.py"]["mime"] == "text/x-python" and docs["users.js"]["mime"] == "text/javascript"
    assert docs["schema.sql"]["mime"] == "text/x-sql"


@pytest.mark.parametrize("query, section", [
    ("read_csv", 'def read_csv(path, sep=","): — lines 6–10'),
    ("getUserById", "export async function getUserById(id) { — lines 1–5"),
    ("how do I get a user by id", "export async function getUserById(id) { — lines 1–5"),
])
def test_an_identifier_finds_its_definition(client, kb, query, section):
    r = client("alice").post("/v1/search", json={"query": query, "knowledge_bases": [kb], "top_k": 3})
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["section"] == section


def test_the_offline_answer_quotes_the_authors_words_and_cites_the_definition(client, kb):
    r = client("alice").post("/v1/query", json={"question": "What does read_csv return?", "knowledge_bases": [kb],
                                                "no_cache": True})
    assert r.status_code == 200, r.text
    a = r.json()
    assert not a["abstained"] and "list of dictionaries, one per row" in a["answer"]
    assert "```" not in a["answer"]  # the code is in the cited source, not pasted into the sentence
    assert a["citations"][0]["section"].startswith("def read_csv(")
