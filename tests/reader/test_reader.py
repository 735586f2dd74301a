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


# Behaviour, not today's numbers: which of two inputs scores higher. The thresholds that turn
# scores into decisions are chosen on held-out data (MODEL_CARD.md) and checked by the
# benchmarks; a retrained model may move every score and still pass these.

TOPICAL = [  # (question, title, the sentence that answers it, sentences on the topic that do not)
    ("When must the annual tax return be filed?", "Tax guide",
     "The annual tax return must be filed by 30 April of the following year.",
     ["The tax return rule: the precise rule is somewhat quirky and hard to find in the references.",
      "Tax returns can be filed online or on paper."]),
    ("Who designed the town hall?", "Town hall",
     "The town hall was designed by the architect Maria Lindqvist in 1932.",
     ["The town hall is a popular place for weddings and concerts.",
      "Town halls in the region are usually built of red brick."]),
    ("How long can books be borrowed?", "Library rules",
     "Books may be borrowed for 21 days and renewed twice.",
     ["The library has a large collection of books on local history.",
      "The library is closed on public holidays."]),
]


@pytest.mark.parametrize(("question", "title", "answer", "mentions"), TOPICAL, ids=["tax", "town-hall", "library"])
def test_the_sentence_that_answers_beats_ones_that_only_mention_the_topic(reader, question, title, answer, mentions):
    p = reader.answers(question, [answer, *mentions], [title] * (1 + len(mentions)))
    assert all(p[0] > x for x in p[1:]), p


def test_a_near_miss_question_is_not_answered_by_the_sentence(reader):
    sent = "The bridge over the Elbe was opened in 1898 by the city of Dresden."
    right = reader.answers("When was the bridge over the Elbe opened?", [sent], ["Dresden"])[0]
    wrong_city = reader.answers("When was the bridge over the Elbe opened by the city of Hamburg?", [sent], ["Dresden"])[0]
    negated = reader.answers("When was the bridge over the Elbe not opened?", [sent], ["Dresden"])[0]
    assert right > wrong_city and right > negated


SWAPS = [  # (source, the statement form "question: answer" that `verify` builds, the same with a wrong answer)
    ("The bridge over the Elbe was opened in 1898 by the city of Dresden.",
     "When was the bridge opened: 1898.", "When was the bridge opened: 1921."),
    ("The town hall was designed by the architect Maria Lindqvist in 1932.",
     "Who designed the town hall: Maria Lindqvist.", "Who designed the town hall: Peter Holm."),
    ("The town hall was designed by the architect Maria Lindqvist in 1932.",
     "When was the town hall designed: 1932.", "When was the town hall designed: 1975."),
    ("Books may be borrowed for 21 days and renewed twice.",
     "How long may books be borrowed: 21 days.", "How long may books be borrowed: 60 days."),
]


@pytest.mark.parametrize(("src", "stated", "swapped"), SWAPS, ids=["year", "name", "year-2", "duration"])
def test_supports_ranks_the_stated_fact_above_a_swapped_one(reader, src, stated, swapped):
    p = reader.supports([stated, swapped], [src, src])
    assert p[0] > p[1], p


def test_supports_ranks_a_claim_above_the_same_claim_against_a_source_without_it(reader):
    claim = "When was the bridge opened: 1898."
    holds = "The bridge over the Elbe was opened in 1898 by the city of Dresden."
    lacks = "The bridge over the Elbe is 300 metres long and carries a railway."
    p = reader.supports([claim, claim], [holds, lacks])
    assert p[0] > p[1], p


def test_a_reworded_claim_still_ranks_the_stated_fact_first(reader):
    src = "The bridge over the Elbe was opened in 1898 by the city of Dresden."
    p = reader.supports(["The bridge was opened in 1898.", "The bridge was opened in 1921."], [src] * 2)
    assert p[0] > p[1], p
