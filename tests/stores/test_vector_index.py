"""The vector index against exact search: HNSW segments, filters, patches, compaction.
Small thresholds (monkeypatched) so real faiss graphs are built over a few thousand rows."""

from __future__ import annotations

import numpy as np
import pytest

from rag_core.stores import vector_index as vx
from rag_core.stores.vector_index import VectorIndex


@pytest.fixture(autouse=True)
def small_segments(monkeypatch):
    monkeypatch.setattr(vx, "SEAL_ROWS", 250)
    monkeypatch.setattr(vx, "MERGE_FACTOR", 4)
    monkeypatch.setattr(vx, "EXACT_FILTERED", 50)


def clustered(n: int, dim: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, dim))
    x = centres[rng.integers(0, 40, n)] + 0.3 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def exact_top(x, q, k, mask):
    s = np.where(mask, x @ q, -np.inf)
    return set(np.argsort(-s)[:k][np.isfinite(np.sort(-s)[:k] * -1)].tolist())


def test_segments_seal_merge_and_find_what_exact_search_finds():
    x = clustered(3000)
    vi = VectorIndex(24)
    for s in range(0, 3000, 100):
        vi.append(list(x[s : s + 100]))
    vi.build_all()
    assert [s.level for s in vi.segments] == [1, 1, 1]  # twelve sealed 250s, merged four at a time
    assert all(s.graph is not None for s in vi.segments) and vi.n == 3000 and vi.sealed == 3000
    qs = clustered(50, seed=1)
    everything = np.ones(3000, dtype=bool)
    recall = []
    for q in qs:
        pos, scores = vi.search(q, 10, everything)
        assert np.allclose(scores, x[pos] @ q, atol=2e-3)  # rescored: exact up to fp16
        assert list(scores) == sorted(scores, reverse=True)
        recall.append(len(set(pos.tolist()) & exact_top(x, q, 10, everything)) / 10)
    assert np.mean(recall) >= 0.95


def test_filters_are_applied_inside_the_search():
    x = clustered(2000)
    vi = VectorIndex(24)
    vi.append(list(x))
    vi.build_all()
    rng = np.random.default_rng(3)
    for share in (0.01, 0.4):  # 1%: exact scan of the kept rows; 40%: graph walk with the bitmap
        mask = rng.random(2000) < share
        for q in clustered(20, seed=2):
            pos, _ = vi.search(q, 10, mask)
            assert mask[pos].all()
            want = exact_top(x, q, 10, mask)
            if share < 0.05:
                assert set(pos.tolist()) == want
            else:
                assert len(set(pos.tolist()) & want) >= 8


def test_rows_without_vectors_wait_and_late_vectors_are_found():
    x = clustered(600)
    vi = VectorIndex(24)
    vi.append([None] * 300 + list(x[300:]))  # the first 300 rows: keyword-only for now
    vi.build_all()
    assert vi.sealed == 500  # two sealed segments hold zeros for the waiting rows
    vi.set([7, 550], x[[7, 550]])  # one sealed row (a patch), one tail row
    has = np.zeros(600, dtype=bool)
    has[300:] = True
    has[7] = True
    pos, scores = vi.search(x[7], 1, has)
    assert pos.tolist() == [7] and scores[0] == pytest.approx(1.0, abs=1e-3)
    assert np.allclose(vi.get([7, 550, 400]), x[[7, 550, 400]], atol=1e-3)


def test_compaction_renumbers_and_a_stale_build_is_refused():
    x = clustered(1010)  # 4 sealed segments and a tail of 10
    vi = VectorIndex(24)
    vi.append(list(x))
    job = vi.next_job()
    late = clustered(1, seed=7)[0]
    vi.set([100], late[None, :])  # a sealed row's late vector: a patch
    x[100] = late
    keep = np.arange(0, 1010, 2)
    vi.compact(keep)
    assert vi.n == 505 and np.allclose(vi.get(np.arange(505)), x[keep], atol=1e-3)
    assert np.allclose(vi.get([50]), late, atol=1e-3)  # the patch moved with its row
    assert vi.install(VectorIndex.run(job)) is False  # its segment was replaced meanwhile
    pos, _ = vi.search(x[10], 1, np.ones(505, dtype=bool))
    assert pos.tolist() == [5]
