"""The answer path's decisions, one test per hole a review found (issue 48): every answer and
every abstention leaves through the policy, which alone sets `decided_by`, `mode` and the
reason, on every route.

No capable LLM runs here, so the model is scripted: the benchmark's oracle server
(benchmarks/oracle_llm.py: real HTTP and streaming through langchain-openai's ChatOpenAI) on
loopback, answering from a script (a stand-in for a paid model, as the developers' guide
allows). The store, reader, verifier and policy are the real ones, over the project's own
small texts."""

from __future__ import annotations

import re

import pytest

from benchmarks.oracle_llm import _Reply
from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.models import RetrievalSettings
from rag_core.workspace import Workspace

OP = Caller.operator()
DECLINE = "I don't have information about that in the selected knowledge bases."
DESCALE = "How often should the kettle be descaled?"
WARRANTY = "What is the kettle's warranty period?"
SUMMARY = "Summarize kettle.md"


class Script:
    """Replies by question (the last "Question: …" of the prompt); the judge's prompt gets
    `verdict` (its whole reply), relevance checks "yes"."""

    def __init__(self, answers: dict[str, str], verdict: str = "{}"):
        self.answers, self.verdict = answers, verdict

    def reply(self, messages):
        text = "\n".join(m.get("content") if isinstance(m.get("content"), str) else "" for m in messages)
        if "<sentences>" in text:
            return _Reply(self.verdict, "verify")
        if "yes or no" in text:
            return _Reply("yes", "relevance")
        q = re.findall(r"Question: (.+)", text)
        asked = q[-1].strip() if q else ""
        return _Reply(self.answers.get(asked, DECLINE), "answer", {"question": asked})


class Paced(Script):
    """The same replies, with the answer streamed as a slow model streams it: `wait` seconds of
    silence before its first words, then its pieces `pace` seconds apart."""

    def __init__(self, answers: dict[str, str], pace: float = 0.0, wait: float = 0.0):
        super().__init__(answers)
        self.pace, self.wait = pace, wait

    def reply(self, messages):
        r = super().reply(messages)
        return _Reply(r.text, r.kind, r.entry, pace=self.pace, wait=self.wait) if r.kind == "answer" else r


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("path_docs")
    (root / "kettle.md").write_text(
        "# Kettle care\n\n## Cleaning\n\nDescale the kettle monthly with white vinegar. Rinse it twice afterwards.\n\n"
        "## Safety\n\nNever immerse the base in water. Unplug the kettle before cleaning it.\n\n"
        "## Filling\n\nFill the kettle between the two marks on the side.\n")
    (root / "office.md").write_text("# Office rules\n\nThe bell rings at half past four, and after it staff may go "
                                    "home. Visitors sign in at the front desk.\n")
    return root


def workspace(tmp_path, docs, base_url, **settings) -> Workspace:
    ws = Workspace(get_settings(tmp_path / "data", openai_base_url=base_url, openai_api_key="test",
                                llm_model="scripted", llm_crag=False, llm_condense=False, **settings))
    ws.create_kb("k", caller=OP)
    ws.ingest("k", [docs / "kettle.md", docs / "office.md"], caller=OP)
    return ws


@pytest.mark.parametrize("empty", ["", "...", "[1]", " [1][2] "])
def test_a_completion_with_no_words_is_a_model_failure_and_the_reader_stands_in_under_its_line(
        tmp_path, server, docs, empty):
    server.reader = Script({DESCALE: empty, WARRANTY: empty})
    ws = workspace(tmp_path, docs, server.base_url, answer_policy="model")
    try:
        a = ws.ask(["k"], DESCALE, caller=OP, no_cache=True)
        assert "empty answer" in a.models["llm_error"]
        assert not a.abstained and "monthly" in a.text
        assert (a.mode, a.decided_by) == ("extractive", "reader")  # the reader's answer, recorded as such
        assert a.signals["fallback"] and a.signals["mode"] == "extractive"
        # a near-miss: the model's "model" policy let it through; the reader standing in is held
        # to its own line and withholds it
        b = ws.ask(["k"], WARRANTY, caller=OP, no_cache=True)
        assert b.abstained and (b.mode, b.decided_by) == ("extractive", "reader")
        assert b.signals["evidence"] < ws.settings.answer_threshold
    finally:
        ws.close()


