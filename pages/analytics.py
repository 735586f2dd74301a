"""Feedback analytics: are answers cited, supported, helpful and fast — and which ones to look at."""

from __future__ import annotations

import datetime as dt
import json

import altair as alt
import pandas as pd
import streamlit as st

from pages.common import caller, friendly_errors, toast_and_rerun, workspace
from rag_core.feedback import FeedbackLog
from rag_core.gaps import MIN_JUDGED
from rag_core.render import escape_md

ws = workspace()
st.title("Feedback analytics")

me = caller()
log = FeedbackLog  # the frame helpers (pure functions of a frame)
# A user's analytics are their own answers (admins see everyone's); knowledge bases the caller
# cannot see are named "(hidden)".
if me.admin:  # alert rules that fire show first, before anything else on the page
    for rule in ws.firing_alerts(caller=me):
        st.error(escape_md(f"Alert: {rule.describe()}.").join((":material/notifications_active: ", "")))
if me.admin:
    with st.expander("Alert rules"):
        from rag_core.alerts import METRICS

        for rule in ws.alert_rules(caller=me):
            c1, c2 = st.columns([5, 1])
            state = "FIRING" if rule.firing else "ok"
            c1.markdown(escape_md(f"{state} · {rule.metric} > {rule.threshold} over {rule.window_minutes} min"
                                  + (f" · webhook {rule.webhook}" if rule.webhook else "")))
            if c2.button("Delete", key=f"del_rule_{rule.rule_id}"):
                ws.delete_alert_rule(rule.rule_id, caller=me)
                st.rerun()
        with st.form("new_rule", border=False):
            f1, f2, f3 = st.columns(3)
            metric = f1.selectbox("Measure", METRICS)
            threshold = f2.number_input("Threshold (ms, or a share 0–1 for rates)", 0.0, 1e7, 2000.0)
            window = f3.number_input("Window (minutes)", 1, 10080, 15)
            hook = st.text_input("Webhook URL (POSTed JSON when it fires and resolves)", "")
            if st.form_submit_button("Add rule"):
                with friendly_errors("Adding the rule"):
                    ws.add_alert_rule(metric, float(threshold), int(window), hook.strip(), caller=me)
                    st.rerun()
everything = ws.feedback_for(caller=me).frame()
for note in ws.query_log_notice(caller=me):  # what the query log keeps, so an absence reads right
    st.caption(escape_md(note).join((":material/visibility_off: ", "")))
if everything.empty:
    st.info("No answers yet. Ask something on the Chat page; ratings show up here.")
    st.stop()

# ---- filters -------------------------------------------------------------------------
first, last = everything["time"].min().date(), everything["time"].max().date()
f1, f2 = st.columns([1, 2])
picked = f1.date_input("Dates", value=(first, last), min_value=first, max_value=max(last, dt.date.today()))
dates = list(picked) if isinstance(picked, (tuple, list)) else [picked]  # one date while a range is being picked
start, end = (dates[0], dates[-1]) if dates else (first, last)
kb_options = sorted({k for ks in everything["kb_list"] for k in ks})
chosen = f2.multiselect("Knowledge bases", kb_options, placeholder="All knowledge bases")
df = log.select(everything, start, end, chosen)
if df.empty:
    st.warning("No answers in this date range for these knowledge bases.")
    st.stop()


def pct(v) -> str:
    return "—" if v is None or pd.isna(v) else f"{v:.0%}"


s = log.summary(df)
row1 = st.columns(5)
row1[0].metric("Answers", s["answers"])
row1[1].metric("Rated", s["rated"])
row1[2].metric("Helpful", pct(s["helpful_rate"]), help="Thumbs up among rated answers.")
row1[3].metric("Abstained", pct(s["abstention_rate"]),
               help="Answers withheld: no answer could be confirmed in the passages found (the closest are "
               "shown), or no passage was found at all.")
row1[4].metric("Mean confidence", pct(s["confidence_mean"]), help="Supported × answers the question, answered only.")
row2 = st.columns(5)
row2[0].metric("Citation coverage", pct(s["citation_coverage"]),
               help="Share of answer sentences whose citation the model wrote itself (the LLM, or the extractive "
               "answer). Citations the checker added to uncited sentences, or moved to the passage that supports "
               "them, are not counted here: see 'Cited by the checker'.")
row2[1].metric("Cited by the checker", pct(s["checker_citation_rate"]),
               help="Share of answer sentences the model left uncited (or cited wrongly) whose citation the "
               "citation checker placed.")
