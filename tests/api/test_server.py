"""The API end to end on a real uvicorn server (`python -m rag_core serve`): every capability
through HTTP, answered by the same chain as the app."""

from __future__ import annotations

import json
import time

import httpx

from tests.helpers import make_pdf


def sse_events(response: httpx.Response) -> list[tuple[str, dict, float]]:
    """(event, data, arrival time) for each server-sent event."""
    out, event = [], None
    for line in response.iter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            out.append((event, json.loads(line[6:]), time.perf_counter()))
    return out


def test_health_needs_no_credentials_and_docs_are_served(api):
    base, _, _ = api
    assert httpx.get(f"{base}/v1/health", timeout=120).json() == {"status": "ok"}
    ready = httpx.get(f"{base}/v1/ready", timeout=120).json()
    assert ready["status"] == "ready" and ready["chunks"] >= 3
    schema = httpx.get(f"{base}/openapi.json", timeout=120).json()
    assert "/v1/query" in schema["paths"] and "/v1/chat/completions" in schema["paths"]
    assert httpx.get(f"{base}/docs", timeout=120).status_code == 200


def test_query_answers_with_citations_scores_and_a_query_id(client):
    r = client("alice").post("/v1/query", json={"question": "How many vacation days do staff get?",
                                                "knowledge_bases": ["handbook"]})
    assert r.status_code == 200, r.text
    a = r.json()
    assert not a["abstained"] and "25" in a["answer"]
    c = a["citations"][0]
    assert c["source"] == "handbook.md" and c["page"] == 1 and c["chunk_id"] and "25 vacation days" in c["snippet"]
    assert 0.5 <= a["grounding_score"] <= 1 and 0 < a["answers_question"] <= 1 and 0 < a["confidence"] <= 1
    assert a["query_id"] and a["timings_ms"]["total"] > 0 and a["mode"] == "extractive"
    assert a["decided_by"] == "reader" and a["policy"] and a["signals"]["evidence"] > 0


def test_query_route_override_cache_and_no_cache(client):
    body = {"question": "Summarize handbook.md", "knowledge_bases": ["handbook"]}
    a = client("alice").post("/v1/query", json=body).json()
    assert a["route"] == "document" and a["decided_by"] == "document" and a["plan"]["by"] == "rules"
    assert a["plan"]["documents"][0]["source"] == "handbook.md" and a["answers_question"] is None
    assert {c["source"] for c in a["citations"]} == {"handbook.md"}
    again = client("bob").post("/v1/query", json=body).json()  # bob sees the same documents: served from the cache
    assert again["cached"] and again["cached_at"] and again["answer"] == a["answer"]
    fresh = client("bob").post("/v1/query", json={**body, "no_cache": True}).json()
    assert not fresh["cached"]
    s = client("alice").post("/v1/query", json={**body, "route": "search"}).json()
    assert s["route"] == "search" and s["plan"]["by"] == "user"
    bad = client("alice").post("/v1/query", json={**body, "route": "everything"})
    assert bad.status_code == 422


def test_the_answer_policy_in_force_is_readable_with_a_read_key(client):
    r = client("alice_read").get("/v1/answer-policy")
    assert r.status_code == 200, r.text
    p = r.json()
    assert p["mode"] == "extractive" and p["name"] in ("conservative", "calibrated") and p["summary"]
    assert p["offline_min"] > 0 and p["setting"] == "auto"
    assert client("alice_read").get("/v1/answer-policy", params={"knowledge_bases": "handbook"}).status_code == 200
    # a knowledge base the caller may not see reads like a missing one
    hidden = client("bob").get("/v1/answer-policy", params={"knowledge_bases": "alice-private"})
    missing = client("bob").get("/v1/answer-policy", params={"knowledge_bases": "nope"})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["error"]["message"].replace("alice-private", "X") == missing.json()["error"]["message"].replace("nope", "X")
    assert client(None).get("/v1/answer-policy").status_code == 401


def test_a_question_the_documents_do_not_answer_abstains_with_closest_passages(client):
    a = client("alice").post("/v1/query", json={"question": "Which airline do staff fly with to Tokyo?",
                                                "knowledge_bases": ["handbook"]}).json()
    assert a["abstained"] and a["reason"] and a["citations"] == [], a
    assert a["decided_by"] == "reader" and "0." not in a["reason"] and a["signals"]["detail"]  # plain words; figures apart
    assert a["closest"] and all(p["source"].endswith(".md") and p["chunk_id"] and p["page"] == 1 for p in a["closest"])