def test_a_whole_document_summary_with_no_supported_sentence_is_withheld(tmp_path, server, docs):
    server.reader = Script({SUMMARY: "Kettles were invented in Mesopotamia [1]. Most are made of copper [2]."})
    ws = workspace(tmp_path, docs, server.base_url)  # defaults: auto, uncalibrated
    try:
        a = ws.ask(["k"], SUMMARY, caller=OP)
        assert a.route == "document" and a.abstained
        assert (a.decided_by, a.mode) == ("verification", "llm") and "Mesopotamia" not in a.text
        assert a.signals["labels"] and "supported" not in a.signals["labels"]
    finally:
        ws.close()


def test_a_models_refusal_of_a_document_is_shown_as_its_own_with_the_outline_offered(tmp_path, server, docs):
    server.reader = Script({SUMMARY: DECLINE})
    ws = workspace(tmp_path, docs, server.base_url)
    try:
        a = ws.ask(["k"], SUMMARY, caller=OP)
        assert a.route == "document" and a.abstained and not a.citations
        assert (a.decided_by, a.mode) == ("model_declined", "llm") and a.signals["declined"] is True
        assert a.signals["offered"] == "outline"
        # the outline is offered beneath the refusal, not put in its place
        offered = " ".join(c.snippet for c in a.closest)
        assert len(a.closest) >= 2 and "Descale the kettle monthly" in offered
        assert all(c.source == "kettle.md" for c in a.closest)
    finally:
        ws.close()


def test_a_comparison_the_model_refuses_is_its_refusal(tmp_path, server, docs):
    q = "Compare kettle.md and office.md"
    server.reader = Script({q: DECLINE})
    ws = workspace(tmp_path, docs, server.base_url)
    try:
        a = ws.ask(["k"], q, caller=OP)
        assert a.route == "compare" and a.abstained and a.decided_by == "model_declined"
        assert {c.source for c in a.closest} == {"kettle.md", "office.md"}
    finally:
        ws.close()


def test_decided_by_and_mode_on_each_path(tmp_path, server, docs):
    server.reader = Script({DESCALE: "Descale the kettle monthly with white vinegar [1]."})
    ws = workspace(tmp_path, docs, server.base_url, answer_policy="model")
    off = Workspace(get_settings(tmp_path / "offline"))
    off.create_kb("k", caller=OP)
    off.ingest("k", [docs / "kettle.md", docs / "office.md"], caller=OP)
    dead = Workspace(get_settings(tmp_path / "dead", openai_base_url="http://127.0.0.1:9/v1", openai_api_key="t",
                                  llm_model="m", llm_timeout=2, llm_retries=0, answer_policy="model"))
    dead.create_kb("k", caller=OP)
    dead.ingest("k", [docs / "kettle.md", docs / "office.md"], caller=OP)
    try:
        a = ws.ask(["k"], DESCALE, caller=OP)
        assert (a.abstained, a.mode, a.decided_by) == (False, "llm", "model")
        b = off.ask(["k"], DESCALE, caller=OP)
        assert (b.abstained, b.mode, b.decided_by) == (False, "extractive", "reader")
        c = off.ask(["k"], WARRANTY, caller=OP)
        assert (c.abstained, c.mode, c.decided_by) == (True, "extractive", "reader")
        # the model is unreachable: an abstention after it says the reader decided, offline
        d = dead.ask(["k"], WARRANTY, caller=OP)
        assert d.abstained and "llm_error" in d.models and (d.mode, d.decided_by) == ("extractive", "reader")
        e = dead.ask(["k"], DESCALE, caller=OP)
        assert not e.abstained and "llm_error" in e.models and (e.mode, e.decided_by) == ("extractive", "reader")
        s = off.ask(["k"], SUMMARY, caller=OP)
        assert (s.route, s.mode, s.decided_by) == ("document", "extractive", "document") and not s.abstained
        assert s.grounding_score == 1.0  # every outline sentence is the document's own, read as such
    finally:
        for w in (ws, off, dead):
            w.close()


