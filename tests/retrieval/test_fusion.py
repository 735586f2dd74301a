"""Fusion math on hand-computed examples."""

import pytest

from rag_core.text.fusion import fuse_ranked, reciprocal_rank, relative_score

KW = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
VEC = [("c", 0.9), ("d", 0.7), ("a", 0.5)]


def test_relative_score_by_hand():
    # keyword minmax: a=1, b=0.5, c=0 ; vector minmax: c=1, d=0.5, a=0
    got = relative_score(KW, VEC, alpha=0.5)
    assert got == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.5, "d": 0.25})
    got = relative_score(KW, VEC, alpha=0.75)
    assert got == pytest.approx({"a": 0.25, "b": 0.125, "c": 0.75, "d": 0.375})


def test_rrf_by_hand():
    got = reciprocal_rank(KW, VEC, alpha=0.5, k=60)
    assert got["a"] == pytest.approx(0.5 / 61 + 0.5 / 63)
    assert got["b"] == pytest.approx(0.5 / 62)
    assert got["c"] == pytest.approx(0.5 / 63 + 0.5 / 61)
    assert got["d"] == pytest.approx(0.5 / 62)


def test_alpha_extremes_reproduce_single_rankings():
    assert [k for k, _ in fuse_ranked(KW, VEC, 0.0, "rrf")][:3] == ["a", "b", "c"]
    assert [k for k, _ in fuse_ranked(KW, VEC, 1.0, "rrf")][:3] == ["c", "d", "a"]
    assert [k for k, _ in fuse_ranked(KW, VEC, 0.0, "relative_score")][:2] == ["a", "b"]
    assert [k for k, _ in fuse_ranked(KW, VEC, 1.0, "relative_score")][:2] == ["c", "d"]


def test_single_result_lists_and_ties():
    assert relative_score([("x", 3.0)], [], 0.5) == {"x": 0.5}
    assert [k for k, _ in fuse_ranked([("b", 1.0), ("a", 1.0)], [], 0.0, "relative_score")] == ["a", "b"]
    with pytest.raises(ValueError):
        fuse_ranked(KW, VEC, 0.5, "borda")
