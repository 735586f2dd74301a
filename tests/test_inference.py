"""Model sessions without a global lock (rag_core/inference.py): a lone call runs on the wide
session, overlapping calls on the one-thread session, and the real models give the same
numbers either way."""

from __future__ import annotations

import threading
import time

import numpy as np

from rag_core.inference import SessionPair


def test_overlapping_calls_use_the_narrow_session():
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
