"""Citation coverage counts only the citations the model wrote: those the citation checker
added (or moved) are logged per claim and counted apart, and older logs that did not record
it count as "not recorded", never as cited by the model.

The model is LangChain's fake chat model: a paid LLM cannot run here (no API key, no network),
and the point is our side — which sentence the checker had to cite, and what the log and the
analytics make of it. Real workspace, real reader model, real store and query log."""

from __future__ import annotations

import json
import time

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.feedback import FeedbackLog
from rag_core.generation.chain import AnswerEngine
from rag_core.workspace import Workspace

OP = Caller.operator()


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("feedback")
    w = Workspace(get_settings(root / "data", llm_crag=False))
    (root / "paris.md").write_text("# France\n\nParis is the capital of France. The Seine flows through Paris.\n")
    w.create_kb("facts", caller=OP)
    w.ingest("facts", [root / "paris.md"], caller=OP)
    yield w
    w.close()


def test_citations_the_checker_added_are_logged_and_not_counted_as_the_models(ws):
    # one sentence cited by the model, one left uncited (the checker cites it)
    chat = FakeListChatModel(responses=["Paris is the capital of France [1]. The Seine flows through Paris."])
    engine = AnswerEngine(ws.retrieval, ws.embedder, ws.store, ws.settings, chat=chat)
    a = engine.answer(ws.answer_request(["facts"], "What is the capital of France?", caller=OP))
    assert not a.abstained and a.mode == "llm" and a.auto_cited == 1
    assert [(c.text, c.cited, c.cited_by) for c in a.claims] == [
        ("Paris is the capital of France.", [1], "model"),
        ("The Seine flows through Paris.", [1], "checker"),
    ]
    kb_id = ws.get_kb("facts", caller=OP).kb_id
    qid = ws.feedback.log_answer(a, [kb_id])
    logged = json.loads(ws.db.query_one("SELECT claims FROM queries WHERE query_id=?", (qid,))["claims"])
    assert [c["cited_by"] for c in logged] == ["model", "checker"]  # stored with the query log

    df = ws.feedback.frame()
    s = FeedbackLog.summary(df)
    assert s["citation_coverage"] == 0.5  # was 1.0: the checker's citation counted as the model's
    assert s["checker_citation_rate"] == 0.5 and s["citations_not_recorded"] == 0

    # a row logged before `cited_by` was recorded: one cited sentence, provenance unknown
    old_claims = [{"text": "Paris is the capital of France.", "label": "supported", "score": 1.0, "cited": [1]}]
    old_cits = [{"n": 1, "doc_id": "d", "source": "paris.md", "page": 1, "chunk_id": "d#0", "snippet": "",
                 "score": 1.0}]
    with ws.db.transaction() as c:
        c.execute("INSERT INTO queries (query_id, ts, user, kb_ids, question, answer, citations, claims, grounding, "
                  "confidence, abstained, mode, timings, answers_question) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                  ("old", time.time(), None, json.dumps([kb_id]), "old?", "Paris is the capital of France [1].",
                   json.dumps(old_cits), json.dumps(old_claims), 1.0, 1.0, 0, "llm", "{}", 1.0))
    s = FeedbackLog.summary(ws.feedback.frame())
    assert s["citations_not_recorded"] == 1
    assert s["citation_coverage"] == 0.5 and s["checker_citation_rate"] == 0.5  # not counted as the model's


def test_answers_logged_under_an_older_calibration_read_on_the_shipped_scale(ws):
    """Issue 25 recalibrated *answers the question*. A row an older version logged (no
    `calibration` recorded: the SQuAD-only fit) is shown as the shipped calibration reads the
    same logit, so analytics does not step at the upgrade; rows logged now are shown as logged."""
    import math

    from rag_core.reader import META_FILE

    now = json.loads(META_FILE.read_text())["calibration"]["answers"]
    a = ws.ask(["facts"], "What is the capital of France?", caller=OP)
    assert not a.abstained
    kb_id = ws.get_kb("facts", caller=OP).kb_id
    fresh = ws.feedback.log_answer(a, [kb_id])
    rows = [("low", 0.10, 1.0, 0.10, 0), ("gate", 0.16, 0.5, 0.08, 0), ("high", 0.90, 1.0, 0.90, 0),
            ("abstained", 0.0, 0.0, 0.0, 1), ("pre-reader", None, 1.0, 0.7, 0)]
    with ws.db.transaction() as c:
        for qid, aq, g, conf, abst in rows:
            c.execute("INSERT INTO queries (query_id, ts, user, kb_ids, question, answer, citations, claims, grounding, "
                      "confidence, abstained, mode, timings, answers_question) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                      (qid, time.time(), None, json.dumps([kb_id]), "q?", "a", "[]", "[]", g, conf, abst,
                       "extractive", "{}", aq))
    df = ws.feedback.frame().set_index("query_id")

    def expected(p: float) -> float:  # the old fit's logit, read by the shipped fit
        z = (math.log(p / (1 - p)) + 0.678881) / 0.704496
        return 1 / (1 + math.exp(-(now["a"] * z + now["b"])))

    assert df.loc[fresh, "answers_question"] == pytest.approx(a.answers_question)
    assert df.loc[fresh, "confidence"] == pytest.approx(a.confidence)
    for qid, p in (("low", 0.10), ("gate", 0.16), ("high", 0.90)):
        assert df.loc[qid, "answers_question"] == pytest.approx(expected(p), abs=1e-4)
    assert df.loc["low", "answers_question"] < df.loc["gate", "answers_question"] < df.loc["high", "answers_question"]
    assert df.loc["gate", "confidence"] == pytest.approx(0.5 * expected(0.16), abs=1e-4)  # × grounding
    assert df.loc["abstained", "answers_question"] == 0.0 and df.loc["abstained", "confidence"] == 0.0
    assert math.isnan(df.loc["pre-reader", "answers_question"]) and df.loc["pre-reader", "confidence"] == 0.7
