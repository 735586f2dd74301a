"""Chat: questions in, verified and cited answers out, with feedback on every answer."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.common import friendly_errors, identity, selected_kbs, workspace
from rag_core.models import Answer
from rag_core.render import answer_segments, escape_md

ws = workspace()
st.title("Chat with your documents")
kbs = selected_kbs()
if not kbs:
    st.info("Create a knowledge base and upload documents on the **Upload** page, then ask away.")
    st.stop()
st.caption("Answering from: " + ", ".join(f"**{escape_md(n)}**" for n in kbs))

messages: list[dict] = st.session_state.setdefault("messages", [])

LABEL_STYLE = {"supported": "", "partial": "orange", "unsupported": "red"}


def badge(answer: Answer) -> str:
    """Two honest scores and the confidence derived from them (grounding/verify.py)."""
    g, q, c = answer.grounding_score, answer.answers_question, answer.confidence

    def col(v: float) -> str:
        return "green" if v >= 0.7 else "orange" if v >= 0.4 else "red"

    return (f":{col(g)}-background[Supported {g:.0%}] :{col(q)}-background[Answers the question {q:.0%}] "
            f":{col(c)}-background[Confidence {c:.0%}] · {answer.mode}")


def render_answer(answer: Answer, query_id: str | None, idx: int) -> None:
    if answer.models.get("llm_error"):
        st.warning(escape_md(answer.models["llm_error"]))
    if answer.abstained:
        st.info(answer.text)
        st.caption("Why: " + escape_md(answer.reason))
        for s in answer.suggestions:
            st.markdown(f"- {escape_md(s)}")
    else:
        parts = []
        for md, label in answer_segments(answer):
            color = LABEL_STYLE.get(label, "")
            parts.append(f":{color}[{md} :material/warning:]" if color else md)
        st.markdown(" ".join(parts))
        st.caption(badge(answer) + ("  ·  :material/warning: marks sentences the sources do not fully support" if any(
            c.label != "supported" for c in answer.claims) else ""))
        with st.expander(f"Sources ({len(answer.citations)})"):
            for c in answer.citations:
                st.markdown(f"**[{c.n}] {escape_md(c.source)}**, page {c.page}"
                            + (f" · {escape_md(c.section)}" if c.section else ""))
                st.markdown("> " + escape_md(" ".join(c.snippet.split())))
                cols = st.columns([1, 1, 4])
                if cols[0].toggle("In context", key=f"ctx_{idx}_{c.n}"):
                    for ch in ws.store.document_chunks(c.kb_id, c.doc_id):
                        if abs(ch.ordinal - int(c.chunk_id.rsplit("#", 1)[-1])) <= 1:
                            st.text(ch.text)
                doc = ws.appdb.get_document(c.kb_id, c.doc_id)
                if doc and doc.stored_path and Path(doc.stored_path).exists():
                    cols[1].download_button("Original", Path(doc.stored_path).read_bytes(), file_name=doc.source,
                                            key=f"dl_{idx}_{c.n}")
    with st.expander("Timing details"):
        st.dataframe({k: [v] for k, v in answer.timings_ms.items()}, hide_index=True)
    if query_id:
        saved = ws.feedback.rating_of(query_id)
        fb = st.feedback("thumbs", key=f"fb_{query_id}")
        if fb is not None:
            rating = 1 if fb == 1 else -1
            if not saved or saved[0] != rating:
                ws.feedback.rate(query_id, rating, saved[1] if saved else "")
                saved = (rating, saved[1] if saved else "")
        if saved:
            with st.popover("Add a comment" if not saved[1] else "Edit comment"):
                text = st.text_area("What was good or wrong?", value=saved[1], key=f"cm_{query_id}", max_chars=2000)
                if st.button("Save comment", key=f"cms_{query_id}"):
                    ws.feedback.rate(query_id, saved[0], text)
                    st.toast("Thanks — feedback saved.")


for i, m in enumerate(messages):
    with st.chat_message(m["role"]):
        if m["role"] == "user":
            st.markdown(escape_md(m["content"]))
        else:
            render_answer(m["answer"], m.get("query_id"), i)

question = st.chat_input("Ask a question about your documents")
if question:
    messages.append({"role": "user", "content": question})
    with st.chat_message("user"):
        st.markdown(escape_md(question))
    with st.chat_message("assistant"):
        user, groups = identity()
        history = [(m["role"], m["content"] if m["role"] == "user" else m["answer"].text) for m in messages[:-1]]
        with friendly_errors("Answering"):
            req = ws.answer_request(kbs, question, history=history, user=user, groups=groups)
            final: dict = {}

            def tokens():
                for ev in ws.answers.stream(req):
                    if ev["type"] == "token":
                        yield escape_md(ev["text"])
                    else:
                        final["answer"] = ev["answer"]

            placeholder = st.empty()
            with placeholder.container():
                st.write_stream(tokens())
            placeholder.empty()
            answer = final["answer"]
            kb_ids = [ws.get_kb(n).kb_id for n in kbs]
            qid = ws.feedback.log_answer(answer, kb_ids, user)
            messages.append({"role": "assistant", "content": answer.text, "answer": answer, "query_id": qid})
            render_answer(answer, qid, len(messages) - 1)