def test_the_model_judges_in_one_structured_call_validated_and_recorded(tmp_path, server, docs):
    said = "Descale the kettle monthly with white vinegar [1]. Rinse the kettle two times after descaling [1]."
    server.reader = Script({DESCALE: said})
    ws = workspace(tmp_path, docs, server.base_url, answer_policy="model", llm_verify=True)
    try:
        local = ws.ask(["k"], DESCALE, caller=OP, no_cache=True)  # the reply "{}" is unusable: local labels stand
        assert local.signals["verified_by"] == "reader (judge reply unusable)"
        calls = len(server.calls)
        good = ('{"verdicts": [{"n": 1, "verdict": "supported", "source": 1, "quote": "Descale the kettle monthly '
                'with white vinegar."}, {"n": 2, "verdict": "supported", "source": 1, "quote": "Rinse it twice '
                'afterwards."}]}')
        server.reader = Script({DESCALE: said}, verdict=good)
        a = ws.ask(["k"], DESCALE, caller=OP, no_cache=True)
        assert a.signals["verified_by"].startswith("model") and not a.abstained
        assert [c.label for c in a.claims] == ["supported", "supported"]  # the paraphrase, on the model's word
        judge_calls = [c for c in server.calls[calls:] if c["kind"] == "verify"]
        assert len(judge_calls) == 1  # one call for the whole answer
        # a quote that is not in the cited passage is rejected; a fact the passage lacks vetoes
        bad = ('{"verdicts": [{"n": 1, "verdict": "supported", "source": 1, "quote": "Descale it with lemon juice."},'
               ' {"n": 2, "verdict": "supported", "source": 1, "quote": "Rinse it twice afterwards."}]}')
        server.reader = Script({DESCALE: "Descale the kettle weekly with white vinegar [1]. "
                                         "Rinse the kettle two times after descaling [1]."}, verdict=bad)
        b = ws.ask(["k"], DESCALE, caller=OP, no_cache=True)
        assert not b.abstained and "1 verdict(s) rejected" in b.signals["verified_by"]
        assert b.claims[0].label == "unsupported" and b.claims[0].missing == ["frequency: weekly"]
        assert b.claims[1].label == "supported"
    finally:
        ws.close()


def test_two_knowledge_bases_asked_together_get_the_strictest_policy(tmp_path, server, docs):
    q = "When does the working day end?"
    server.reader = Script({q: "The bell rings at half past four, and after it staff may go home [1]."})
    ws = workspace(tmp_path, docs, server.base_url, answer_policy="conservative")  # the deployment's
    try:
        ws.update_kb("k", caller=OP, retrieval=RetrievalSettings(answer_policy="model"))
        ws.create_kb("strict", caller=OP, retrieval=RetrievalSettings(answer_policy="conservative"))
        ws.ingest("strict", [docs / "kettle.md"], caller=OP)
        alone = ws.ask(["k"], q, caller=OP)
        assert not alone.abstained and alone.policy == "model"
        both = ws.ask(["k", "strict"], q, caller=OP)
        # the conservative base's reader line holds for the question asked across both
        assert both.abstained and both.policy == "strictest" and both.decided_by == "reader"
        # a base with no setting follows the deployment's (conservative here);
        # the "model" base beside it does not loosen it
        ws.create_kb("plain", caller=OP)
        ws.ingest("plain", [docs / "kettle.md"], caller=OP)
        mixed = ws.ask(["k", "plain"], q, caller=OP)
        assert mixed.abstained and mixed.decided_by == "reader" and mixed.policy == "strictest"
    finally:
        ws.close()