def test_streamed_query_sends_tokens_then_the_verified_answer(client):
    with client("alice").stream("POST", "/v1/query", json={
            "question": "When does the office open?", "knowledge_bases": ["handbook"], "stream": True}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r)
    kinds = [e for e, _, _ in events]
    assert "token" in kinds and kinds[-1] == "answer"
    assert kinds.index("token") < kinds.index("answer")
    final = events[-1][1]
    assert "8 o'clock" in final["answer"] and final["citations"] and final["query_id"]


def test_search_returns_ranked_passages_of_visible_knowledge_bases(client):
    r = client("alice").post("/v1/search", json={"query": "train tickets", "knowledge_bases": ["handbook"],
                                                 "top_k": 2})
    res = r.json()["results"]
    assert 1 <= len(res) <= 2 and "travel desk" in res[0]["text"]
    assert res[0]["score"] >= res[-1]["score"]


def test_feedback_on_an_answer_shows_in_the_log(client, api):
    from rag_core.feedback import FeedbackLog
    from rag_core.db import Database

    alice = client("alice")
    qid = alice.post("/v1/query", json={"question": "When does the office open?",
                                        "knowledge_bases": ["handbook"]}).json()["query_id"]
    r = alice.post("/v1/feedback", json={"query_id": qid, "rating": -1, "reason": "incomplete",
                                         "comment": "which days?"})
    assert r.status_code == 200 and r.json()["rating"] == -1
    from rag_core.config import get_settings

    db = Database(get_settings(api[2]).db_path)
    try:
        df = FeedbackLog(db).frame()
        row = df[df["query_id"] == qid].iloc[0]
        assert row["rating"] == -1 and row["reason"] == "incomplete" and row["user"] == "alice"
    finally:
        db.close()
    # Bob cannot rate Alice's answer: it reads as missing.
    assert client("bob").post("/v1/feedback", json={"query_id": qid, "rating": 1}).status_code == 404


def test_threads_keep_the_conversation_and_export_it(client):
    alice = client("alice")
    tid = alice.post("/v1/threads", json={"title": "Office"}).json()["thread_id"]
    a1 = alice.post("/v1/query", json={"question": "When does the office open?", "knowledge_bases": ["handbook"],
                                       "thread_id": tid}).json()
    assert a1["thread_id"] == tid and not a1["abstained"]
    t = alice.get(f"/v1/threads/{tid}").json()
    assert [m["role"] for m in t["messages"]] == ["user", "assistant"]
    assert t["messages"][1]["answer"]["query_id"] == a1["query_id"]
    assert alice.patch(f"/v1/threads/{tid}", json={"title": "Opening hours"}).json()["title"] == "Opening hours"
    md = alice.get(f"/v1/threads/{tid}/export")
    assert md.headers["content-type"].startswith("text/markdown") and "8 o'clock" in md.text
    assert tid in [x["thread_id"] for x in alice.get("/v1/threads").json()["data"]]
    assert client("bob").get(f"/v1/threads/{tid}").status_code == 404  # another user's thread
    assert alice.delete(f"/v1/threads/{tid}").status_code == 204
    assert alice.get(f"/v1/threads/{tid}").status_code == 404


def test_knowledge_base_lifecycle_upload_job_download_delete(client, tmp_path):
    alice = client("alice")
    r = alice.post("/v1/knowledge-bases", json={"name": "api-docs", "description": "made over HTTP",
                                                "grounded_only": True, "retrieval": {"top_k": 4}})
    assert r.status_code == 201, r.text
    kb = r.json()
    assert kb["owners"] == ["alice"] and kb["grounded_only"] and kb["retrieval"]["top_k"] == 4
    r = alice.patch("/v1/knowledge-bases/api-docs", json={"instructions": "Answer briefly.",
                                                          "retrieval": {"alpha": 0.3}})
    assert r.json()["instructions"] == "Answer briefly." and r.json()["retrieval"] == {**kb["retrieval"], "alpha": 0.3}

    pdf = make_pdf(["Saturn has a hexagon-shaped storm at its north pole.", "Page two says nothing else."])
    files = [("files", ("saturn.pdf", pdf, "application/pdf")),
             ("files", ("broken.pdf", b"%PDF-1.4 this is not really a pdf", "application/pdf"))]
    r = alice.post("/v1/knowledge-bases/api-docs/documents", files=files)
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    deadline = time.time() + 180
    while (job := alice.get(f"/v1/jobs/{job_id}").json())["status"] in ("queued", "running"):
        assert time.time() < deadline, job
        time.sleep(0.5)
    assert job["status"] == "done", job
    by_file = {x["file"]: x for x in job["reports"]}
    assert by_file["saturn.pdf"]["status"] == "ingested" and by_file["saturn.pdf"]["pages"] == 2
    assert by_file["broken.pdf"]["status"] == "failed" and by_file["broken.pdf"]["reason"]

    docs = alice.get("/v1/knowledge-bases/api-docs/documents").json()["data"]
    assert [d["source"] for d in docs] == ["saturn.pdf"]
    doc_id = docs[0]["doc_id"]
    orig = alice.get(f"/v1/knowledge-bases/api-docs/documents/{doc_id}/original")
    assert orig.content == pdf and "saturn.pdf" in orig.headers["content-disposition"]

    a = alice.post("/v1/query", json={"question": "What shape is the storm at Saturn's north pole?",
                                      "knowledge_bases": ["api-docs"]}).json()
    assert not a["abstained"] and a["citations"][0]["doc_id"] == doc_id

    assert alice.delete(f"/v1/knowledge-bases/api-docs/documents/{doc_id}").status_code == 204
    hits = alice.post("/v1/search", json={"query": "Saturn hexagon storm", "knowledge_bases": ["api-docs"]}).json()
    assert hits["results"] == []  # a deleted document is never retrieved again
    assert alice.delete(f"/v1/knowledge-bases/api-docs/documents/{doc_id}").status_code == 404
    assert alice.delete("/v1/knowledge-bases/api-docs").status_code == 204
    assert alice.get("/v1/knowledge-bases/api-docs").status_code == 404


