"""The science claims held out of a mixture's training are the ones calibration reads
(training/reader/mix_data.py --scifact-heldout, calibrate.py --domains --scifact-heldout): a
model must never be calibrated on claims it was trained on as `answers` rows."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO.parent / "shared" / "data" / "beir-scifact" / "scifact-original-claims" / "claims_train.csv"
pytestmark = pytest.mark.skipif(not SCIFACT.exists(), reason="needs ../shared/data/beir-scifact")


@pytest.fixture(scope="module")
def modules():
    sys.path.insert(0, str(REPO / "training" / "reader"))
    return importlib.import_module("mix_data"), importlib.import_module("calibrate")


def test_training_rows_and_calibration_rows_share_no_science_claim(modules):
    mix_data, calibrate = modules
    every = {r["a"] for r in mix_data.scifact_rows(random.Random(0))}
    trained = {r["a"] for r in mix_data.scifact_rows(random.Random(0), heldout_share=0.2)}
    calibration = {r["a"] for r in calibrate.domain_rows(None, scifact_heldout=0.2) if r["kind"] == "scifact-train"}
    assert calibration, "no held-out science claims to calibrate on"
    assert not calibration & trained
    assert calibration <= every
    # the held-out share is roughly what was asked, and everything else is still trained on
    assert 0.08 < len(every - trained) / len(every) < 0.3
    assert every - trained >= calibration


def test_without_a_held_out_share_every_claim_is_trained_on(modules):
    mix_data, _ = modules
    assert {r["a"] for r in mix_data.scifact_rows(random.Random(0))} == \
        {r["a"] for r in mix_data.scifact_rows(random.Random(0), heldout_share=0.0)}
