"""training/reader/soft_targets.py: the rows the shipped reader was trained on get a target
pulled toward its own output; the new rows (documentation, science as yes/no) keep their
hard labels. The teacher here is the real shipped int8 reader."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def soft_targets():
    sys.path.insert(0, str(REPO / "training" / "reader"))
    return importlib.import_module("soft_targets")


def test_old_rows_are_make_data_kinds_and_new_rows_are_prefixed(soft_targets):
    assert soft_targets.is_old_task({"kind": "gold"})
    assert soft_targets.is_old_task({"kind": "scifact_support"})
    assert not soft_targets.is_old_task({"kind": "scifact/evidence"})
    assert not soft_targets.is_old_task({"kind": "man/option"})


def test_soften_mixes_hard_label_and_teacher_probability(soft_targets):
    rows = [{"label": 1, "kind": "gold"}, {"label": 0, "kind": "other_sentence"}]
    out = soft_targets.soften(rows, [0.0, 2.0], alpha=0.5)
    assert out[0]["label"] == pytest.approx(0.75)           # 0.5·1 + 0.5·σ(0)
    assert out[1]["label"] == pytest.approx(0.5 * 0.880797, abs=1e-5)
    assert [r["hard"] for r in out] == [1, 0]
    assert soft_targets.soften(rows, [0.0, 2.0], alpha=1.0)[1]["label"] == 0


def test_cli_softens_only_old_rows_with_the_shipped_reader(soft_targets, tmp_path, monkeypatch):
    mix = tmp_path / "mix"
    mix.mkdir()
    q = "What year did the band release its first album?"
    rows = [
        {"task": "answers", "a": q, "b": "Bandname | The band released its first album in 1994.", "label": 1, "kind": "gold"},
        {"task": "answers", "a": q, "b": "Bandname | The band toured Europe with friends.", "label": 0, "kind": "other_sentence"},
        {"task": "answers", "a": "How do I list hidden files?", "b": "ls | -a, --all do not ignore entries starting with .",
         "label": 1, "kind": "man/option"},
    ]
    (mix / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (mix / "calib.jsonl").write_text(json.dumps(rows[0]) + "\n")
    (mix / "docs_heldout.jsonl").write_text("")
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["soft_targets.py", "--mix", str(mix), "--out", str(out), "--alpha", "0.5"])
    soft_targets.main()
    got = [json.loads(x) for x in (out / "train.jsonl").open()]
    assert 0.5 < got[0]["label"] < 1.0 and 0.0 < got[1]["label"] < 0.5
    assert got[0]["label"] > got[1]["label"] + 0.1  # the teacher ranks the answer above the non-answer
    assert got[2]["label"] == 1 and "hard" not in got[2]
    assert json.loads((out / "calib.jsonl").read_text())["label"] == 1
