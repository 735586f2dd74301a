"""Retention, a user's own deletions and an admin's export/erase (rag_core/privacy.py), on a
real workspace and database: rows are really gone, feedback and learnt records with them."""

from __future__ import annotations

import json
import time

import pytest

from rag_core.access import Caller, PermissionDenied
from rag_core.config import get_settings
from rag_core.errors import InputError
from rag_core.workspace import Workspace

OP = Caller.operator()
ANN = Caller.of("ann")
BOB = Caller.of("bob")
ADMIN = Caller.of("root", admin=True)


@pytest.fixture
def ws(tmp_path):
    w = Workspace(get_settings(tmp_path / "data", llm_crag=False))
    for name in ("short", "long"):
        w.create_kb(name, caller=OP)
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\nThe {name} office opens at nine o'clock.\n")
        w.ingest(name, [tmp_path / f"{name}.md"], caller=OP)
    yield w
    w.close()


def log(ws, caller, kb, days_ago=0.0, rating=None, reason=None):
    a = ws.ask([kb], f"When does the {kb} office open?", caller=caller)
    fb = ws.feedback_for(caller=caller)
    qid = fb.log_answer(a, [ws.get_kb(kb, caller=caller).kb_id])
    if rating:
        fb.rate(qid, rating, reason=reason)
    _set_ts(ws, qid, time.time() - days_ago * 86400)
    return qid


def _set_ts(ws, qid, ts):
    with ws.db.transaction() as c:
        c.execute("UPDATE queries SET ts=? WHERE query_id=?", (ts, qid))


def count(ws, table):
    return ws.db.query_one(f"SELECT COUNT(*) FROM {table}")[0]


def test_retention_deletes_old_questions_with_their_feedback_and_learnt_records(ws):
    ws.update_kb("short", caller=OP, retention_days=30)
    old = log(ws, ANN, "short", days_ago=40, rating=1)
    recent = log(ws, ANN, "short", days_ago=5, rating=1)
    kept = log(ws, ANN, "long", days_ago=400, rating=-1, reason="wrong source")  # no retention: kept
    assert count(ws, "feedback_signals") >= 3
    assert ws.purge_expired() == 1
    ids = {r[0] for r in ws.db.query("SELECT query_id FROM queries")}
    assert old not in ids and {recent, kept} <= ids
    assert ws.db.query_one("SELECT COUNT(*) FROM feedback WHERE query_id=?", (old,))[0] == 0
    assert ws.db.query_one("SELECT COUNT(*) FROM feedback_signals WHERE query_id=?", (old,))[0] == 0
    # a question over both knowledge bases goes at the shorter retention
    a = ws.ask(["short", "long"], "When does the office open?", caller=ANN)
    both = ws.feedback_for(caller=ANN).log_answer(a, [ws.get_kb(n, caller=ANN).kb_id for n in ("short", "long")])
    _set_ts(ws, both, time.time() - 31 * 86400)
    assert ws.purge_expired() == 1
    with pytest.raises(InputError):
        ws.update_kb("short", caller=OP, retention_days=-1)


def test_purge_runs_on_open(ws, tmp_path):
    ws.update_kb("short", caller=OP, retention_days=1)
    qid = log(ws, ANN, "short", days_ago=3)
    w2 = Workspace(ws.settings)  # another process opening the folder
    try:
        assert w2.db.query_one("SELECT COUNT(*) FROM queries WHERE query_id=?", (qid,))[0] == 0
    finally:
        w2.close()


def test_a_user_deletes_only_their_own_questions(ws):
    mine = log(ws, ANN, "long", rating=1)
    theirs = log(ws, BOB, "long", rating=1)
    assert ws.delete_my_questions(caller=ANN) == 1
    ids = {r[0] for r in ws.db.query("SELECT query_id FROM queries")}
    assert mine not in ids and theirs in ids
    assert ws.feedback_for(caller=ANN).frame().empty


def test_admin_exports_and_erases_a_users_data_and_others_may_not(ws):
    log(ws, ANN, "long", rating=-1, reason="wrong source")
    convs = ws.conversations(caller=ANN)
    tid = convs.create()
    convs.add(tid, "user", "When does the long office open?")
    log(ws, BOB, "long")
    data = ws.export_user_data("ann", caller=ADMIN)
    assert [q["question"] for q in data["questions"]] == ["When does the long office open?"]
    assert data["questions"][0]["rating"] == -1 and data["conversations"][0]["messages"][0]["role"] == "user"
    json.dumps(data)  # JSON-ready
    assert ws.export_user_data("ann", caller=ANN)["user"] == "ann"  # one's own: allowed
    with pytest.raises(PermissionDenied):
        ws.export_user_data("ann", caller=BOB)
    with pytest.raises(PermissionDenied):
        ws.erase_user_data("ann", caller=ANN)
    res = ws.erase_user_data("ann", caller=ADMIN)
    assert res == {"user": "ann", "questions": 1, "conversations": 1}
    assert ws.db.query_one("SELECT COUNT(*) FROM queries WHERE user='ann'")[0] == 0
    assert ws.db.query_one("SELECT COUNT(*) FROM feedback_signals WHERE user='ann'")[0] == 0
    assert ws.conversations(caller=ANN).list() == []
    assert ws.db.query_one("SELECT COUNT(*) FROM queries WHERE user='bob'")[0] == 1  # others untouched


