"""Mixed use over the HTTP API (issue 51, part 3): the suite's two-minute version of
benchmarks/soak.py (the hour is the benchmark). Eight simulated users ask (cache on and off),
follow up in threads, rate, upload real PDFs (and unreadable ones), re-ingest a changed file,
delete, while an administrator flips one user's access to a knowledge base; then the folder is
reopened and checked. Plus the checks themselves, shown to catch what they are for."""

from __future__ import annotations

import time

from benchmarks.soak import Log, User, bad_files, run
from tests.helpers import make_pdf

TOPICS = [
    ("harbour", "The harbour opens at six in the morning.\nFerries leave every hour for the island."),
    ("library", "The library lends books for three weeks.\nA late book costs ten cents a day."),
    ("garden", "The garden is watered at dawn.\nRoses are pruned in March."),
    ("station", "Trains to the city leave from platform two.\nThe ticket office closes at nine."),
]


def pdfs(tmp_path):
    out = []
    for name, text in TOPICS:
        p = tmp_path / f"{name}.pdf"
        p.write_bytes(make_pdf([f"{name.title()} rules\n{text}", f"More about the {name}.\n{text}"]))
        out.append(p)
    return out


def test_two_minutes_of_mixed_use_lose_nothing_and_leak_nothing(tmp_path):
    r = run(2.0, 8, pdfs(tmp_path), bad_files(None), tmp_path / "soak", window_s=60, flip_s=10, progress=lambda _: None)
    assert r["errors"] == 0, r["error_samples"]
    assert r["violations"] == 0, r["violation_samples"]
    by_op = {}
    for w in r["windows"]:
        for op, v in w["by_op"].items():
            by_op[op] = by_op.get(op, 0) + v["n"]
    # the mix really ran: every kind of operation, and the access flips and deletes were checked
    assert {"ask", "follow-up", "rate", "upload", "reingest", "delete", "admin"} <= set(by_op), by_op
    assert r["board_flips"] >= 4 and r["acknowledged_deletes"] > 0 and r["ratings"] > 0
    fds_start, fds_end = r["fds_start_end"]
    assert fds_end <= fds_start + 5  # no handle left open per request
    assert max(w["db_files_max"] for w in r["windows"]) <= min(w["db_files_max"] for w in r["windows"]) + 2


class _Resp:
    def __init__(self, body):
        self.status_code, self._body, self.text = 200, body, ""

    def json(self):
        return self._body


def _user(log: Log, i: int = 1) -> User:
    return User(i, "http://127.0.0.1:9", "k", log, [], [], until=0, seed=0)


def test_the_checks_catch_a_deleted_document_and_a_hidden_knowledge_base():
    log = Log()
    u1, u2 = _user(log, 1), _user(log, 2)
    log.deleted["d-old"] = log.now()
    time.sleep(0.01)
    start = log.now()
    u1.check_answer({"citations": [{"doc_id": "d-old", "source": "u1-3-a.pdf"}], "closest": []}, start, start + 1)
    assert len(log.violations) == 1 and "deleted" in log.violations[0]["what"]
    u2.check_answer({"citations": [], "closest": [{"doc_id": "x", "source": "u1-4-b.pdf"}]}, start, start + 1)
    assert "another user's" in log.violations[-1]["what"]
    u2.check_answer({"citations": [{"doc_id": "y", "source": "board-minutes.pdf"}]}, start, start + 1)
    assert "board" in log.violations[-1]["what"]  # u2 never may read board
    n = len(log.violations)
    u1.check_answer({"citations": [{"doc_id": "y", "source": "board-minutes.pdf"}]}, start, start + 1)
    assert len(log.violations) == n  # u1 may, until a revocation is acknowledged
    log.board.append((start + 2, start + 3, False))
    u1.check_answer({"citations": [{"doc_id": "y", "source": "board-minutes.pdf"}]}, start + 2.5, start + 4)
    assert len(log.violations) == n  # the revocation was in flight: either answer is right
    u1.check_answer({"citations": [{"doc_id": "y", "source": "board-minutes.pdf"}]}, start + 5, start + 6)
    assert len(log.violations) == n + 1  # acknowledged before the question: a violation
    log.board.append((start + 7, start + 8, True))
    u1.check_answer({"citations": [{"doc_id": "y", "source": "board-minutes.pdf"}]}, start + 6.5, start + 7.5)
    assert len(log.violations) == n + 1  # the grant was sent while the question was in flight
    # a 404 for "board" is right only if u1's access was revoked at some moment of the question
    assert log.board_states(start, start + 1) == {True}
    assert log.board_states(start + 2.5, start + 4) == {True, False}
    assert log.board_states(start + 5, start + 6) == {False}
    assert log.board_states(start + 9, start + 10) == {True}
