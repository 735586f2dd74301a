"""The per-knowledge-base correction of the reranker that ratings fit
(retrieval/feedback_signals.Corrections): the fit itself on records made for the test, then
on a real workspace (real store, embedder, reranker and reader; ratings through the same
CallerFeedback the pages and the API use)."""

from __future__ import annotations

import numpy as np
import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.retrieval import feedback_signals as fs
from rag_core.retrieval.rerank import CORRECTION_BOUND, ReaderReranker, load_weights
from rag_core.workspace import Workspace

ANN = Caller.of("ann")
OP = Caller.operator()


def records(n: int, truth, seed: int = 0, heads: int = 8):
    """n rated heads of random features; the up-rated passage is the one `truth` ranks first."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        m = rng.normal(size=(heads, len(ReaderReranker.LEARNABLE)))
        labels = np.zeros(heads, dtype=np.int8)
        labels[int(np.argmax(truth(m)))] = 1
        out.append((m, labels, 1.0))
    return out


def shipped(m):
    w = load_weights()
    return m @ np.array([w[f] for f in ReaderReranker.LEARNABLE[:-1]] + [1.0])


def top1(examples, theta):
    hits = 0
    for m, labels, _ in examples:
        hits += labels[int(np.argmax(shipped(m) + m @ theta))] > 0
    return hits / len(examples)


def test_a_base_whose_users_trust_the_reader_more_gets_a_correction_that_helps_unseen_questions():
    truth = lambda m: shipped(m) + 12.0 * m[:, -1]  # noqa: E731 - these users' relevance leans on the reader
    theta, detail = fs.fit_correction(records(200, truth))
    assert detail["adopted"] and theta is not None and theta[-1] > 0  # more weight on the reader
    fresh = records(300, truth, seed=1)  # questions nobody rated
    assert top1(fresh, theta) > top1(fresh, np.zeros_like(theta)) + 0.1


def test_no_correction_when_the_shipped_weights_already_rank_the_rated_passages_first():
    theta, detail = fs.fit_correction(records(200, shipped))
    assert theta is None and not detail["adopted"]  # held-out records gain nothing: nothing kept


@pytest.fixture
def ws(tmp_path):
    w = Workspace(get_settings(tmp_path / "data", llm_crag=False))
    for kb in ("hr", "hr-copy"):
        w.create_kb(kb, caller=ANN)
    (tmp_path / "leave.md").write_text("# Leave\n\nEmployees get 25 days of annual leave per year.\n")
    (tmp_path / "leave-faq.md").write_text("# FAQ\n\nAnnual leave days for employees are listed in the intranet.\n")
    (tmp_path / "canteen.md").write_text("# Canteen\n\nThe canteen serves lunch from noon to two.\n")
    for kb in ("hr", "hr-copy"):
        w.ingest(kb, [tmp_path / n for n in ("leave.md", "leave-faq.md", "canteen.md")], caller=ANN)
    yield w
    w.close()


def rate(ws, source: str, question: str):
    """A logged answer citing `source`'s passage, rated up (what a user was shown and liked)."""
    from rag_core.grounding.citations import citation_for
    from rag_core.models import Answer, ScoredChunk

    chunk = next(c for c in ws.chunks("hr", caller=ANN) if c.source == source)
    a = Answer(question=question, text="x [1]", citations=[citation_for(1, ScoredChunk(chunk, 1.0))])
    fb = ws.feedback_for(caller=ANN)
    qid = fb.log_answer(a, [chunk.kb_id])
    fb.rate(qid, 1)
    return qid


def learned(ws, kb: str, q: str) -> dict:
    return {r.chunk.source: r.scores.get("learned") for r in ws.search([kb], q, k=3, caller=ANN).results}


def test_ratings_fit_a_bounded_correction_for_their_own_base_only_and_a_revert_removes_it(ws):
    kb_id = ws.get_kb("hr", caller=ANN).kb_id
    q = "How many days of annual leave do employees get?"
    assert [r.chunk.source for r in ws.search(["hr"], q, k=3, caller=ANN).results][0] == "leave.md"
    for _ in range(fs.MIN_EXAMPLES):  # users keep saying the FAQ is the source they want
        rate(ws, "leave-faq.md", q)
    model = ws.signals.corrections.detail(kb_id)
    assert model is not None and model["examples"] == fs.MIN_EXAMPLES and model["adopted"], model
    # a question nobody asked, worded apart from the rated ones: the correction reaches it
    other = "Is lunch served in the canteen?"
    got = learned(ws, "hr", other)
    assert any(v is not None for v in got.values())
    assert all(abs(v) <= CORRECTION_BOUND + 1e-9 for v in got.values() if v is not None)
    assert all(v is None for v in learned(ws, "hr-copy", other).values())  # the other base learnt nothing
    assert all(v is None for v in {r.chunk.source: r.scores.get("learned") for r in ws.search(
        ["hr", "hr-copy"], other, k=3, caller=ANN).results}.values())  # nor a search over both
    ws.revert_feedback(kb_name="hr", caller=OP)  # an admin reverts what the base learnt
    assert ws.signals.corrections.get(kb_id) is None
    assert all(v is None for v in learned(ws, "hr", other).values())
