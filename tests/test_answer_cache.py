"""The answer cache (rag_core/answer_cache.py) through the real workspace: a repeated question is
served from it while nothing it depends on changes, and never to someone who may not see one
of its sources."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from rag_core.access import Caller, PermissionDenied
from rag_core.answer_cache import normalise_question
from rag_core.config import get_settings
from rag_core.errors import NotFound
from rag_core.models import RetrievalSettings
from rag_core.workspace import Workspace

OP = Caller.operator()
ALICE = Caller(user="alice", groups=frozenset({"crew"}))
BOB = Caller(user="bob", groups=frozenset())
Q = "When does the night ferry leave?"


@pytest.fixture()
def ws(tmp_path):
    (tmp_path / "ferry.md").write_text("# Ferries\n\nThe night ferry leaves the harbour at 23:40 every day. "
                                       "Tickets are sold on board.\n")
    (tmp_path / "bus.md").write_text("# Buses\n\nThe airport bus runs every twenty minutes from the station.\n")
    w = Workspace(get_settings(tmp_path / "data"))
    w.create_kb("travel", caller=OP)
    w.ingest("travel", [tmp_path / "ferry.md"], caller=OP)
    yield w
    w.close()


def test_a_repeated_question_is_served_from_the_cache_marked_with_its_first_time(ws):
    first = ws.ask(["travel"], Q, caller=OP)
    assert not first.cached and not first.abstained and "23:40" in first.text
    t = time.perf_counter()
    again = ws.ask(["travel"], "  when does the NIGHT ferry leave ", caller=OP)  # the same question, normalised
    took = time.perf_counter() - t
    assert again.cached and again.cached_at and again.text == first.text
    assert again.citations == first.citations and again.grounding_score == first.grounding_score
    assert again.timings_ms["first_total"] == first.timings_ms["total"] and again.timings_ms["cache"] < 50
    assert took < first.timings_ms["total"] / 1000
    assert normalise_question("What is R?") == normalise_question("what is r")
    assert normalise_question("What is R?") != normalise_question("What is S?")


@pytest.mark.parametrize("change", ["ingest", "delete", "date", "setting", "instructions", "language"])
def test_any_change_to_the_knowledge_base_misses_the_cache(ws, tmp_path, change):
    ws.ask(["travel"], Q, caller=OP)
    assert ws.ask(["travel"], Q, caller=OP).cached
    doc = ws.list_documents("travel", caller=OP)[0]
    if change == "ingest":
        ws.ingest("travel", [tmp_path / "bus.md"], caller=OP)
    elif change == "delete":
        # the key is the content's state: once bus.md is gone, no answer computed while it was
        # there (and so possibly citing it) can be served again
        ws.ingest("travel", [tmp_path / "bus.md"], caller=OP)
        bus_q = "How often does the airport bus run?"
        cites = ws.ask(["travel"], bus_q, caller=OP)
        assert {c.source for c in cites.citations} == {"bus.md"} and ws.ask(["travel"], bus_q, caller=OP).cached
        bus = [d for d in ws.list_documents("travel", caller=OP) if d.source == "bus.md"][0]
        ws.delete_document("travel", bus.doc_id, caller=OP)
        after = ws.ask(["travel"], bus_q, caller=OP)
        assert not after.cached and "bus.md" not in {c.source for c in after.citations}
        return
    elif change == "date":
        ws.set_document_date("travel", doc.doc_id, "2020-01-02", caller=OP)
    elif change == "setting":
        ws.update_kb("travel", caller=OP, retrieval=RetrievalSettings(top_k=3))
    elif change == "instructions":
        ws.update_kb("travel", caller=OP, instructions="Answer briefly.")
    elif change == "language":
        ws.set_document_language("travel", doc.doc_id, "de", caller=OP)
    assert not ws.ask(["travel"], Q, caller=OP).cached


def test_no_cache_and_the_setting_answer_afresh(ws, tmp_path):
    ws.ask(["travel"], Q, caller=OP)
    fresh = ws.ask(["travel"], Q, caller=OP, no_cache=True)
    assert not fresh.cached
    off = Workspace(get_settings(tmp_path / "data", answer_cache=False))
    try:
        assert not off.ask(["travel"], Q, caller=OP).cached
    finally:
        off.close()


def test_never_served_to_a_user_who_may_not_see_its_sources(ws, tmp_path):
    ws.update_kb("travel", caller=OP, acl_groups=["crew"])
    a = ws.ask(["travel"], Q, caller=ALICE)
    assert not a.cached and "23:40" in a.text
    assert ws.ask(["travel"], Q, caller=ALICE).cached
    with pytest.raises(NotFound):  # Bob may not see the knowledge base: it reads as missing, cache or not
        ws.ask(["travel"], Q, caller=BOB)
    # an answer over two knowledge bases is not served to one who sees only one of them: his
    # question is over different documents, so another key
    ws.create_kb("open", caller=OP)
    ws.ingest("open", [tmp_path / "bus.md"], caller=OP)
    both = ws.ask(["travel", "open"], Q, caller=OP)
    assert not both.cached and ws.ask(["travel", "open"], Q, caller=OP).cached
    with pytest.raises(NotFound):
        ws.ask(["travel", "open"], Q, caller=BOB)
    # access taken away: the entry is unreachable
    ws.update_kb("travel", caller=OP, acl_groups=["others"])
    with pytest.raises(NotFound):
        ws.ask(["travel"], Q, caller=ALICE)
    with pytest.raises(PermissionDenied):
        ws.cache_stats(caller=ALICE)
    assert ws.cache_stats(caller=OP)["hits"] >= 2


def test_learnt_feedback_misses_the_cache_of_the_questions_it_reaches_only(ws):
    a = ws.ask(["travel"], Q, caller=OP)
    log = ws.feedback_for(caller=OP)
    # a rating of another, dissimilar question cannot reorder this one's passages: still cached
    other = ws.ask(["travel"], "Where are tickets sold?", caller=OP)
    oid = log.log_answer(other, [ws.get_kb("travel", caller=OP).kb_id])
    log.rate(oid, -1, reason="wrong source")
    assert ws.signals.learn(oid, -1, "wrong source") >= 1
    assert ws.ask(["travel"], Q, caller=OP).cached
    qid = log.log_answer(a, [ws.get_kb("travel", caller=OP).kb_id])
    assert ws.ask(["travel"], Q, caller=OP).cached
    # a thumbs down saying the source was wrong teaches the ranking (retrieval/feedback_signals.py)
    log.rate(qid, -1, reason="wrong source")
    assert ws.signals.learn(qid, -1, "wrong source") >= 1
    assert not ws.ask(["travel"], Q, caller=OP).cached
    assert ws.ask(["travel"], Q, caller=OP).cached
    # taking the records back returns the question to the state it was first answered in:
    # that first answer is the one served (the key is the state, answer_cache.py)
    ws.revert_feedback(caller=OP, kb_name="travel")
    back = ws.ask(["travel"], Q, caller=OP)
    assert back.cached and back.text == a.text and back.timings_ms["first_total"] == a.timings_ms["total"]


def test_cli_ask_reports_route_and_cached_and_no_cache(ws, tmp_path):
    data = ws.settings.data_dir
    ws.close()
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"id": "a", "question": Q}) + "\n" + json.dumps({"id": "b", "question": Q}) + "\n")
    out = tmp_path / "a.jsonl"
    run = lambda *extra: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "rag_core", "--data-dir", str(data), "ask", "--kb", "travel", "--questions", str(qs),
         "--out", str(out), *extra], capture_output=True, text=True, timeout=300)
    assert run().returncode == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["cached"] for r in rows] == [False, True] and {r["route"] for r in rows} == {"search"}
    assert run("--no-cache").returncode == 0
    assert [json.loads(x)["cached"] for x in out.read_text().splitlines()] == [False, False]


def test_an_answer_rated_wrong_is_evicted_for_everyone_it_would_be_served_to(ws):
    ws.update_kb("travel", caller=OP, acl_groups=["crew"])
    a = ws.ask(["travel"], Q, caller=ALICE)
    carol = Caller(user="carol", groups=frozenset({"crew"}))
    assert ws.ask(["travel"], Q, caller=carol).cached  # same documents seen: the same entry
    log = ws.feedback_for(caller=ALICE)
    qid = log.log_answer(a, [ws.get_kb("travel", caller=OP).kb_id])
    # a thumbs down that is not about the answer being wrong keeps it cached
    log.rate(qid, -1, reason="incomplete")
    assert ws.ask(["travel"], Q, caller=carol).cached
    log.rate(qid, -1, reason="wrong")
    again = ws.ask(["travel"], Q, caller=carol)  # another user, who would have been served it
    assert not again.cached
    log.rate(qid, -1, reason="not in my documents")  # the recomputed entry goes too
    assert not ws.ask(["travel"], Q, caller=ALICE).cached


def test_the_answer_path_fingerprint_is_in_the_key(tmp_path, monkeypatch):
    from rag_core import answer_cache as AC

    pkg = tmp_path / "pkg"
    (pkg / "generation").mkdir(parents=True)
    (pkg / "generation" / "policy.py").write_text("LINE = 0.16\n")
    (pkg / "reader.json").write_text('{"a": 1}')
    before = AC.answer_path_fingerprint.__wrapped__(pkg)
    (pkg / "reader.json").write_text('{"a": 2}')  # a new reader scale
    scale = AC.answer_path_fingerprint.__wrapped__(pkg)
    (pkg / "generation" / "policy.py").write_text("LINE = 0.2\n")  # an upgrade of the code
    code = AC.answer_path_fingerprint.__wrapped__(pkg)
    assert len({before, scale, code}) == 3
    # the same parts give another key once the fingerprint differs: an upgraded install misses
    parts = {"question": "q"}
    k1 = AC.cache_key(parts)
    monkeypatch.setattr(AC, "answer_path_fingerprint", lambda: "upgraded")
    assert AC.cache_key(parts) != k1


def test_an_entry_from_before_an_upgrade_is_not_served(ws, monkeypatch):
    from rag_core import answer_cache as AC

    first = ws.ask(["travel"], Q, caller=OP)
    assert ws.ask(["travel"], Q, caller=OP).cached
    monkeypatch.setattr(AC, "answer_path_fingerprint", lambda: "the next version")
    again = ws.ask(["travel"], Q, caller=OP)
    assert not again.cached and again.text == first.text
