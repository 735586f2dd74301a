"""Bad input over HTTP: a clear JSON error with a stable code and a 4xx status, the server keeps
serving, and nothing is half-made (no document, no job)."""

from __future__ import annotations

import httpx
import pytest

QUERY = "/v1/query"


@pytest.mark.parametrize("body,status,code", [
    (b"{not json", 400, "invalid_json"),
    (b'{"question": 42, "knowledge_bases": "handbook"}', 422, "invalid_request"),  # wrong types
    (b'{"question": "hi", "knowledge_bases": ["handbook"], "knowledge_base": "x"}', 422, "invalid_request"),
    (b'{"knowledge_bases": ["handbook"]}', 422, "invalid_request"),  # missing question
    (b'{"question": "", "knowledge_bases": ["handbook"]}', 422, "invalid_request"),
    (b'{"question": "hi", "knowledge_bases": []}', 422, "invalid_request"),
    (b'[1, 2, 3]', 422, "invalid_request"),
])
def test_malformed_bodies_get_a_json_error(client, body, status, code):
    r = client("alice").post(QUERY, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and err["message"]


def test_unknown_fields_are_named(client):
    r = client("alice").post(QUERY, json={"question": "hi", "knowledge_bases": ["handbook"], "knowledge_base": "x"})
    assert "knowledge_base" in r.json()["error"]["message"]


def test_an_unknown_knowledge_base_is_404(client):
    r = client("alice").post(QUERY, json={"question": "hi", "knowledge_bases": ["nope"]})
    assert r.status_code == 404 and "nope" in r.json()["error"]["message"]


def test_a_huge_question_is_refused_by_size_or_by_length(client):
    alice = client("alice")
    r = alice.post(QUERY, json={"question": "why " * 2500, "knowledge_bases": ["handbook"]})  # 10k characters
    assert r.status_code == 400 and "too long" in r.json()["error"]["message"]
    # the documented limit (RAG_API_MAX_QUESTION_CHARS, 4,000) and one above
    at = "How long is parental leave? " + "x" * (4000 - 28)
    assert len(at) == 4000
    assert alice.post(QUERY, json={"question": at, "knowledge_bases": ["handbook"]}).status_code == 200
    r = alice.post(QUERY, json={"question": at + "x", "knowledge_bases": ["handbook"]})
    assert r.status_code == 400 and "the limit is 4000" in r.json()["error"]["message"]
    r = alice.post(QUERY, json={"question": "x" * 200_000, "knowledge_bases": ["handbook"]})  # over the body limit
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"


def test_a_chunked_body_over_the_limit_is_refused_too(client):
    def body():  # no Content-Length: the gate counts as it reads
        yield b'{"question": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'", "knowledge_bases": ["handbook"]}'

    r = client("alice").post(QUERY, content=body(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"


def _docs(c) -> list[str]:
    return [d["source"] for d in c.get("/v1/knowledge-bases/handbook/documents").json()["data"]]


def _jobs(data) -> int:
    from rag_core.config import get_settings
    from rag_core.db import Database

    db = Database(get_settings(data).db_path)
    try:
        if not db.query_one("SELECT 1 FROM sqlite_master WHERE name='ingest_jobs'"):
            return 0  # no upload has ever been queued in this folder
        return db.query_one("SELECT COUNT(*) FROM ingest_jobs")[0]
    finally:
        db.close()


@pytest.mark.parametrize("files,status,code,names", [
    ([("empty.md", b"")], 400, "bad_file", ["empty.md"]),
    ([("good.md", b"# Good\n\nfine\n"), ("empty.txt", b"")], 400, "bad_file", ["empty.txt"]),
    ([("big.txt", b"word " * 250_000)], 413, "too_large", ["big.txt"]),  # 1.2 MB > RAG_MAX_FILE_MB=1
])
def test_bad_uploads_are_refused_whole_and_nothing_is_stored(client, api, files, status, code, names):
    alice = client("alice")
    docs, jobs = _docs(alice), _jobs(api[2])
    r = alice.post("/v1/knowledge-bases/handbook/documents",
                   files=[("files", (n, data, "application/octet-stream")) for n, data in files])
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and all(n in err["message"] for n in names)
    assert _docs(alice) == docs and _jobs(api[2]) == jobs


def test_an_upload_over_the_request_limit_is_413(client, api):
    alice = client("alice")
    jobs = _jobs(api[2])
    files = [("files", (f"part{i}.txt", b"word " * 200_000, "text/plain")) for i in range(4)]  # 4 MB > 3 MB
    r = alice.post("/v1/knowledge-bases/handbook/documents", files=files)
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"
    assert _jobs(api[2]) == jobs


def test_an_upload_without_files_is_422(client):
    r = client("alice").post("/v1/knowledge-bases/handbook/documents", data={"x": "1"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"


def test_unknown_endpoint_and_wrong_method_are_json(client):
    alice = client("alice")
    r = alice.get("/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = alice.put("/v1/query", json={})
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


def test_document_dates_filter_query_and_search_and_owners_edit_them(client):
    alice = client("alice")
    docs = alice.get("/v1/knowledge-bases/handbook/documents").json()["data"]
    doc = next(d for d in docs if d["source"] == "handbook.md")
    assert doc["date"] and doc["date_source"] == "upload"
    r = alice.post(QUERY, json={"question": "hi", "knowledge_bases": ["handbook"], "after": "next week"})
    assert r.status_code == 400 and "YYYY-MM-DD" in r.json()["error"]["message"]
    url = f"/v1/knowledge-bases/handbook/documents/{doc['doc_id']}"
    assert client("alice_read").patch(url, json={"date": "2020-05-01"}).status_code == 403  # read scope
    assert client("bob").patch(url, json={"date": "2020-05-01"}).status_code == 403  # a reader, not an owner
    private = alice.get("/v1/knowledge-bases/alice-private/documents").json()["data"][0]["doc_id"]
    r = client("bob").patch(f"/v1/knowledge-bases/alice-private/documents/{private}", json={"date": "2020-05-01"})
    assert r.status_code == 404  # hidden reads like missing
    r = alice.patch(url, json={"date": "2020-05-01"})
    assert r.status_code == 200 and r.json()["date"] == "2020-05-01" and r.json()["date_source"] == "set"
    q = {"question": "How many vacation days do staff get?", "knowledge_bases": ["handbook"]}
    a = alice.post(QUERY, json={**q, "before": "2020-12-31"}).json()
    assert not a["abstained"] and a["citations"][0]["date"] == "2020-05-01"
    # other tests may upload into this knowledge base (today's date): the handbook itself is out
    a = alice.post(QUERY, json={**q, "after": "2021-01-01"}).json()
    assert all(c["doc_id"] != doc["doc_id"] and c["date"] >= "2021-01-01" for c in a["citations"])
    s = alice.post("/v1/search", json={"query": "vacation days", "knowledge_bases": ["handbook"],
                                       "after": "2021-01-01"}).json()
    assert all(x["doc_id"] != doc["doc_id"] and x["date"] >= "2021-01-01" for x in s["results"])
    s = alice.post("/v1/search", json={"query": "vacation days", "knowledge_bases": ["handbook"],
                                       "before": "2020-05-01"}).json()
    assert s["results"] and s["results"][0]["date"] == "2020-05-01"


def test_a_documents_language_is_listed_and_owners_correct_it(client):
    alice = client("alice")
    docs = alice.get("/v1/knowledge-bases/handbook/documents").json()["data"]
    doc = next(d for d in docs if d["source"] == "handbook.md")
    assert (doc["language"], doc["language_source"]) == ("en", "detected")
    url = f"/v1/knowledge-bases/handbook/documents/{doc['doc_id']}"
    assert client("bob").patch(url, json={"language": "de"}).status_code == 403  # a reader, not an owner
    r = alice.patch(url, json={"language": "english"})
    assert r.status_code == 400 and "ISO 639-1" in r.json()["error"]["message"]
    assert alice.patch(url, json={}).status_code == 422
    r = alice.patch(url, json={"language": "de"})
    assert r.status_code == 200 and (r.json()["language"], r.json()["language_source"]) == ("de", "set")
    r = alice.patch(url, json={"language": "en"})  # back, for the other tests of this module
    assert r.json()["language"] == "en"
    a = alice.post(QUERY, json={"question": "Wie viele Urlaubstage habe ich?", "knowledge_bases": ["handbook"]}).json()
    assert a["language"] == "de"


def test_the_server_keeps_serving_after_all_that(api):
    base = api[0]
    assert httpx.get(f"{base}/v1/health", timeout=120).status_code == 200
    assert httpx.get(f"{base}/v1/ready", timeout=120).json()["status"] == "ready"