row2[2].metric("Unsupported sentences", pct(s["unsupported_rate"]),
               help="Share of answer sentences the verifier found no support for.")
row2[3].metric("Mean supported", pct(s["grounding_mean"]))
row2[4].metric("Mean answers the question", pct(s["answers_question_mean"]))
if s["citations_not_recorded"]:
    st.caption(f"{s['citations_not_recorded']} sentence(s) of older answers were logged before the app recorded who "
               "placed each citation: they are left out of both citation rates.")

# ---- over time -------------------------------------------------------------------------
st.subheader("Over time")
left, right = st.columns(2)
per_day = (df.assign(day=df["time"].dt.floor("D"), outcome=df["abstained"].map({True: "abstained", False: "answered"}))
           .groupby(["day", "outcome"]).size().rename("answers").reset_index())
COUNT = alt.Axis(format="d", tickMinStep=1)
DAY = alt.X("yearmonthdate(day):O", title=None, axis=alt.Axis(labelAngle=0))
left.altair_chart(
    alt.Chart(per_day, title="Answers per day", height=220).mark_bar().encode(
        x=DAY, y=alt.Y("answers:Q", title="answers", axis=COUNT),
        color=alt.Color("outcome:N", scale=alt.Scale(domain=["answered", "abstained"], range=["#4c78a8", "#bab0ac"])),
        tooltip=["yearmonthdate(day):T", "outcome:N", "answers:Q"]),
    width="stretch")
reasons = log.reasons(df)
if reasons.empty:
    right.caption("Thumbs-down reasons per day")
    right.info("No thumbs down in this range.")
else:
    right.altair_chart(
        alt.Chart(reasons, title="Thumbs-down reasons per day", height=220).mark_bar().encode(
            x=DAY, y=alt.Y("count:Q", title="thumbs down", axis=COUNT),
            color=alt.Color("reason:N", title="reason"), tooltip=["yearmonthdate(day):T", "reason:N", "count:Q"]),
        width="stretch")

# ---- moderation ----------------------------------------------------------------------
refused = df[df["refused"].notna()] if "refused" in df else df.iloc[0:0]
if not refused.empty:
    st.subheader("Refused by moderation")
    st.caption(f"{len(refused)} request(s) in this range asked for something harmful, or would have been answered "
               "with it, and were refused (the level is set per deployment, RAG_MODERATION, and per knowledge base).")
    by_cat = refused.groupby("refused").size().rename("refused").reset_index().rename(columns={"refused": "category"})
    by_cat.columns = ["category", "refused"]
    left, right = st.columns([1, 2])
    left.dataframe(by_cat, hide_index=True, width="stretch")
    right.dataframe(refused.sort_values("time", ascending=False)[["time", "kb", "refused", "question"]].head(50)
                    .rename(columns={"refused": "category"}), hide_index=True, width="stretch",
                    column_config={"question": st.column_config.TextColumn("question (as logged)")})

# ---- scores --------------------------------------------------------------------------
answered = df[~df["abstained"]]
if not answered.empty:
    cols = st.columns(3)
    for col, (field, title) in zip(cols, [("grounding", "Supported"), ("answers_question", "Answers the question"),
                                          ("confidence", "Confidence")]):
        values = answered[[field]].dropna()
        col.altair_chart(
            alt.Chart(values, title=f"{title} (answered)", height=180).mark_bar().encode(
                x=alt.X(f"{field}:Q", bin=alt.Bin(extent=[0, 1], step=0.1), title=None, axis=alt.Axis(format="%")),
                y=alt.Y("count():Q", title="answers", axis=COUNT), tooltip=["count():Q"]),
            width="stretch")

# ---- what decided ------------------------------------------------------------------------
decisions = log.decisions(df)
if not decisions.empty:
    st.subheader("What decided each answer")
    st.caption("The answer policy's rule for every answer shown or withheld (reader: the offline reader's "
               "evidence; model: the language model's answer; verification: no sentence confirmed in the sources).")
    st.dataframe(decisions, hide_index=True,
                 column_config={"helpful_rate": st.column_config.NumberColumn("helpful", format="percent")})

# ---- routes -----------------------------------------------------------------------------
routes = log.routes(df)
if not routes.empty:
    st.subheader("Routes")
    st.caption("What the planner chose for each question: search (passages), document (one document read as a "
               "whole) or compare (documents side by side); cached: answers served from the answer cache.")
    st.dataframe(routes, hide_index=True,
                 column_config={"helpful_rate": st.column_config.NumberColumn("helpful", format="percent"),
                                "p50_ms": st.column_config.NumberColumn("p50 ms", format="%d")})

