"""Feedback that changes retrieval (retrieval/feedback_signals.py), on a real workspace: real
store, embedder, reranker and reader; ratings given through the same CallerFeedback the
pages and the API use."""

from __future__ import annotations

import time

import pytest

from rag_core.access import Caller, PermissionDenied
from rag_core.config import get_settings
from rag_core.retrieval import feedback_signals
from rag_core.workspace import Workspace

OP = Caller.operator()
ANN = Caller.of("ann")
BOB = Caller.of("bob")

Q = "How many days of annual leave do employees get?"


@pytest.fixture
def ws(tmp_path):
    w = Workspace(get_settings(tmp_path / "data", llm_crag=False))
    w.create_kb("hr", caller=ANN, acl_users=["ann", "bob"])
    (tmp_path / "leave.md").write_text("# Leave\n\nEmployees get 25 days of annual leave per year.\n")
    (tmp_path / "leave-faq.md").write_text("# FAQ\n\nAnnual leave days for employees are listed in the intranet.\n")
    (tmp_path / "canteen.md").write_text("# Canteen\n\nThe canteen serves lunch from noon to two.\n")
    w.ingest("hr", [tmp_path / n for n in ("leave.md", "leave-faq.md", "canteen.md")], caller=ANN)
    yield w
    w.close()


def order(ws, q=Q, caller=ANN):
    return [r.chunk.source for r in ws.search(["hr"], q, k=3, caller=caller).results]


def rate_top(ws, caller, rating, reason=None, q=Q):
    """Ask, log as the caller, and rate the answer; returns the cited sources."""
    a = ws.ask(["hr"], q, caller=caller)
    fb = ws.feedback_for(caller=caller)
    qid = fb.log_answer(a, [ws.get_kb("hr", caller=caller).kb_id])
    fb.rate(qid, rating, reason=reason)
    return qid, {c.source for c in a.citations}


def force_cite(ws, caller, source, rating, reason=None):
    """A logged answer citing `source`'s passage (a user rates what they were shown)."""
    from rag_core.grounding.citations import citation_for
    from rag_core.models import Answer, ScoredChunk

    chunk = next(c for c in ws.chunks("hr", caller=caller) if c.source == source)
    a = Answer(question=Q, text="x [1]", citations=[citation_for(1, ScoredChunk(chunk, 1.0))])
    fb = ws.feedback_for(caller=caller)
    qid = fb.log_answer(a, [chunk.kb_id])
    fb.rate(qid, rating, reason=reason)
    return qid


def test_wrong_source_demotes_for_similar_questions_and_is_bounded(ws):
    first = order(ws)[0]
    force_cite(ws, ANN, first, -1, "wrong source")
    res = ws.search(["hr"], Q, k=3, caller=ANN).results
    demoted = next(r for r in res if r.chunk.source == first)
    assert 1 - feedback_signals.BOUND <= demoted.scores["feedback"] < 1.0
    # a similar wording is affected too; an unrelated question is not
    similar = ws.search(["hr"], "How many annual leave days does an employee get?", k=3, caller=ANN).results
    assert any("feedback" in r.scores for r in similar)
    other = ws.search(["hr"], "When does the canteen serve lunch?", k=3, caller=ANN).results
    assert all("feedback" not in r.scores for r in other)
    # many votes stay within the bound
    for _ in range(5):
        force_cite(ws, BOB, first, -1, "wrong source")
    res = ws.search(["hr"], Q, k=3, caller=ANN).results
    f = next(r for r in res if r.chunk.source == first).scores["feedback"]
    assert f >= 1 - feedback_signals.BOUND - 1e-9


def test_thumbs_up_promotes_and_an_answer_only_reason_teaches_nothing(ws):
    before = order(ws)
    second = before[1]
    force_cite(ws, ANN, second, 1)
    res = ws.search(["hr"], Q, k=3, caller=ANN).results
    assert next(r for r in res if r.chunk.source == second).scores["feedback"] > 1.0
    qid = force_cite(ws, BOB, before[0], -1, "wrong")  # the answer was wrong, not the passage
    assert ws.signals.db.query_one("SELECT COUNT(*) FROM feedback_signals WHERE query_id=?", (qid,))[0] == 0


def test_rating_again_replaces_what_was_taught(ws):
    first = order(ws)[0]
    qid = force_cite(ws, ANN, first, -1, "wrong source")
    ws.feedback_for(caller=ANN).rate(qid, 1)
    res = ws.search(["hr"], Q, k=3, caller=ANN).results
    assert next(r for r in res if r.chunk.source == first).scores["feedback"] > 1.0


def test_decay_and_admin_revert(ws):
    first = order(ws)[0]
    force_cite(ws, ANN, first, -1, "wrong source")
    res = ws.search(["hr"], Q, k=3, caller=ANN).results
    f_now = next(r for r in res if r.chunk.source == first).scores["feedback"]
    assert f_now < 1.0
    # a year later (four half-lives) the record has mostly faded
    raw = ws.search(["hr"], Q, k=3, caller=ANN, rerank=False).results
    for r in raw:
        r.scores.pop("feedback", None)
    later = ws.signals.adjust(Q, raw, now=time.time() + 4 * 90 * 86400)
    f_later = next(r for r in later if r.chunk.source == first).scores["feedback"]
    assert f_now < f_later < 1.0 and (1 - f_later) < (1 - f_now) / 8
    recs = ws.feedback_signals(caller=ANN)
    assert len(recs) == 1 and recs[0].judgement == -1 and recs[0].user == "ann"
    assert ws.feedback_signals(caller=BOB) == []  # a reader does not review them
    with pytest.raises(PermissionDenied):
        ws.revert_feedback(caller=ANN, signal_id=recs[0].signal_id)
    assert ws.revert_feedback(caller=OP, signal_id=recs[0].signal_id) == 1
    res = ws.search(["hr"], Q, k=3, caller=ANN).results
    assert all("feedback" not in r.scores for r in res)
    assert not ws.feedback_signals(caller=ANN)[0].active


def test_feedback_never_crosses_knowledge_bases(ws, tmp_path):
    ws.create_kb("hr-copy", caller=BOB)
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "leave.md").write_text("# Leave\n\nEmployees get 25 days of annual leave per year.\n")
    ws.ingest("hr-copy", [tmp_path / "copy" / "leave.md"], caller=BOB)
    force_cite(ws, ANN, "leave.md", -1, "wrong source")
    res = ws.search(["hr-copy"], Q, k=3, caller=BOB).results
    assert res and all("feedback" not in r.scores for r in res)