def test_metrics_count_requests_stages_and_abstentions_for_admins(client):
    client("alice").post("/v1/query", json={"question": "When does the office open?", "knowledge_bases": ["handbook"]})
    assert client(None).get("/v1/knowledge-bases").status_code == 401
    assert client("alice").get("/v1/metrics").status_code == 403  # not an admin key
    text = client("admin").get("/v1/metrics").text
    assert 'groundwork_http_requests_total{method="POST",route="/v1/query",status="200"}' in text
    assert 'groundwork_answers_total{mode="extractive",outcome="answered"}' in text
    assert 'groundwork_answer_stage_seconds_count{stage="retrieve"}' in text
    assert 'groundwork_http_requests_total{method="GET",route="(refused)",status="401"}' in text


def test_cors_is_off_unless_origins_are_configured(api, client):
    base = api[0]
    pre = httpx.options(f"{base}/v1/query", headers={"Origin": "https://evil.example",
                                                     "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in pre.headers
    r = client("alice").get("/v1/knowledge-bases", headers={"Origin": "https://evil.example"})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_cors_allows_only_the_configured_origin(tmp_path):
    from tests.api.conftest import api_server, build_data

    data = build_data(tmp_path)
    with api_server(data, env={"RAG_API_CORS_ORIGINS": "https://portal.example"}) as base:
        ok = httpx.options(f"{base}/v1/query", headers={"Origin": "https://portal.example",
                                                        "Access-Control-Request-Method": "POST",
                                                        "Access-Control-Request-Headers": "authorization,content-type"})
        assert ok.headers.get("access-control-allow-origin") == "https://portal.example"
        bad = httpx.options(f"{base}/v1/query", headers={"Origin": "https://evil.example",
                                                         "Access-Control-Request-Method": "POST"})
        assert bad.headers.get("access-control-allow-origin") != "https://evil.example"


def test_a_knowledge_base_with_its_query_log_off_records_nothing_over_http(client):
    alice = client("alice")
    body = {"question": "What is the launch code of project Papaya?", "knowledge_bases": ["alice-private"]}
    r = alice.patch("/v1/knowledge-bases/alice-private", json={"query_log": "off"})
    assert r.status_code == 200 and r.json()["query_log"] == "off"
    try:
        a = alice.post("/v1/query", json=body).json()
        assert "4471" in a["answer"] and a["query_id"] is None  # answered, not recorded
        again = alice.post("/v1/query", json=body).json()
        assert not again["cached"]  # nor kept in the answer cache
        r = alice.patch("/v1/knowledge-bases/alice-private", json={"query_log": "anonymous"})
        anon = alice.post("/v1/query", json=body).json()
        assert anon["query_id"]
        assert alice.post("/v1/feedback", json={"query_id": anon["query_id"], "rating": 1}).status_code == 200
        bad = alice.patch("/v1/knowledge-bases/alice-private", json={"query_log": "everything"})
        assert bad.status_code == 422
    finally:
        assert alice.patch("/v1/knowledge-bases/alice-private", json={"query_log": ""}).json()["query_log"] == "default"


def test_per_request_options_and_the_answers_metadata_over_http(client):
    alice = client("alice")
    body = {"question": "How many vacation days do staff get?", "knowledge_bases": ["handbook", "alice-private"],
            "no_cache": True}
    a = alice.post("/v1/query", json=body).json()
    assert a["models"]["embedding"] and a["models"]["reader"] and a["usage"] == {}  # offline: no model tokens
    assert a["sources"] and all({"chunk_id", "doc_id", "kb_id", "score", "cited"} <= set(s) for s in a["sources"])
    assert any(s["cited"] for s in a["sources"]) and a["timings_ms"]["total"] > 0
    one = alice.post("/v1/query", json={**body, "top_k": 1}).json()
    assert len(one["sources"]) == 1
    weighted = alice.post("/v1/query", json={**body, "kb_weights": {"handbook": 0}}).json()
    assert {s["source"] for s in weighted["sources"]} <= {"papaya.md"}
    grounded = alice.post("/v1/query", json={**body, "grounded_only": True}).json()
    assert "25" in grounded["answer"]
    for bad in ({"top_k": 0}, {"temperature": 3}, {"max_tokens": 0}, {"kb_weights": {"handbook": -1}}):
        r = alice.post("/v1/query", json={**body, **bad})
        assert r.status_code in (400, 422), (bad, r.status_code)
    # a weight on a knowledge base the caller cannot see reads like one that does not exist
    hidden = alice.post("/v1/query", json={**body, "kb_weights": {"acme-secrets": 2}})
    missing = alice.post("/v1/query", json={**body, "kb_weights": {"no-such-kb": 2}})
    assert hidden.status_code == missing.status_code == 400
    assert hidden.text.replace("acme-secrets", "X") == missing.text.replace("no-such-kb", "X")


def test_the_query_history_is_the_callers_own(client):
    alice, bob = client("alice"), client("bob")
    q = "When does the office open?"
    mine = alice.post("/v1/query", json={"question": q, "knowledge_bases": ["handbook"], "no_cache": True}).json()
    alice.post("/v1/feedback", json={"query_id": mine["query_id"], "rating": 1})
    page = alice.get("/v1/queries", params={"limit": 200}).json()
    ids = [x["query_id"] for x in page["queries"]]
    assert mine["query_id"] in ids and page["total"] >= len(ids)
    row = page["queries"][ids.index(mine["query_id"])]
    assert row["question"] == q and row["rating"] == 1 and row["knowledge_bases"] == ["handbook"]
    times = [x["time"] for x in page["queries"]]
    assert times == sorted(times, reverse=True)  # newest first
    assert mine["query_id"] not in [x["query_id"] for x in bob.get("/v1/queries").json()["queries"]]
    assert mine["query_id"] not in [x["query_id"] for x in client("admin").get("/v1/queries").json()["queries"]]
    assert alice.get("/v1/queries", params={"limit": 1}).json()["queries"][0]["query_id"] == ids[0]
    assert alice.get("/v1/queries", params={"limit": 500}).status_code in (400, 422)


def test_chat_completions_take_temperature_and_max_tokens(client):
    r = client("alice").post("/v1/chat/completions", json={
        "model": "groundwork/handbook", "temperature": 0.2, "max_tokens": 50,
        "messages": [{"role": "user", "content": "When does the office open?"}]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["usage"]["total_tokens"] > 0 and body["groundwork"]["sources"]


def test_alert_rules_over_http_fire_a_webhook_and_are_for_admins(client):
    from tests.test_alerts import Receiver

    hook = Receiver()
    admin = client("admin")
    try:
        assert client("alice").get("/v1/alerts").status_code == 403
        assert client("alice").post("/v1/alerts", json={"metric": "error_rate", "threshold": 0.1}).status_code == 403
        r = admin.post("/v1/alerts", json={"metric": "p95_latency_ms", "threshold": 0.001, "window_minutes": 60,
                                           "min_answers": 1, "webhook": hook.url})
        assert r.status_code == 201, r.text
        rule_id = r.json()["rule_id"]
        client("alice").post("/v1/query", json={"question": "When does the office open?", "knowledge_bases": ["handbook"],
                                                "no_cache": True})
        events = admin.post("/v1/alerts/check").json()["events"]
        listed = admin.get("/v1/alerts").json()
        rule = next(x for x in listed["rules"] if x["rule_id"] == rule_id)
        assert rule["firing"] or any(e["rule_id"] == rule_id and e["state"] == "firing" for e in events)
        assert any(g["rule_id"] == rule_id and g["state"] == "firing" for g in hook.wait(1))
        assert admin.post("/v1/alerts", json={"metric": "error_rate", "threshold": 5}).status_code == 400
    finally:
        admin.delete(f"/v1/alerts/{rule_id}")
        hook.httpd.shutdown()
