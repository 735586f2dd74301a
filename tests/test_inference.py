"""Model sessions without a global lock (rag_core/inference.py): a lone call runs on the wide
session, overlapping calls on the one-thread session, and the real models give the same
numbers either way; when more runs wait than there are slots, callers take turns."""

from __future__ import annotations

import threading
import time

import numpy as np

from rag_core import inference
from rag_core.inference import FairShare, SessionPair, run_for


def test_overlapping_calls_use_the_narrow_session(monkeypatch):
    monkeypatch.setattr(inference, "share", FairShare(3))  # three may overlap here, whatever the cores
    made = []
    pair = SessionPair(lambda n: made.append(n) or f"session-{n}", threads=0)
    with pair.session() as s:
        assert s == "session-0"
    got, barrier = [], threading.Barrier(3)

    def call():
        with pair.session() as s:
            barrier.wait(5)
            got.append(s)
            time.sleep(0.05)

    ts = [threading.Thread(target=call) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(5)
    assert sorted(got).count("session-1") >= 2 and made == [0, 1]  # the narrow one, made once


def test_real_models_agree_alone_and_in_parallel():
    from rag_core.config import get_settings
    from rag_core.embeddings import get_embedder
    from rag_core.reader import get_reader

    emb = get_embedder(get_settings())
    reader = get_reader()
    texts = [f"Sentence number {i} about volcanoes and lava." for i in range(6)]
    alone = emb.embed_array(texts)
    logits_alone = reader.logits("answers", ["How many volcanoes?"] * 6, texts)
    out, lg = {}, {}

    def work(i):
        out[i] = emb.embed_array(texts)
        lg[i] = reader.logits("answers", ["How many volcanoes?"] * 6, texts)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    for i in range(4):
        assert np.allclose(out[i], alone, atol=1e-4)
        assert np.allclose(lg[i], logits_alone, atol=1e-3)


def _queued(share: FairShare, n: int) -> None:
    for _ in range(500):
        with share._cond:
            if sum(len(q) for q in share._queues.values()) == n:
                return
        time.sleep(0.01)
    raise AssertionError("the runs never queued")


def test_a_waiting_caller_gets_the_next_slot_not_the_back_of_a_batch():
    """Issue 52: a user with a batch queued does not starve another user's single run. With one
    slot held and three of A's runs waiting, B's run, queued last, goes second."""
    share = FairShare(1)
    order, threads = [], []
    assert share.acquire("a") is False  # alone: the wide session

    def run(who: str, tag: str) -> None:
        share.acquire(who)
        order.append(tag)
        share.release()

    for n, (who, tag) in enumerate([("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1")], start=1):
        t = threading.Thread(target=run, args=(who, tag))
        t.start()
        threads.append(t)
        _queued(share, n)
    share.release()
    for t in threads:
        t.join(5)
    assert order == ["a1", "b1", "a2", "a3"]
    assert share._running == 0 and not share._queues


def test_runs_are_queued_under_the_request_callers_name(monkeypatch):
    """The API sets run_for per request; a model run made on that request's thread waits in
    that caller's queue."""
    share = FairShare(1)
    monkeypatch.setattr(inference, "share", share)
    pair = SessionPair(lambda n: f"session-{n}")
    seen = []
    real = share.acquire
    monkeypatch.setattr(share, "acquire", lambda who: seen.append(who) or real(who))
    token = run_for.set("carol")
    try:
        with pair.session():
            pass
    finally:
        run_for.reset(token)
    with pair.session():
        pass
    assert seen == ["carol", ""]
