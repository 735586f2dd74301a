"""Our metric code against ranx (a reference implementation) on a random run."""

import random

import pytest

from rag_core.evaluation import evaluate_run, mrr_at_k, ndcg_at_k, recall_at_k


def test_hand_computed():
    qrels = {"a": 1, "b": 2}
    # DCG = 2/log2(2) + 0 + 1/log2(4) = 2.5 ; IDCG = 2 + 1/log2(3)
    assert ndcg_at_k(["b", "x", "a"], qrels, 10) == pytest.approx(2.5 / (2 + 1 / 1.584962500721156))
    assert recall_at_k(["b", "x", "a"], qrels, 2) == 0.5
    assert mrr_at_k(["x", "y", "a"], qrels, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x"] * 10 + ["a"], qrels, 10) == 0.0


def test_against_ranx():
    ranx = pytest.importorskip("ranx", reason="ranx is a dev dependency (requirements-dev.txt)")
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(300)]
    qrels, run = {}, {}
    for q in range(40):
        rel = rng.sample(docs, rng.randint(1, 6))
        qrels[f"q{q}"] = {d: rng.choice([1, 1, 2]) for d in rel}
        ranked = rng.sample(docs, 150)
        for d in rel[:2]:  # make some hits likely
            if d not in ranked[:20]:
                if d in ranked:
                    ranked.remove(d)
                ranked.insert(rng.randrange(20), d)
        run[f"q{q}"] = ranked[:120]
    ours = evaluate_run(run, qrels)
    r_qrels = ranx.Qrels(qrels)
    r_run = ranx.Run({q: {d: float(len(ranked) - i) for i, d in enumerate(ranked)} for q, ranked in run.items()})
    ref = ranx.evaluate(r_qrels, r_run, ["ndcg@10", "recall@10", "recall@100", "mrr@10"])
    # ranx's ndcg uses trec_eval's linear gain, as we do
    assert ours["ndcg_at_10"] == pytest.approx(ref["ndcg@10"], abs=1e-6)
    assert ours["recall_at_10"] == pytest.approx(ref["recall@10"], abs=1e-6)
    assert ours["recall_at_100"] == pytest.approx(ref["recall@100"], abs=1e-6)
    assert ours["mrr_at_10"] == pytest.approx(ref["mrr@10"], abs=1e-6)
