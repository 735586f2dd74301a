"""calibrate.platt: the Platt fit reaches the log-loss optimum even where a full Newton step
from (a, b) = (1, 0) overshoots (large, weakly separating logits, as the shipped reader gives on
several domains at once)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def calibrate():
    sys.path.insert(0, str(REPO / "training" / "reader"))
    return importlib.import_module("calibrate")


@pytest.mark.parametrize("centre", [-2.0, -6.0])
def test_weakly_separating_logits_give_a_small_slope_at_the_optimum(calibrate, centre):
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(500), np.zeros(500)]
    lg = np.r_[rng.normal(centre + 0.5, 2, 500), rng.normal(centre, 2, 500)]
    a, b = calibrate.platt(lg, y)
    assert 0 < a < 1 and abs(b) < 5
    t = np.where(y == 1, 501 / 502, 1 / 502)
    p = 1 / (1 + np.exp(-(a * lg + b)))
    assert abs(((p - t) * lg).sum()) < 1e-3 and abs((p - t).sum()) < 1e-3   # gradient zero: the optimum
    assert abs(p.mean() - 0.5) < 0.01


def test_well_separated_logits_keep_their_scale(calibrate):
    rng = np.random.default_rng(1)
    y = (rng.random(2000) < 0.3).astype(float)
    lg = np.where(y == 1, 2.0, -2.0) + rng.normal(0, 1, 2000)
    a, b = calibrate.platt(lg, y)
    p = 1 / (1 + np.exp(-(a * lg + b)))
    assert a > 1.0 and abs(p.mean() - y.mean()) < 0.01
