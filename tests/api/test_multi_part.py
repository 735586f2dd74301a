"""A two-part question over HTTP (issue 53, part 1), against a real API server: /v1/query answers
both parts with their own citations and lists the parts; a part the handbook does not answer is
named, also in /v1/chat/completions."""

from __future__ import annotations


def test_both_parts_are_answered_and_listed(client):
    r = client("alice").post("/v1/query", json={
        "question": "When does the office open and how many vacation days do staff get?",
        "knowledge_bases": ["handbook"], "no_cache": True})
    assert r.status_code == 200, r.text
    a = r.json()
    assert not a["abstained"] and "8 o'clock" in a["answer"] and "25" in a["answer"]
    assert [p["abstained"] for p in a["signals"]["parts"]] == [False, False]
    assert {c["n"] for c in a["citations"]} == {int(n) for n in __import__("re").findall(r"\[(\d+)\]", a["answer"])}


def test_a_missing_part_is_named_in_the_chat_completion(client):
    r = client("alice").post("/v1/chat/completions", json={"model": "handbook", "messages": [
        {"role": "user", "content": "When does the office open and who pays for the parking garage?"}]})
    assert r.status_code == 200, r.text
    content = r.json()["choices"][0]["message"]["content"]
    assert "8 o'clock" in content
    assert "The documents do not answer this part: “Who pays for the parking garage?”" in content
