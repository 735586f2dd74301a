"""The access matrix over every endpoint of the real server: no credentials → 401 (before the
body is read); another user's private knowledge base and another tenant's read exactly like a
missing one (404, same message); a read key cannot write; a revoked key fails at once. The table
is checked against the server's OpenAPI schema, so a new endpoint fails here until it is placed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from tests.api.conftest import ROOT

MISSING = "no-such-kb"
DOC = "0" * 16

# (method, path template) → how to call it against knowledge base `kb` (None: not KB-scoped).
KB_ROUTES = {
    ("GET", "/v1/knowledge-bases/{kb}"): lambda c, kb: c.get(f"/v1/knowledge-bases/{kb}"),
    ("PATCH", "/v1/knowledge-bases/{kb}"): lambda c, kb: c.patch(f"/v1/knowledge-bases/{kb}", json={"description": "x"}),
    ("DELETE", "/v1/knowledge-bases/{kb}"): lambda c, kb: c.delete(f"/v1/knowledge-bases/{kb}"),
    ("GET", "/v1/knowledge-bases/{kb}/documents"): lambda c, kb: c.get(f"/v1/knowledge-bases/{kb}/documents"),
    ("POST", "/v1/knowledge-bases/{kb}/documents"): lambda c, kb: c.post(
        f"/v1/knowledge-bases/{kb}/documents", files=[("files", ("n.md", b"# Note\n\nhello\n", "text/markdown"))]),
    ("DELETE", "/v1/knowledge-bases/{kb}/documents/{doc_id}"): lambda c, kb: c.delete(
        f"/v1/knowledge-bases/{kb}/documents/{DOC}"),
    ("PATCH", "/v1/knowledge-bases/{kb}/documents/{doc_id}"): lambda c, kb: c.patch(
        f"/v1/knowledge-bases/{kb}/documents/{DOC}", json={"date": "2001-02-03"}),
    ("GET", "/v1/knowledge-bases/{kb}/documents/{doc_id}/original"): lambda c, kb: c.get(
        f"/v1/knowledge-bases/{kb}/documents/{DOC}/original"),
    ("POST", "/v1/knowledge-bases/{kb}/urls"): lambda c, kb: c.post(
        f"/v1/knowledge-bases/{kb}/urls", json={"url": "http://127.0.0.1:9/page"}),
    ("POST", "/v1/query"): lambda c, kb: c.post("/v1/query", json={"question": "What is the launch code?",
                                                                   "knowledge_bases": [kb]}),
    ("POST", "/v1/search"): lambda c, kb: c.post("/v1/search", json={"query": "launch code", "knowledge_bases": [kb]}),
    # the answer policy in force for these knowledge bases (without them: the app's, tests/api/test_server.py)
    ("GET", "/v1/answer-policy"): lambda c, kb: c.get("/v1/answer-policy", params={"knowledge_bases": kb}),
    ("POST", "/v1/chat/completions"): lambda c, kb: c.post("/v1/chat/completions", json={
        "model": f"groundwork/{kb}", "messages": [{"role": "user", "content": "What is the launch code?"}]}),
}
# Not about one knowledge base: each is checked in its own test below.
OTHER_ROUTES = {("GET", "/v1/knowledge-bases"), ("POST", "/v1/knowledge-bases"), ("GET", "/v1/models"),
                ("GET", "/v1/jobs/{job_id}"), ("POST", "/v1/jobs/{job_id}/cancel"), ("POST", "/v1/feedback"),
                ("GET", "/v1/threads"), ("POST", "/v1/threads"), ("GET", "/v1/threads/{thread_id}"),
                ("PATCH", "/v1/threads/{thread_id}"), ("DELETE", "/v1/threads/{thread_id}"),
                ("GET", "/v1/threads/{thread_id}/export"), ("GET", "/v1/metrics"),
                # the caller's own history; alert rules (admins): tests/api/test_server.py
                ("GET", "/v1/queries"), ("GET", "/v1/alerts"), ("POST", "/v1/alerts"),
                ("DELETE", "/v1/alerts/{rule_id}"), ("POST", "/v1/alerts/check")}
OPEN_ROUTES = {("GET", "/v1/health"), ("GET", "/v1/ready")}
WRITES = {("PATCH", "/v1/knowledge-bases/{kb}"), ("DELETE", "/v1/knowledge-bases/{kb}"),
          ("POST", "/v1/knowledge-bases/{kb}/documents"), ("DELETE", "/v1/knowledge-bases/{kb}/documents/{doc_id}"),
          ("PATCH", "/v1/knowledge-bases/{kb}/documents/{doc_id}"), ("POST", "/v1/knowledge-bases/{kb}/urls")}


def routes(base: str) -> set[tuple[str, str]]:
    schema = httpx.get(f"{base}/openapi.json", timeout=120).json()
    return {(m.upper(), path) for path, ops in schema["paths"].items() for m in ops}


def test_every_endpoint_is_in_the_matrix(api):
    assert routes(api[0]) == set(KB_ROUTES) | OTHER_ROUTES | OPEN_ROUTES


def test_no_credentials_is_401_with_a_challenge_before_the_body_is_read(api):
    base = api[0]
    for method, path in routes(base) - OPEN_ROUTES:
        url = base + path.format(kb="handbook", doc_id=DOC, job_id="j", thread_id="t", rule_id="r")
        for headers in ({}, {"Authorization": "Bearer gwk_0123456789abcdef_notarealsecretnotarealsecret"},
                        {"Authorization": "Basic YWxpY2U6cHc="}):
            # A malformed body: were it validated first, this would be a 400/422.
            r = httpx.request(method, url, content=b"{not json", headers={**headers, "Content-Type": "application/json"})
            assert r.status_code == 401, (method, path, headers, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer")
            assert r.json()["error"]["code"] == "unauthorized"


def _same_as_missing(client, call, kb: str, route) -> None:
    hidden, missing = call(client, kb), call(client, MISSING)
    assert hidden.status_code == missing.status_code == 404, (route, hidden.text, missing.text)
    assert hidden.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
    assert hidden.json()["error"]["message"].replace(kb, MISSING) == missing.json()["error"]["message"], route


@pytest.mark.parametrize("who,kb", [("bob", "alice-private"), ("bob", "acme-secrets"), ("alice", "acme-secrets"),
                                    ("carol", "alice-private")])
def test_a_hidden_knowledge_base_reads_exactly_like_a_missing_one(client, who, kb):
    c = client(who)
    for route, call in KB_ROUTES.items():
        _same_as_missing(c, call, kb, route)
    assert kb not in {k["name"] for k in c.get("/v1/knowledge-bases").json()["data"]}
    assert f"groundwork/{kb}" not in {m["id"] for m in c.get("/v1/models").json()["data"]}


def test_the_owner_and_an_admin_do_see_it(client):
    for who in ("alice", "admin"):
        a = client(who).post("/v1/query", json={"question": "What is the launch code of project Papaya?",
                                                "knowledge_bases": ["alice-private"]}).json()
        assert "4471" in a["answer"], (who, a)


def test_a_read_key_cannot_write_and_changes_nothing(client):
    reader, before = client("alice_read"), client("alice").get("/v1/knowledge-bases/handbook").json()
    for route in WRITES:
        r = KB_ROUTES[route](reader, "handbook")
        assert r.status_code == 403 and r.json()["error"]["code"] == "insufficient_scope", (route, r.text)
    r = reader.post("/v1/knowledge-bases", json={"name": "should-not-exist"})
    assert r.status_code == 403
    after = client("alice").get("/v1/knowledge-bases/handbook").json()
    assert after == before
    assert "should-not-exist" not in {k["name"] for k in client("admin").get("/v1/knowledge-bases").json()["data"]}
    # …but it reads and asks.
    assert reader.post("/v1/search", json={"query": "vacation", "knowledge_bases": ["handbook"]}).status_code == 200


def test_a_reader_who_is_not_an_owner_gets_403_on_writes(client):
    # Bob may read the open handbook but not change it: he is told so (it is not hidden from him).
    r = client("bob").patch("/v1/knowledge-bases/handbook", json={"description": "bob was here"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"


def test_jobs_threads_and_feedback_of_another_user_are_not_found(client):
    alice, bob = client("alice"), client("bob")
    job = alice.post("/v1/knowledge-bases/handbook/documents",
                     files=[("files", ("extra.md", b"# Extra\n\nThe canteen serves soup.\n", "text/markdown"))]).json()
    for r in (bob.get(f"/v1/jobs/{job['job_id']}"), bob.post(f"/v1/jobs/{job['job_id']}/cancel"),
              bob.get("/v1/jobs/nonexistent")):
        assert r.status_code == 404
    assert alice.get(f"/v1/jobs/{job['job_id']}").status_code == 200
    tid = alice.post("/v1/threads", json={"title": "mine"}).json()["thread_id"]
    for r in (bob.get(f"/v1/threads/{tid}"), bob.patch(f"/v1/threads/{tid}", json={"title": "x"}),
              bob.get(f"/v1/threads/{tid}/export"), bob.delete(f"/v1/threads/{tid}")):
        assert r.status_code == 404
    assert tid not in {t["thread_id"] for t in bob.get("/v1/threads").json()["data"]}
    assert alice.get(f"/v1/threads/{tid}").status_code == 200


def _cli(data, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_core", "--data-dir", str(data), *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)


def test_a_key_made_with_the_cli_works_and_a_revoked_one_fails_at_once(api):
    base, _, data = api
    made = _cli(data, "api-key", "create", "--user", "dave", "--scope", "read", "--label", "slack bot")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("gwk_")
    h = {"Authorization": f"Bearer {key}"}
    assert httpx.get(f"{base}/v1/knowledge-bases", headers=h, timeout=120).status_code == 200
    listed = json.loads(_cli(data, "api-key", "list", "--json").stdout)
    mine = [k for k in listed if k["user"] == "dave"]
    assert mine and mine[0]["label"] == "slack bot" and "key" not in mine[0] and key not in json.dumps(listed)
    assert _cli(data, "api-key", "revoke", key).returncode == 0
    r = httpx.get(f"{base}/v1/knowledge-bases", headers=h, timeout=120)
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
