"""What the knowledge base is missing (rag_core/gaps.py): real workspace, real embedder and
reader (the abstentions are the system's own), the same access rule as the analytics page."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.gaps import precision_estimate
from rag_core.workspace import Workspace

OP = Caller.operator()
ANN = Caller.of("ann")
BOB = Caller.of("bob")
ADMIN = Caller.of("root", admin=True)

PARKING = ["Where can visitors park their car?", "Is there parking for visitors' cars?",
           "How much does car parking cost for visitors?"]
PENSION = ["How is the company pension calculated?", "When is the pension paid out?"]


@pytest.fixture
def ws(tmp_path):
    w = Workspace(get_settings(tmp_path / "data", llm_crag=False))
    w.create_kb("hr", caller=OP)
    (tmp_path / "leave.md").write_text("# Leave\n\nEmployees get 25 days of annual leave per year.\n")
    w.ingest("hr", [tmp_path / "leave.md"], caller=OP)
    yield w
    w.close()


def ask_and_log(ws, caller, q, rating=None, reason=None, comment=""):
    a = ws.ask(["hr"], q, caller=caller)
    fb = ws.feedback_for(caller=caller)
    qid = fb.log_answer(a, [ws.get_kb("hr", caller=caller).kb_id])
    if rating:
        fb.rate(qid, rating, comment, reason)
    return a


def test_unanswered_questions_grouped_by_topic_with_key_terms_and_counts(ws):
    for q in PARKING:
        assert ask_and_log(ws, ANN, q).abstained  # the documents do not say: the premise
    for q in PENSION:
        ask_and_log(ws, ANN, q)
    ask_and_log(ws, ANN, "How many days of annual leave do employees get?", rating=1)  # answered: not a gap
    topics = ws.gap_report(caller=ANN)["topics"]
    assert topics["questions"].tolist()[:2] == [3, 2]
    assert "parking" in topics.loc[0, "topic"] or "visitors" in topics.loc[0, "topic"]
    assert "pension" in topics.loc[1, "topic"]
    assert topics.loc[0, "abstained"] == 3 and topics["questions"].sum() == 5
    assert topics.loc[0, "first"] <= topics.loc[0, "last"]
    assert "annual leave" not in " ".join(topics["examples"])


def test_a_user_never_sees_another_users_questions_admin_sees_all(ws):
    ask_and_log(ws, BOB, "What is the secret merger code name?")
    ask_and_log(ws, ANN, PARKING[0])
    mine = ws.gap_report(caller=ANN)
    text = mine["topics"].to_csv() + mine["follow_ups"].to_csv()
    assert "merger" not in text and "park their car" in text
    assert "merger" in ws.gap_report(caller=ADMIN)["topics"].to_csv()


def test_precision_from_feedback_and_follow_ups(ws):
    ask_and_log(ws, ANN, "How many days of annual leave do employees get?", rating=1)
    ask_and_log(ws, ANN, "How many leave days are there per year?", rating=-1, reason="wrong source",
                comment="this is the old handbook")
    ask_and_log(ws, ANN, "Annual leave for employees?", rating=-1, reason="incomplete")  # says nothing of passages
    for q in PARKING:
        ask_and_log(ws, ANN, q)
    rep = ws.gap_report(caller=ANN)
    p = rep["precision"]
    # two judged answers are too few to show a precision (one thumbs up read "100%")
    assert p["judged_answers"] == 2 and p["precision_at_5"] is None
    why = rep["follow_ups"]["why"].tolist()
    assert any(w.startswith("rated down: wrong source") for w in why)
    assert any(w.startswith("abstained 3×") for w in why)
    assert "this is the old handbook" in rep["follow_ups"]["comment"].tolist()


def test_precision_needs_ten_judged_answers_and_comes_with_its_interval():
    import pandas as pd

    def frame(ups: int, downs: int) -> pd.DataFrame:
        return pd.DataFrame({"rating": [1] * ups + [-1] * downs + [-1], "abstained": [False] * (ups + downs + 1),
                             "reason": [None] * ups + ["wrong source"] * downs + ["incomplete"]})

    assert precision_estimate(frame(5, 4))["precision_at_5"] is None  # 9 judged; "incomplete" says nothing
    p = precision_estimate(frame(6, 4))
    assert p["judged_answers"] == 10 and p["precision_at_5"] == 0.6 and 0.25 < p["low"] < 0.6 < p["high"] < 0.9


def test_the_gap_topics_tell_nothing_found_from_unconfirmed():
    import pandas as pd

    from rag_core.gaps import gap_topics

    qs = ["How do I tune the ferry schedule?", "Ferry schedule tuning?", "What is the ferry schedule?"]
    df = pd.DataFrame({"question": qs, "abstained": [True, True, True], "rating": [None] * 3,
                       "decided_by": ["retrieval", "reader", "reader_language"], "ts": [1, 2, 3],
                       "time": pd.to_datetime([1, 2, 3], unit="s"), "kb_list": [["k"]] * 3})
    row = gap_topics(df, lambda texts: [[1.0, 0.0]] * len(texts)).iloc[0]
    assert (row["abstained"], row["nothing_found"], row["unconfirmed"]) == (3, 1, 2)


def test_precision_estimate_without_feedback_is_unknown_not_zero():
    import pandas as pd

    assert precision_estimate(pd.DataFrame())["precision_at_5"] is None


def test_analytics_page_shows_the_gap_report(tmp_path, monkeypatch):
    import streamlit as st
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    data = tmp_path / "data"
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    monkeypatch.chdir(repo)
    st.cache_resource.clear()
    w = Workspace(get_settings(data))
    w.create_kb("hr", caller=OP)
    (tmp_path / "leave.md").write_text("# Leave\n\nEmployees get 25 days of annual leave per year.\n")
    w.ingest("hr", [tmp_path / "leave.md"], caller=OP)
    for q in PARKING:
        ask_and_log(w, OP, q)
    w.close()
    at = AppTest.from_file(str(repo / "streamlit_app.py"), default_timeout=120).run()
    at.switch_page("pages/analytics.py").run()
    assert not at.exception
    assert "What to upload next" in [h.value for h in at.subheader]
    frames = [df.value for df in at.dataframe]
    assert any("topic" in f.columns and f["questions"].tolist()[:1] == [3] for f in frames)
    st.cache_resource.clear()


def test_the_labelled_topics_are_grouped_without_mixing_two(tmp_path):
    """The clustering at the shipped line, with the real embedder, on the benchmark's labelled
    test topics (benchmarks/data/topic_questions.jsonl, in the repo): no group mixes two topics
    (purity 1.0, as benchmarks/topic_purity.py measures), and most topics stay whole."""
    import json
    from pathlib import Path

    import numpy as np

    from rag_core.embeddings import get_embedder
    from rag_core.gaps import SIM, _cluster

    data = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "topic_questions.jsonl"
    rows = [json.loads(x) for x in data.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r["split"] == "test"]
    vecs = np.asarray(get_embedder(get_settings(tmp_path / "d")).embed_array([r["question"] for r in rows]))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    groups = _cluster(vecs, SIM)
    mixed = {g for g in groups if len({r["topic"] for r, h in zip(rows, groups) if h == g}) > 1}
    assert not mixed
    assert len(set(groups)) <= len({r["topic"] for r in rows}) + 4  # paraphrases mostly join
