"""The reader/judge model that ships in the repo: integrity, offline load, determinism, and
behaviour on small examples written for this test (none of them from its training data)."""

from __future__ import annotations

import json
import shutil
import socket

import numpy as np
import pytest

from rag_core.reader import META_FILE, MODEL_FILE, Reader, ReaderIntegrityError, file_sha256, get_reader


@pytest.fixture(scope="module")
def reader():
    return get_reader()


def test_model_file_is_small_and_matches_its_recorded_sha256():
    assert MODEL_FILE.stat().st_size <= 25 * 1024 * 1024
    assert file_sha256(MODEL_FILE) == json.loads(META_FILE.read_text())["sha256"]
    card = (MODEL_FILE.parent / "MODEL_CARD.md").read_text()
    assert json.loads(META_FILE.read_text())["sha256"] in card  # the card names the file it describes


def test_a_changed_model_file_refuses_to_load(tmp_path):
    bad = tmp_path / "reader-int8.onnx"
    shutil.copy(MODEL_FILE, bad)
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(ReaderIntegrityError, match="sha256"):
        Reader(model_file=bad)


def test_loads_and_scores_with_the_network_cut(monkeypatch):
    def no_network(*a, **k):
        raise OSError("network use is not allowed in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    r = Reader()
    assert r.answers("When was it founded?", ["It was founded in 1636."]).shape == (1,)


def test_scores_are_deterministic_whatever_else_is_read(reader):
    q = "How long does the Moon take to orbit the Earth?"
    sents = ["The Moon orbits the Earth every 27.3 days.", "Its surface is covered in regolith.",
             "Tides are caused mainly by the Moon's gravity and are strongest at new and full moon."]
    a = reader.answers(q, sents, ["Moon"] * 3)
    b = reader.answers(q, sents, ["Moon"] * 3)
    assert np.array_equal(a, b)
    alone = reader.answers(q, sents[:1], ["Moon"])
    assert alone[0] == a[0]  # a pair's score does not depend on the other pairs of the call
    assert np.all((a > 0) & (a < 1))


def test_the_sentence_that_answers_beats_ones_that_only_mention_the_topic(reader):
    q = "When must the annual tax return be filed?"
    answer = "The annual tax return must be filed by 30 April of the following year."
    mention = "The tax return rule: the precise rule is somewhat quirky and hard to find in the references."
    other = "Tax returns can be filed online or on paper."
    p = reader.answers(q, [answer, mention, other], ["Tax guide"] * 3)
    assert p[0] > 0.5
    assert p[0] > p[1] + 0.3 and p[0] > p[2] + 0.2


def test_a_near_miss_question_is_not_answered_by_the_sentence(reader):
    sent = "The bridge over the Elbe was opened in 1898 by the city of Dresden."
    right = reader.answers("When was the bridge over the Elbe opened?", [sent], ["Dresden"])[0]
    wrong_city = reader.answers("When was the bridge over the Elbe opened by the city of Hamburg?", [sent], ["Dresden"])[0]
    negated = reader.answers("When was the bridge over the Elbe not opened?", [sent], ["Dresden"])[0]
    assert right > 0.5
    assert right > wrong_city and right > negated


def test_supports_separates_a_stated_fact_from_a_swapped_one(reader):
    src = "The bridge over the Elbe was opened in 1898 by the city of Dresden."
    # the statement form "question: answer" (what `verify` builds for short answers)
    p = reader.supports(["When was the bridge opened: 1898.", "When was the bridge opened: 1921."], [src] * 2)
    assert p[0] > 0.6 > 0.3 > p[1]
    # a reworded claim: weaker, but the stated fact still outranks the swapped one
    q = reader.supports(["The bridge was opened in 1898.", "The bridge was opened in 1921."], [src] * 2)
    assert q[0] > q[1]
