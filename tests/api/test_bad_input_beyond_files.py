"""Bad input beyond files (issue 51, part 4), over a real API server: deeply nested JSON,
invalid UTF-8 and lone surrogates in questions, a question at the length limit in every
supported language, a 10,000-row JSONL upload with broken lines mid-file, and two users
uploading the same file at the same moment. Each gets a clear error or a correct result, and
nothing is lost or half-made."""

from __future__ import annotations

import json
import threading

import pytest

from tests.api.conftest import wait_for_job

QUERY = "/v1/query"
LIMIT = 4000  # RAG_API_MAX_QUESTION_CHARS



@pytest.fixture
def kb(client):
    """A knowledge base of this test's own, open to everyone (alice owns it)."""
    import uuid

    name = f"beyond-{uuid.uuid4().hex[:8]}"
    assert client("alice").post("/v1/knowledge-bases", json={"name": name}).status_code == 201
    yield name
    client("alice").delete(f"/v1/knowledge-bases/{name}")


@pytest.mark.parametrize("depth", [100, 5_000])
def test_deeply_nested_json_is_a_clear_error(client, depth):
    nested = "[" * depth + "]" * depth
    body = f'{{"question": "hi", "knowledge_bases": ["handbook"], "documents": {nested}}}'.encode()
    r = client("alice").post(QUERY, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422), r.text
    err = r.json()["error"]
    assert err["code"] in ("invalid_json", "invalid_request") and err["message"]
    assert client("alice").post(QUERY, json={"question": "When does the office open?",
                                             "knowledge_bases": ["handbook"]}).status_code == 200


