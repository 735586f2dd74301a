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