# ---- latency ---------------------------------------------------------------------------
st.subheader("Latency per stage")
lat = log.latency(df, detail=False)
target = ws.settings.latency_target_ms
if not lat.empty:
    long = lat.melt(id_vars=["stage", "n"], value_vars=["p50_ms", "p95_ms"], var_name="quantile", value_name="ms")
    long["quantile"] = long["quantile"].str.replace("_ms", "")
    bars = alt.Chart(long).mark_bar().encode(
        y=alt.Y("stage:N", sort=alt.EncodingSortField("ms", op="max", order="descending"), title=None),
        x=alt.X("ms:Q", title="milliseconds"), yOffset="quantile:N",
        color=alt.Color("quantile:N", scale=alt.Scale(domain=["p50", "p95"], range=["#4c78a8", "#f58518"])),
        tooltip=["stage:N", "quantile:N", alt.Tooltip("ms:Q", format=".1f"), "n:Q"])
    rule = alt.Chart(pd.DataFrame({"ms": [target]})).mark_rule(color="red", strokeDash=[6, 4]).encode(x="ms:Q")
    label = alt.Chart(pd.DataFrame({"ms": [target], "text": [f"target {target:.0f} ms"]})).mark_text(
        color="red", align="left", dx=4, dy=-6, baseline="bottom").encode(x="ms:Q", text="text:N", y=alt.value(0))
    st.altair_chart((bars + rule + label).properties(title="p50 and p95 per stage; the red line is the "
                                                           "whole-answer target (RAG_LATENCY_TARGET_MS)"),
                    width="stretch")
    total = lat[lat["stage"] == "total"]
    if not total.empty:
        p95 = float(total["p95_ms"].iloc[0])
        (st.success if p95 <= target else st.warning)(f"Whole answer p95 {p95:.0f} ms against a target of {target:.0f} ms.")
    with st.expander("Every stage, with retrieval's sub-steps"):
        st.dataframe(log.latency(df).round(1), hide_index=True)

# ---- models, costs and errors ----------------------------------------------------------
st.subheader("Models, tokens and costs")
costs = log.costs(df, ws.settings.price_table)
if costs.empty:
    st.caption("No language model answered in this range (offline answers use no tokens).")
else:
    st.dataframe(costs, hide_index=True, column_config={
        "cost": st.column_config.NumberColumn("cost (US$)", format="%.4f",
                                              help="from RAG_LLM_PRICES (per million tokens in/out); empty: no price set")})
errors = log.stage_errors(df)
if not errors.empty:
    st.caption("Answers whose language-model call failed (they were composed offline instead):")
    st.dataframe(errors, hide_index=True)

# ---- knowledge bases -----------------------------------------------------------------
st.subheader("Per knowledge base")
kb = log.per_kb(df)
left, right = st.columns([1, 2])
left.altair_chart(
    alt.Chart(kb, title="Answers per knowledge base").mark_bar().encode(
        x=alt.X("answers:Q"), y=alt.Y("kb:N", sort="-x", title=None), tooltip=list(kb.columns)),
    width="stretch")
right.dataframe(kb.round(3), hide_index=True)


def show(rows: pd.DataFrame) -> None:
    for _, r in rows.iterrows():
        rating = {1.0: ":material/thumb_up:", -1.0: ":material/thumb_down:"}.get(r["rating"], "·")
        # another user's question (admins see everyone's): Markdown-escaped like any input
        with st.expander(f"{rating} {escape_md(r['question'][:100])}"):
            st.markdown("**Answer:** " + escape_md(r["answer"]))
            st.caption(f"supported {r['grounding']:.2f} · answers {r['answers_question']:.2f} · confidence "
                       f"{r['confidence']:.2f} · {escape_md(r['kb'])} · {r['time']:%Y-%m-%d %H:%M}")
            if isinstance(r["reason"], str) and r["reason"]:
                st.markdown("**Reason:** " + escape_md(r["reason"]))
            if isinstance(r["comment"], str) and r["comment"]:
                st.markdown("**Comment:** " + escape_md(r["comment"]))
            for cit in json.loads(r["citations"]):
                st.markdown(f"- [{cit['n']}] {escape_md(cit['source'])}, page {cit['page']}")


left, right = st.columns(2)
with left:
    st.subheader("Lowest rated")
    show(df[df["rating"] == -1].sort_values("time", ascending=False).head(10))
