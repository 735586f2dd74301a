"""Trusted and draft documents over HTTP (issue 53, part 4), against a real API server: an
owner marks a document with PATCH, a reader cannot, a draft is out of /v1/search and
/v1/query unless the request sets include_drafts, and a trusted source's citation says so."""

from __future__ import annotations

import uuid

import pytest

from tests.api.conftest import wait_for_job

POLICY = "# Leave policy\n\nEvery employee gets 25 vacation days per year. Unused days expire in March.\n"
PROPOSAL = "# Draft leave proposal\n\nEvery employee gets 30 vacation days per year under the proposal.\n"


@pytest.fixture
def kb(client):
    name = f"trust-{uuid.uuid4().hex[:8]}"
    alice = client("alice")
    assert alice.post("/v1/knowledge-bases", json={"name": name}).status_code == 201
    r = alice.post(f"/v1/knowledge-bases/{name}/documents", files=[
        ("files", ("leave-policy.md", POLICY.encode(), "text/markdown")),
        ("files", ("proposal.md", PROPOSAL.encode(), "text/markdown"))])
    assert r.status_code == 202, r.text
    job = wait_for_job(alice, r.json()["job_id"])
    assert [x["status"] for x in job["reports"]] == ["ingested"] * 2, job["reports"]
    yield name
    alice.delete(f"/v1/knowledge-bases/{name}")


def doc_ids(c, kb) -> dict[str, str]:
    return {d["source"]: d["doc_id"] for d in c.get(f"/v1/knowledge-bases/{kb}/documents").json()["data"]}


def test_owners_mark_documents_and_drafts_leave_answers_unless_asked_for(client, kb):
    alice, bob = client("alice"), client("bob")
    ids = doc_ids(alice, kb)
    assert bob.patch(f"/v1/knowledge-bases/{kb}/documents/{ids['proposal.md']}", json={"trust": "draft"}).status_code in (403, 404)
    r = alice.patch(f"/v1/knowledge-bases/{kb}/documents/{ids['proposal.md']}", json={"trust": "draft"})
    assert r.status_code == 200 and r.json()["trust"] == "draft"
    assert alice.patch(f"/v1/knowledge-bases/{kb}/documents/{ids['proposal.md']}",
                       json={"trust": "verified"}).status_code == 422
    q = {"question": "How many vacation days does every employee get?", "knowledge_bases": [kb], "no_cache": True}
    a = alice.post("/v1/query", json=q).json()
    assert {c["source"] for c in a["citations"]} == {"leave-policy.md"} and "30" not in a["answer"]
    a = alice.post("/v1/query", json={**q, "include_drafts": True}).json()
    assert "proposal.md" in {c["source"] for c in a["citations"]}
    s = {"query": "vacation days proposal", "knowledge_bases": [kb]}
    assert "proposal.md" not in {x["source"] for x in alice.post("/v1/search", json=s).json()["results"]}
    assert "proposal.md" in {x["source"] for x in alice.post("/v1/search", json={**s, "include_drafts": True}).json()["results"]}


def test_a_trusted_sources_citation_says_so(client, kb):
    alice = client("alice")
    ids = doc_ids(alice, kb)
    assert alice.patch(f"/v1/knowledge-bases/{kb}/documents/{ids['leave-policy.md']}",
                       json={"trust": "trusted"}).json()["trust"] == "trusted"
    a = alice.post("/v1/query", json={"question": "When do unused vacation days expire?", "knowledge_bases": [kb],
                                      "no_cache": True}).json()
    assert a["citations"] and all(c["trusted"] for c in a["citations"] if c["source"] == "leave-policy.md")
    assert any(c["source"] == "leave-policy.md" for c in a["citations"])
