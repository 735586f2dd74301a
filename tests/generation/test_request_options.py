"""One request's own settings (issue 53: the API's per-request options) reach the parts they
govern, and every answer says what it was made with. The model is the scripted Gemini-dialect
server on loopback (tests/generation/test_gemini.py), a stand-in for a paid endpoint that
records each request body; the store, reader and chain are real."""

from __future__ import annotations

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.errors import InputError
from rag_core.generation.steps import AnswerOptions
from rag_core.workspace import Workspace
from tests.generation.test_gemini import KEY, MODEL, GeminiLike

OP = Caller.operator()


@pytest.fixture
def docs(tmp_path):
    (tmp_path / "kettle.md").write_text("# Kettle care\n\nDescale the kettle every four weeks with white vinegar.\n")
    (tmp_path / "stove.md").write_text("# Stove care\n\nDescale the stove's kettle drawer every eight weeks.\n")
    return tmp_path


def test_temperature_and_output_budget_reach_the_model_and_its_tokens_come_back(tmp_path, docs):
    srv = GeminiLike("Descale the kettle every four weeks [1].")
    try:
        ws = Workspace(get_settings(tmp_path / "data", openai_base_url=srv.base_url, openai_api_key=KEY,
                                    llm_model=MODEL, llm_crag=False, answer_cache=False,
                                    llm_describe_documents="off"))  # only the answers' requests are read here
        try:
            ws.create_kb("home", caller=OP)
            ws.ingest("home", [docs / "kettle.md"], caller=OP)
            a = ws.ask(["home"], "How often should the kettle be descaled?", caller=OP,
                       options=AnswerOptions(temperature=0.7, max_tokens=64))
            plain = ws.ask(["home"], "How often should the kettle be descaled?", caller=OP)
        finally:
            ws.close()
    finally:
        srv.stop()
    answers = [r["body"] for r in srv.requests if r["body"].get("stream")]
    budget = [b.get("max_completion_tokens", b.get("max_tokens")) for b in answers]  # the client's name for it
    assert answers[0]["temperature"] == 0.7 and budget[0] == 64
    assert answers[1]["temperature"] == 0.0 and budget[1] != 64  # the settings in force
    # the tokens the model counted (the scripted server reports 90 in, one per streamed piece out)
    assert a.usage[MODEL]["input_tokens"] == 90 and a.usage[MODEL]["output_tokens"] > 0
    assert a.models["llm"] == MODEL
    assert a.sources and a.sources[0]["source"] == "kettle.md" and a.sources[0]["cited"]
    assert plain.usage[MODEL]["input_tokens"] == 90


def test_top_k_weights_and_grounded_only_apply_to_one_request(tmp_path, docs):
    ws = Workspace(get_settings(tmp_path / "data", llm_crag=False, answer_cache=False))
    try:
        for name in ("kettle", "stove"):
            ws.create_kb(name, caller=OP)
            ws.ingest(name, [docs / f"{name}.md"], caller=OP)
        q = "How often should I descale?"
        both = ws.ask(["kettle", "stove"], q, caller=OP)
        assert {s["source"] for s in both.sources} == {"kettle.md", "stove.md"}
        one = ws.ask(["kettle", "stove"], q, caller=OP, options=AnswerOptions(top_k=1))
        assert one.signals["passages"] == 1  # retrieved (a conflicting rival may still join the sources)
        only_stove = ws.ask(["kettle", "stove"], q, caller=OP, options=AnswerOptions(kb_weights={"kettle": 0}))
        assert {s["source"] for s in only_stove.sources} == {"stove.md"} and "eight weeks" in only_stove.text
        favour = ws.ask(["kettle", "stove"], q, caller=OP, options=AnswerOptions(kb_weights={"stove": 5.0}))
        assert favour.sources[0]["source"] == "stove.md"
        req = ws.answer_request(["kettle"], q, caller=OP, options=AnswerOptions(grounded_only=True))
        assert all(kb.grounded_only for kb in req.kbs)
        assert not ws.get_kb("kettle", caller=OP).grounded_only  # the request's, not the owner's setting
        with pytest.raises(InputError):
            ws.answer_request(["kettle"], q, caller=OP, options=AnswerOptions(kb_weights={"elsewhere": 2}))
        # the cache keeps one answer per set of options
        k1 = ws._cache_key(req.kbs, req.filters, q, [], None, {}, AnswerOptions(top_k=1))
        k2 = ws._cache_key(req.kbs, req.filters, q, [], None, {}, AnswerOptions(top_k=2))
        assert k1 != k2
    finally:
        ws.close()
