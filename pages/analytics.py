"""Feedback analytics: how helpful, how grounded, how fast — and the answers to look at."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from pages.common import workspace
from rag_core.render import escape_md

ws = workspace()
st.title("Feedback analytics")

log = ws.feedback
df = log.frame({kb.kb_id: kb.name for kb in ws.list_kbs()})
if df.empty:
    st.info("No answers yet. Ask something on the Chat page; ratings show up here.")
    st.stop()

s = log.summary(df)
c = st.columns(6)
c[0].metric("Answers", s["answers"])
c[1].metric("Rated", s["rated"])
c[2].metric("Helpful", f"{s['helpful_rate']:.0%}" if s["helpful_rate"] is not None else "—")
c[3].metric("Abstained", f"{s['abstention_rate']:.0%}")
c[4].metric("Mean supported", f"{s['grounding_mean']:.0%}" if s["grounding_mean"] is not None else "—")
c[5].metric("Mean answers the question",
            f"{s['answers_question_mean']:.0%}" if s["answers_question_mean"] is not None else "—")

st.subheader("Over time")
daily = log.daily(df)
left, right = st.columns(2)
left.caption("Answers per day")
left.bar_chart(daily["answers"])
right.caption("Helpful rate per day")
right.line_chart(daily["helpful_rate"])


def histogram(values: pd.Series) -> pd.DataFrame:
    counts, edges = np.histogram(values.dropna(), bins=10, range=(0, 1))
    return pd.DataFrame({"count": counts}, index=[f"{e:.1f}" for e in edges[:-1]])


answered = df[~df["abstained"]]
left, mid, right = st.columns(3)
left.caption("Supported (grounding score, answered)")
left.bar_chart(histogram(answered["grounding"]))
mid.caption("Answers the question (answered)")
mid.bar_chart(histogram(answered["answers_question"]))
right.caption("Confidence (answered)")
right.bar_chart(histogram(answered["confidence"]))

st.subheader("Latency per stage")
st.dataframe(log.latency(df).round(1), hide_index=True)

st.subheader("Per knowledge base")
st.dataframe(log.per_kb(df).round(3), hide_index=True)


def show(rows: pd.DataFrame) -> None:
    for _, r in rows.iterrows():
        rating = {1.0: ":material/thumb_up:", -1.0: ":material/thumb_down:"}.get(r["rating"], "·")
        with st.expander(f"{rating} {r['question'][:100]}"):
            st.markdown("**Answer:** " + escape_md(r["answer"]))
            st.caption(f"supported {r['grounding']:.2f} · answers {r['answers_question']:.2f} · confidence {r['confidence']:.2f} · {r['kb']} · {r['time']:%Y-%m-%d %H:%M}")
            if isinstance(r["comment"], str) and r["comment"]:
                st.markdown("**Comment:** " + escape_md(r["comment"]))
            for cit in json.loads(r["citations"]):
                st.markdown(f"- [{cit['n']}] {escape_md(cit['source'])}, page {cit['page']}")


left, right = st.columns(2)
with left:
    st.subheader("Lowest rated")
    show(df[df["rating"] == -1].sort_values("time", ascending=False).head(10))
with right:
    st.subheader("Lowest grounded")
    show(answered.sort_values("grounding").head(10))

export = df.drop(columns=["ts", "kb_ids"]).to_csv(index=False).encode()
st.download_button("Download all answers and feedback (CSV)", export, file_name="groundwork-feedback.csv", mime="text/csv")