with right:
    st.subheader("Weakest answers")
    # Only answers that are not fully supported or were shown with low confidence, weakest first:
    # when every answer is fully supported, a "lowest grounded" list was an arbitrary ten.
    weak = answered[(answered["grounding"] < 1.0) | (answered["confidence"] < 0.5)]
    if weak.empty:
        st.caption("Every answer in this range is fully supported and was shown with confidence ≥ 50%.")
    else:
        show(weak.sort_values(["grounding", "confidence", "time"], ascending=[True, True, False]).head(10))

export = df.drop(columns=["ts", "kb_ids", "kb_list", "rated_ts"]).to_csv(index=False).encode()
st.download_button("Download these answers and feedback (CSV)", export, file_name="groundwork-feedback.csv",
                   mime="text/csv")

# ---- what is missing ---------------------------------------------------------------------
st.subheader("What to upload next")
st.caption("Questions the knowledge bases could not answer or whose answers were rated down, grouped by topic "
           + ("(everyone's: you are an admin). " if me.admin else "(your own questions). ")
           + "*nothing found*: no passage matched, the documents may lack the topic; *unconfirmed*: the closest "
           "passages were shown but no answer could be confirmed in them, so the topic may well be covered.")
report = ws.gap_report(df, caller=me)
prec = report["precision"]
if prec["precision_at_5"] is None:
    st.caption(f"Precision of cited passages: not enough feedback yet ({prec['judged_answers']} of the "
               f"{MIN_JUDGED} rated answers it needs: thumbs up, or thumbs down for 'wrong source' / "
               "'not in my documents').")
else:
    st.metric("Cited passages relevant (precision@5, from feedback)", f"{prec['precision_at_5']:.0%}",
              help=f"From {prec['judged_answers']} rated answers; 95% interval {prec['low']:.0%}–{prec['high']:.0%}.")
topics = report["topics"]
if topics.empty:
    st.caption("Nothing unanswered in this range.")
else:
    st.dataframe(topics, hide_index=True, width="stretch", column_config={
        "first": st.column_config.DatetimeColumn(format="YYYY-MM-DD"),
        "last": st.column_config.DatetimeColumn(format="YYYY-MM-DD")})
    st.download_button("Download the topics (CSV)", topics.to_csv(index=False).encode(),
                       file_name="groundwork-gaps.csv", mime="text/csv")
st.subheader("Needs a person")
follow = report["follow_ups"]
if follow.empty:
    st.caption("No rated-down answer with a comment and no topic abstained on repeatedly.")
else:
    st.dataframe(follow, hide_index=True, width="stretch")
    st.download_button("Download the follow-up list (CSV)", follow.to_csv(index=False).encode(),
                       file_name="groundwork-follow-ups.csv", mime="text/csv")

# ---- what feedback taught retrieval, and your data -----------------------------------------
learnt = ws.feedback_signals(caller=me)
if learnt:
    with st.expander(f"What feedback taught retrieval ({sum(r.active for r in learnt)} active records)",
                     icon=":material/school:"):
        st.caption("A thumbs up promotes the cited passages for similar questions; a thumbs down for 'wrong source' "
                   "or 'not in my documents' demotes them. The effect is bounded, fades over months and stays in "
                   "its knowledge base." + (" Admins can revert a record." if me.admin else ""))
        st.dataframe(pd.DataFrame([{"id": r.signal_id, "judgement": "promote" if r.judgement > 0 else "demote",
                                    "passage": r.chunk_id, "by": r.user, "when": pd.to_datetime(r.ts, unit="s"),
                                    "active": r.active} for r in learnt]), hide_index=True, width="stretch")
        if me.admin:
            rid = st.number_input("Record id to revert", min_value=0, step=1, value=0)
            if st.button("Revert record", disabled=rid == 0):
                ws.revert_feedback(caller=me, signal_id=int(rid))
                st.rerun()

with st.expander("Your data", icon=":material/privacy_tip:"):
    st.caption("Stored for each question: who asked, when, the question, the answer with its citations and scores, "
               "and your rating and comment. A knowledge base's owner may set a retention period after which these "
               "are deleted.")
    st.download_button("Download my data (JSON)", lambda: json.dumps(ws.export_user_data(me.user, caller=me),
                                                                      default=str, indent=1),
                       file_name="groundwork-my-data.json", mime="application/json", on_click="ignore")
    if st.button("Delete my logged questions", icon=":material/delete:"):
        n = ws.delete_my_questions(caller=me)
        toast_and_rerun(f"Deleted {n} logged question(s) and their feedback.")
