"""The answer policy in the real chain, against an OpenAI-compatible model on loopback.

No capable LLM runs here, so the model is scripted: the benchmark's oracle server
(benchmarks/oracle_llm.py, real HTTP and streaming through langchain-openai's ChatOpenAI),
answering from a script (a stand-in for a paid model, as the developers' guide allows) or, for
calibration, from gold answers. Everything else is real: the store, the reader, the verifier,
the policy file in the data folder."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from benchmarks.oracle_llm import Gold, _Reply, qnorm
from rag_core.access import Caller, PermissionDenied
from rag_core.config import get_settings
from rag_core.feedback import FeedbackLog
from rag_core.workspace import Workspace

OP = Caller.operator()
DECLINE = "I don't have information about that in the selected knowledge bases."


class Script:
    """Replies by question: answer prompts get the scripted text, relevance checks 'yes'."""

    def __init__(self, answers: dict[str, str]):
        self.answers = answers

    def reply(self, messages):
        text = "\n".join(m.get("content") if isinstance(m.get("content"), str) else "" for m in messages)
        if "yes or no" in text:
            return _Reply("yes", "relevance")
        q = re.findall(r"Question: (.+)", text)
        return _Reply(self.answers.get(q[-1].strip() if q else "", DECLINE), "answer", {"question": q[-1] if q else ""})


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("policy_docs")
    (root / "office.md").write_text("# Office rules\n\nThe bell rings at half past four, and after it staff may go home. "
                                    "Visitors sign in at the front desk.\n")
    (root / "kettle.md").write_text("# Kettle care\n\nDescale it monthly with white vinegar. Never immerse the base in water.\n")
    (root / "quit.md").write_text("# Using R\n\n4. To quit the R program the command is\n> q()\n\n"
                                  "At this point you will be asked whether you want to save the data from your R session.\n")
    return root


def workspace(tmp_path, server, docs, **settings) -> Workspace:
    ws = Workspace(get_settings(tmp_path / "data", openai_base_url=server.base_url, openai_api_key="test",
                                llm_model="scripted", llm_crag=False, llm_condense=False, **settings))
    ws.create_kb("k", caller=OP)
    ws.ingest("k", [docs / "office.md", docs / "kettle.md", docs / "quit.md"], caller=OP)
    return ws


WORKDAY = "When does the working day end?"
RIGHT = "The bell rings at half past four, and after it staff may go home [1]."


def test_a_right_answer_the_reader_scores_low_is_shown_when_the_model_decides(tmp_path, server, docs):
    server.reader = Script({WORKDAY: RIGHT})
    ws = workspace(tmp_path, server, docs, answer_policy="conservative")
    try:
        gated = ws.ask(["k"], WORKDAY, caller=OP)  # the conservative gates
        assert gated.abstained and gated.decided_by == "reader" and gated.policy == "conservative"
        assert gated.signals["evidence"] < ws.settings.answer_threshold
        ws.update_kb("k", caller=OP, retrieval=ws.get_kb("k", caller=OP).retrieval.__class__(answer_policy="model"))
        shown = ws.ask(["k"], WORKDAY, caller=OP)
        assert not shown.abstained and shown.decided_by == "model" and shown.policy == "model"
        assert "half past four" in shown.text and shown.grounding_score == 1.0
        assert shown.citations[0].source == "office.md"
    finally:
        ws.close()


def test_a_fluent_answer_no_source_supports_is_declined_or_flagged(tmp_path, server, docs):
    server.reader = Script({
        "What is the capital of Germany?": "The capital of Germany is Berlin [1].",
        "How often is the kettle descaled?": "Descale it monthly with white vinegar [1]. It also needs a new filter every week [1].",
    })
    ws = workspace(tmp_path, server, docs, answer_policy="model")
    try:
        a = ws.ask(["k"], "What is the capital of Germany?", caller=OP)
        assert a.abstained and a.decided_by == "verification" and "Berlin" not in a.text
        b = ws.ask(["k"], "How often is the kettle descaled?", caller=OP)
        assert not b.abstained and b.decided_by == "model"
        labels = {c.text: c.label for c in b.claims}
        assert labels["Descale it monthly with white vinegar."] == "supported"
        assert labels["It also needs a new filter every week."] != "supported"  # flagged in the answer
        assert b.signals["labels"] == [c.label for c in b.claims]
    finally:
        ws.close()


def test_the_models_decline_decides_and_is_recorded(tmp_path, server, docs):
    server.reader = Script({})
    ws = workspace(tmp_path, server, docs, answer_policy="model")
    try:
        a = ws.ask(["k"], "How should I clean the kettle?", caller=OP)
        assert a.abstained and a.decided_by == "model_declined" and a.closest
        # the query log and Analytics keep what decided
        log = ws.feedback_for(caller=OP)
        log.log_answer(a, ["k"])
        decisions = FeedbackLog.decisions(log.frame())
        assert decisions.iloc[0][["policy", "decided_by", "outcome"]].tolist() == ["model", "model_declined", "withheld"]
    finally:
        ws.close()


def test_calibrate_writes_a_policy_the_chain_then_uses(tmp_path, server, docs, monkeypatch):
    # a tiny set in the shipped format: the model answers gold questions, declines the rest
    set_path = tmp_path / "set.jsonl"
    recs = [{"type": "doc", "id": "office", "title": "Office rules",
             "text": "The bell rings at half past four, and after it staff may go home. Visitors sign in at the front desk."},
            {"type": "doc", "id": "kettle", "title": "Kettle care",
             "text": "Descale it monthly with white vinegar. Never immerse the base in water."},
            {"type": "q", "id": "a1", "doc": "office", "question": WORKDAY, "answerable": True,
             "evidence": "The bell rings at half past four, and after it staff may go home.", "answers": ["half past four"]},
            {"type": "q", "id": "n1", "doc": "office", "question": "How many parking spaces does the office have?",
             "answerable": False, "evidence": "", "answers": []},
            {"type": "q", "id": "a2", "doc": "kettle", "question": "How often should the kettle be descaled?",
             "answerable": True, "evidence": "Descale it monthly with white vinegar.", "answers": ["monthly"]},
            {"type": "q", "id": "n2", "doc": "kettle", "question": "What is the kettle's warranty period?",
             "answerable": False, "evidence": "", "answers": []}]
    set_path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    golds = {qnorm(r["question"]): Gold(evidence=[r["evidence"]], answers=r["answers"]) for r in recs
             if r["type"] == "q" and r["answerable"]}
    from benchmarks.oracle_llm import OracleReader

    server.reader = OracleReader(golds)
    ws = workspace(tmp_path, server, docs)
    try:
        # uncalibrated, an endpoint model's own verdict decides (measured best: policy_choice.py)
        assert ws.answer_policy(caller=OP)["name"] == "model"
        assert "not calibrated" in ws.answer_policy(caller=OP)["source"]
        with pytest.raises(PermissionDenied):
            ws.calibrate_answer_policy(caller=Caller.of("bob"), set_path=set_path)
        seen = []
        run = ws.calibrate_answer_policy(caller=OP, set_path=set_path, progress=lambda d, t, e: seen.append((d, t)))
        assert seen[-1] == (4, 4) and run.rows == 4 and run.target_met
        # the perfect model declines by itself: no reader line is needed, and both right answers are kept
        assert run.params == {"evidence_min": 0.0, "written_min": 0.0}
        assert run.figures["answerable_correct"] == 1.0 and run.figures["unanswerable_abstained"] == 1.0
        # four questions of a set that is not the shipped one: auto ignores it, and says why
        shown = ws.answer_policy(caller=OP)
        assert shown["name"] == "model" and "calibration ignored" in shown["source"]
        assert "only 4 questions" in shown["source"] and "calibration set" in shown["source"]
        # the same calibration where four questions of this set are enough: it decides
        from rag_core.generation import policy_choice as PC

        monkeypatch.setattr(PC, "MIN_CALIBRATION_QUESTIONS", 4)
        monkeypatch.setattr(PC, "calibration_set_sha", lambda: hashlib.sha256(set_path.read_bytes()).hexdigest())
        shown = ws.answer_policy(caller=OP)
        assert shown["name"] == "calibrated" and "10 of 10" in shown["summary"]
        server.reader = Script({WORKDAY: RIGHT})
        a = ws.ask(["k"], WORKDAY, caller=OP)  # vetoed by the reader before calibration; now the model's
        assert not a.abstained and a.policy == "calibrated" and a.decided_by == "model"
        # resumable: a second run reads the stored rows instead of asking again
        again = ws.calibrate_answer_policy(caller=OP, set_path=set_path)
        assert again.rows == 4 and again.minutes < run.minutes
    finally:
        ws.close()


def test_a_copied_sentence_with_a_code_term_reads_supported(tmp_path, docs):
    ws = Workspace(get_settings(tmp_path / "offline"))
    try:
        ws.create_kb("k", caller=OP)
        ws.ingest("k", [docs / "quit.md", docs / "kettle.md"], caller=OP)
        a = ws.ask(["k"], "How do I quit R?", caller=OP)
        assert not a.abstained and a.decided_by == "reader" and "q()" in a.text
        assert a.grounding_score == 1.0 and all(c.label == "supported" for c in a.claims)
        assert "q()" in a.highlight
    finally:
        ws.close()