def test_cli_privacy_commands(tmp_path):
    from tests.test_cli import run

    data = tmp_path / "data"
    run(data, "kb", "create", "kb")
    out = json.loads(run(data, "kb", "update", "kb", "--retention-days", "7", "--json").stdout)
    assert out["retention_days"] == 7
    out = json.loads(run(data, "kb", "update", "kb", "--query-log", "anonymous", "--json").stdout)
    assert out["query_log"] == "anonymous"
    assert json.loads(run(data, "privacy", "purge", "--json").stdout) == {"deleted_questions": 0}
    res = run(data, "privacy", "erase", "--of", "ann", "--user", "bob", ok=False)
    assert res.returncode != 0 and "admin" in res.stderr
    run(data, "privacy", "export", "--of", "ann", "--out", str(tmp_path / "ann.json"))
    assert json.loads((tmp_path / "ann.json").read_text())["questions"] == []


# ---- the query log's level (RAG_QUERY_LOG and a knowledge base's query_log) ------------------
def test_the_strictest_level_wins_and_a_knowledge_base_cannot_ask_for_more():
    from rag_core.privacy import log_level

    assert log_level("full", []) == "full"
    assert log_level("full", ["", "anonymous"]) == "anonymous"
    assert log_level("anonymous", ["full"]) == "anonymous"  # the deployment's is the most kept
    assert log_level("full", ["anonymous", "off"]) == "off"
    with pytest.raises(ValueError):
        log_level("everything", [])


def test_anonymous_questions_are_logged_without_who_asked_and_can_still_be_rated(ws):
    ws.update_kb("short", caller=OP, query_log="anonymous")
    qid = log(ws, ANN, "short", rating=1)
    row = ws.db.query_one("SELECT user, question, thread_id FROM queries WHERE query_id=?", (qid,))
    assert row["user"] == "" and row["thread_id"] is None and "short office" in row["question"]
    assert ws.feedback_for(caller=ANN).rating_of(qid)[0] == 1
    # nobody's "my questions": not Ann's, and her erasure cannot find it either
    assert qid not in set(ws.feedback_for(caller=ANN).frame()["query_id"])
    assert ws.erase_user_data("ann", caller=ADMIN)["questions"] == 0
    # the other knowledge base still logs in full
    full = log(ws, ANN, "long")
    assert ws.db.query_one("SELECT user FROM queries WHERE query_id=?", (full,))["user"] == "ann"


def test_with_the_log_off_nothing_the_person_asked_is_written(ws):
    ws.update_kb("short", caller=OP, query_log="off")
    before = count(ws, "queries")
    a = ws.ask(["short"], "When does the short office open?", caller=ANN)
    assert not a.abstained
    assert ws.feedback_for(caller=ANN).log_answer(a, [ws.get_kb("short", caller=ANN).kb_id]) is None
    assert count(ws, "queries") == before
    # nor is the answer kept in the answer cache
    req = ws.answer_request(["short"], "When does the short office open?", caller=ANN)
    assert req.cache_key is None
    assert ws.answer_request(["long"], "When does the long office open?", caller=ANN).cache_key is not None
    # a question over both knowledge bases is as private as the stricter one
    both = ws.ask(["short", "long"], "When do the offices open?", caller=ANN)
    ids = [ws.get_kb(n, caller=ANN).kb_id for n in ("short", "long")]
    assert ws.feedback_for(caller=ANN).log_answer(both, ids) is None


def test_the_deployment_switch_turns_the_log_off_everywhere(tmp_path):
    w = Workspace(get_settings(tmp_path / "data", llm_crag=False, query_log="off"))
    try:
        w.create_kb("k", caller=OP)
        (tmp_path / "a.md").write_text("# A\n\nThe office opens at nine o'clock.\n")
        w.ingest("k", [tmp_path / "a.md"], caller=OP)
        w.update_kb("k", caller=OP, query_log="full")  # asks for more than the deployment: still off
        a = w.ask(["k"], "When does the office open?", caller=ANN)
        assert w.feedback_for(caller=ANN).log_answer(a, [w.get_kb("k", caller=ANN).kb_id]) is None
        assert count(w, "queries") == 0
        assert any("not logged" in n for n in w.query_log_notice(caller=ANN))
    finally:
        w.close()


def test_the_analytics_notice_names_only_knowledge_bases_the_caller_sees(ws):
    ws.create_kb("secret", caller=BOB, acl_users=["bob"])
    ws.update_kb("secret", caller=BOB, query_log="off")
    ws.update_kb("short", caller=OP, query_log="anonymous")
    ann, bob = " ".join(ws.query_log_notice(caller=ANN)), " ".join(ws.query_log_notice(caller=BOB))
    assert "secret" not in ann and "short" in ann
    assert "secret" in bob
    with pytest.raises(InputError):
        ws.update_kb("short", caller=OP, query_log="everything")


def test_the_query_log_has_a_retention_of_its_own(tmp_path):
    w = Workspace(get_settings(tmp_path / "data", llm_crag=False, query_log_retention_days=7))
    try:
        w.create_kb("k", caller=OP)
        (tmp_path / "k.md").write_text("# k\n\nThe k office opens at nine o'clock.\n")
        w.ingest("k", [tmp_path / "k.md"], caller=OP)
        old, recent = log(w, ANN, "k", days_ago=8), log(w, ANN, "k", days_ago=6)
        assert w.purge_expired() == 1
        ids = {r[0] for r in w.db.query("SELECT query_id FROM queries")}
        assert old not in ids and recent in ids
        assert count(w, "documents") == 1  # the documents are not the log's to purge
    finally:
        w.close()