@pytest.mark.parametrize("body", [
    b'{"question": "Wann \xff\xfe \xc3 ffnet das B\xfcro?", "knowledge_bases": ["handbook"]}',  # not UTF-8
    b'{"question": "\xed\xa0\x80 opens?", "knowledge_bases": ["handbook"]}',  # an encoded surrogate
])
def test_a_question_that_is_not_utf8_is_a_clear_400(client, body):
    r = client("alice").post(QUERY, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "invalid_json" and "UTF-8" in err["message"]


def test_a_lone_surrogate_escape_is_refused_by_name_not_a_500(client):
    """Valid JSON, but "\\ud800" decodes to a string no UTF-8 writer (SQLite, the tokenizer,
    the log) can take."""
    body = b'{"question": "When does the office open? \\ud800", "knowledge_bases": ["handbook"]}'
    r = client("alice").post(QUERY, content=body, headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422), r.text
    assert "surrogate" in r.json()["error"]["message"]
    r = client("alice").post("/v1/search", content=body.replace(b'"question"', b'"query"'),
                             headers={"Content-Type": "application/json"})
    assert r.status_code in (400, 422), r.text


QUESTIONS = {
    "en": "When does the office open on weekdays? ",
    "de": "Wann öffnet das Büro an Werktagen? ",
    "fr": "À quelle heure ouvre le bureau en semaine ? ",
    "es": "¿A qué hora abre la oficina entre semana? ",
    "ja": "平日はオフィスは何時に開きますか？",
    "zh": "工作日办公室几点开门？",
    "ru": "Во сколько открывается офис в будни? ",
    "ar": "متى يفتح المكتب في أيام الأسبوع؟ ",
    "ko": "평일에 사무실은 몇 시에 문을 엽니까? ",
}


@pytest.mark.parametrize("lang", sorted(QUESTIONS))
def test_a_question_at_the_length_limit_is_answered_in_every_language(client, lang):
    q = (QUESTIONS[lang] * (LIMIT // len(QUESTIONS[lang]) + 1))[:LIMIT]
    assert len(q) == LIMIT
    r = client("alice").post(QUERY, json={"question": q, "knowledge_bases": ["handbook"]})
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["answer"] and (a["abstained"] or a["citations"])  # an answer with sources, or a refusal
    r = client("alice").post(QUERY, json={"question": q + q[-1], "knowledge_bases": ["handbook"]})
    assert r.status_code == 400 and f"the limit is {LIMIT}" in r.json()["error"]["message"]


def _rows(n: int, broken: dict[int, str]) -> bytes:
    lines = []
    for i in range(1, n + 1):
        lines.append(broken.get(i) or json.dumps({"_id": f"r{i}", "title": f"Record {i}",
                                                  "text": f"Record {i} says the depot code is D{i:05d}."}))
    return ("\n".join(lines) + "\n").encode()


def test_a_10000_row_jsonl_with_broken_lines_is_refused_by_line_and_the_batch_goes_on(client, kb):
    alice = client("alice")
    broken = {2500: '{"_id": "r2500", "text": "cut off', 5000: "not json at all", 7777: '["a", "list"]'}
    r = alice.post(f"/v1/knowledge-bases/{kb}/documents", files=[
        ("files", ("records.jsonl", _rows(10_000, broken), "application/jsonl")),
        ("files", ("note.md", b"# Note\n\nThe depot closes at noon on Saturdays.\n", "text/markdown"))])
    assert r.status_code == 202, r.text
    job = wait_for_job(alice, r.json()["job_id"])
    reports = {x["file"]: x for x in job["reports"]}
    bad = reports["records.jsonl"]
    assert bad["status"] == "failed"
    for line in ("2500", "5000", "7777"):  # every broken line named, so one fix does it
        assert line in bad["reason"], bad["reason"]
    assert reports["note.md"]["status"] == "ingested"
    listed = [d["source"] for d in alice.get(f"/v1/knowledge-bases/{kb}/documents").json()["data"]]
    assert listed == ["note.md"]  # nothing of the broken file, not even its good rows
    hits = alice.post("/v1/search", json={"query": "depot code D00001", "knowledge_bases": [kb],
                                          "mode": "keyword"}).json()["results"]
    assert all(h["source"] == "note.md" for h in hits)


def test_two_users_uploading_the_same_file_at_once_get_one_copy(client, kb):
    alice, bob = client("alice"), client("bob")
    assert alice.patch(f"/v1/knowledge-bases/{kb}", json={"owners": ["alice", "bob"]}).status_code == 200
    data = b"# Depot\n\nThe depot in Lyon opens at seven.\n\n## Keys\n\nKeys are kept at the front desk.\n"
    jobs, errors = {}, []
    gate = threading.Barrier(2)

    def up(who, c):
        gate.wait()
        r = c.post(f"/v1/knowledge-bases/{kb}/documents", files=[("files", ("depot.md", data, "text/markdown"))])
        if r.status_code != 202:
            errors.append(r.text)
        else:
            jobs[who] = r.json()["job_id"]

    ts = [threading.Thread(target=up, args=(w, c)) for w, c in (("alice", alice), ("bob", bob))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(jobs) == 2
    statuses = sorted(wait_for_job(c, jobs[w])["reports"][0]["status"] for w, c in (("alice", alice), ("bob", bob)))
    assert statuses == ["duplicate", "ingested"], statuses
    docs = alice.get(f"/v1/knowledge-bases/{kb}/documents").json()["data"]
    assert [d["source"] for d in docs] == ["depot.md"] and docs[0]["status"] in ("indexed", "searchable")
    hits = alice.post("/v1/search", json={"query": "depot Lyon opens", "knowledge_bases": [kb],
                                          "mode": "keyword", "top_k": 20}).json()["results"]
    assert len({h["chunk_id"] for h in hits}) == len(hits) == docs[0]["chunks"]  # one copy of each chunk


def test_two_users_uploading_the_same_file_into_their_own_knowledge_bases_each_get_it(client, kb):
    bob = client("bob")
    mine = kb + "-bob"
    assert bob.post("/v1/knowledge-bases", json={"name": mine}).status_code == 201
    try:
        data = b"# Depot\n\nThe depot in Graz opens at eight.\n"
        out = {}

        def up(c, name):
            r = c.post(f"/v1/knowledge-bases/{name}/documents", files=[("files", ("graz.md", data, "text/markdown"))])
            out[name] = wait_for_job(c, r.json()["job_id"])["reports"][0]["status"]

        ts = [threading.Thread(target=up, args=a) for a in ((client("alice"), kb), (bob, mine))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert out == {kb: "ingested", mine: "ingested"}
    finally:
        bob.delete(f"/v1/knowledge-bases/{mine}")
