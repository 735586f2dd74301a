"""Chat: questions in, verified and cited answers out, each citation one click from the page
it came from, and feedback on every answer.

Reruns stay light: an answer on screen is drawn from what is already in session state. Files,
page images and neighbouring passages are fetched only when a person opens a source."""

from __future__ import annotations

import contextvars
import dataclasses
import datetime
import html
import queue
import threading
import time

import streamlit as st

from pages.common import caller, friendly_errors, selected_kbs, workspace
from rag_core.citation_view import highlight_band
from rag_core.errors import GroundworkError
from rag_core.generation.kit import AnswerCancelled
from rag_core.generation.steps import AnswerOptions
from rag_core.inference import run_for
from rag_core.feedback import REASONS
from rag_core.models import conflict_note
from rag_core.text.language import name as language_name
from rag_core.text.language import question_language
from rag_core.models import Answer, Citation
from rag_core.render import (answer_markdown, citation_place, closest_heading, decision_line, draft_markdown, escape_md,
                             marker_text, passage_markdown, plain_answer, timing_markdown)
from rag_core.text import messages as ui_text

ws = workspace()
me = caller()
convs = ws.conversations(caller=me)
feedback_log = ws.feedback_for(caller=me)  # this user's answers only
kbs = selected_kbs()
head, new_chat = st.columns([6, 1], vertical_alignment="bottom")
head.title("Chat with your documents")
if not kbs:
    st.info("Create a knowledge base and upload documents on the **Upload** page, then ask away.")
    st.stop()

# ---- saved conversations: the current thread's messages, loaded once per switch ----------
if "thread_id" not in st.session_state:
    # A new session (a reload, a new tab) reopens the last conversation instead of an empty
    # chat; "New chat" sets thread_id to None, which this leaves alone.
    recent = convs.list()
    st.session_state.thread_id = recent[0].thread_id if recent else None
tid = st.session_state.get("thread_id")
if st.session_state.get("loaded_thread", "none") != tid:
    try:
        loaded = convs.messages(tid) if tid else []
    except GroundworkError:  # deleted meanwhile, or not this user's
        loaded, tid = [], None
        st.session_state.thread_id = None
    for m in loaded:
        if m.get("query_id"):
            m["rating"] = feedback_log.rating_of(m["query_id"])
    st.session_state.messages = loaded
    st.session_state.loaded_thread = tid
messages: list[dict] = st.session_state.setdefault("messages", [])


def start_new_chat() -> None:
    st.session_state.messages = []
    st.session_state.thread_id = st.session_state.loaded_thread = None
    st.session_state.pop("pending_question", None)


def open_thread(thread_id: str) -> None:
    st.session_state.thread_id = thread_id
    st.session_state.pop("pending_question", None)
    # the conversation's knowledge bases come with it (issue 50: the sidebar kept the previous
    # ones, so a follow-up went to other documents); a callback may still set the widget's state
    try:
        names = ws.thread_kbs(thread_id, caller=me)
    except GroundworkError:
        return
    if names:
        st.session_state.selected_kbs = names


# The conversation list is drawn last, into this slot, so a thread started by this run's
# question is already in it.
conversations_slot = st.sidebar.container()


def conversations() -> None:
    tid = st.session_state.get("thread_id")
    with conversations_slot:
        st.markdown("**Conversations**")
        saved = convs.list()
        if not saved:
            st.caption("Your conversations are saved here.")
        for t in saved[:30]:
            # a title is the user's first question (or their rename): Markdown-escaped like any input
            when = time.strftime("%d %b %H:%M", time.localtime(t.updated))
            asked = (t.messages + 1) // 2  # a question and its answer
            st.button(f"{escape_md(t.title)} · {when} · {asked} question{'s' if asked != 1 else ''}",
                      help=f"{t.messages} messages, last {when}", key=f"th_{t.thread_id}", on_click=open_thread,
                      args=(t.thread_id,), width="stretch",
                      type="primary" if t.thread_id == tid else "tertiary", icon=":material/chat:")
        if tid:
            with st.popover("This conversation", icon=":material/more_horiz:", width="stretch"):
                current = next((t.title for t in saved if t.thread_id == tid), "")
                name = st.text_input("Name", current, key=f"rename_{tid}", max_chars=120)
                if st.button("Rename", key=f"do_rename_{tid}") and name.strip():
                    with friendly_errors("Renaming"):
                        convs.rename(tid, name)
                        st.rerun()
                st.download_button("Export as Markdown", data=lambda: convs.markdown(tid),
                                   file_name=f"{current[:40] or 'conversation'}.md", mime="text/markdown",
                                   on_click="ignore", icon=":material/download:")
                if st.button("Delete conversation", key=f"del_{tid}", icon=":material/delete:"):
                    with friendly_errors("Deleting"):
                        convs.delete(tid)
                        start_new_chat()
                        st.rerun()


new_chat.button("New chat", icon=":material/add_comment:", on_click=start_new_chat,
                help="Start a new conversation (this one stays in the list on the left).")

# ---- scope: the selected knowledge bases, optionally only some of their documents ------
listed = [(d, kb) for kb in kbs for d in ws.list_documents(kb, caller=me)]
docs = {d.doc_id: (d.source, kb) for d, kb in listed}
drafts = sum(d.trust == "draft" for d, _ in listed)
if "scope_docs" in st.session_state:  # documents of a knowledge base no longer selected drop out
    st.session_state.scope_docs = [d for d in st.session_state.scope_docs if d in docs]
scope_col, after_col, before_col = st.columns([3, 1, 1])
scope = scope_col.multiselect(
    "Ask only in these documents", list(docs), key="scope_docs", placeholder="All documents",
    format_func=lambda d: f"{docs[d][0]} · {docs[d][1]}" if len(kbs) > 1 else docs[d][0],
    help="Leave empty to search every document of the selected knowledge bases.",
)
# Document dates (from the file's metadata, else the upload day; editable on the Upload page).
_FAR = {"min_value": datetime.date(1900, 1, 1), "max_value": datetime.date(2100, 12, 31)}
after = after_col.date_input("Only documents after", value=None, key="scope_after", format="YYYY-MM-DD", **_FAR,
                             help="Keep documents dated on or after this day (empty: no limit).")
before = before_col.date_input("Only documents before", value=None, key="scope_before", format="YYYY-MM-DD", **_FAR,
                               help="Keep documents dated on or before this day (empty: no limit).")
after = after.isoformat() if after else None
before = before.isoformat() if before else None
# Documents an owner marked draft stay out of answers unless asked for (shown only when there are some).
include_drafts = drafts > 0 and st.toggle(f"Include drafts ({drafts})", key="include_drafts",
                                          help="Answer from documents marked draft on the Upload page too.")
st.caption("Answering from: " + ", ".join(f"**{escape_md(n)}**" for n in kbs)
           + (f" · only {len(scope)} chosen document(s)" if scope else "")
           + (" · drafts included" if include_drafts else f" · {drafts} draft(s) left out" if drafts else "")
           + (f" · dated {after or '…'} to {before or '…'}" if after or before else ""))
if (share := ws.indexing_progress(kbs, caller=me)) is not None:
    st.caption(f":material/hourglass_top: indexing {share:.0%} — new documents are searchable by their words "
               "already; answers may improve as their vectors are computed.")


def badge(answer: Answer) -> str:
    """Two honest scores and the confidence derived from them (grounding/verify.py)."""
    g, q, c = answer.grounding_score, answer.answers_question, answer.confidence

    def col(v: float) -> str:
        return "green" if v >= 0.7 else "orange" if v >= 0.4 else "red"

    if q is None and answer.route in ("document", "compare"):  # the reader scores sentences, not outlines
        return (f":{col(g)}-background[Supported {g:.0%}] :gray-background[Answers the question: not judged "
                f"(a whole-document answer)] :{col(c)}-background[Confidence {c:.0%}, from support alone] "
                f"· {answer.mode}")
    if q is None:  # the reader does not read the question's language: say so, never a number
        return (f":{col(g)}-background[Supported {g:.0%}] :gray-background[Answers the question: not judged "
                f"({language_name(answer.language)})] :{col(c)}-background[Confidence {c:.0%}, from support alone] "
                f"· {answer.mode}")
    return (f":{col(g)}-background[Supported {g:.0%}] :{col(q)}-background[Answers the question {q:.0%}] "
            f":{col(c)}-background[Confidence {c:.0%}] · {answer.mode}")


@st.dialog("Source", width="large")
def show_source(c: Citation, as_citation: bool = True) -> None:
    """The cited page with the passage highlighted; for non-PDF sources the passage in its
    surrounding text. Access is checked again here: a citation object alone opens nothing."""
    page_key = f"viewer_page_{c.chunk_id}"
    with friendly_errors("Opening the source"):
        doc = ws.accessible_document(c.kb_id, c.doc_id, caller=me)
        st.markdown(f"**{marker_text([c.n]) + ' ' if as_citation else ''}{escape_md(c.source)}**"
                    + (f" · {escape_md(c.section)}" if c.section else "")
                    + (f" · dated {doc.date}" if doc.date else ""))
        view = ws.cited_page(c, st.session_state.get(page_key), caller=me)
        if view is not None:
            st.session_state[page_key] = view.page

            def go(page: int) -> None:
                st.session_state[page_key] = page

            prev, label, nxt = st.columns([1, 2, 1], vertical_alignment="center")
            prev.button("Previous page", icon=":material/chevron_left:", disabled=view.page <= 1,
                        on_click=go, args=(view.page - 1,), key=f"prev_{c.chunk_id}")
            label.markdown(f"Page **{view.page}** of {view.pages}")
            nxt.button("Next page", icon=":material/chevron_right:", disabled=view.page >= view.pages,
                       on_click=go, args=(view.page + 1,), key=f"next_{c.chunk_id}")
            if view.span[1] > view.span[0]:
                st.caption(f"The passage runs over pages {view.span[0]}–{view.span[1]}.")
            if view.ocr:
                st.caption(":material/document_scanner: A scanned page: its text was read by OCR and may hold "
                           "misreadings; the highlight is placed on the OCR's text lines.")
            elif not view.has_text_layer:
                st.caption("This page has no text layer and OCR is off, so the passage cannot be marked on it.")
            elif not view.boxes:
                st.caption("The cited words are not on this page.")
            band = highlight_band(view)
            if band is not None:  # the cited lines first, in view; the page below for context
                st.image(band, width="stretch", output_format="PNG", caption="The cited lines",
                         alt=f"The cited lines on page {view.page} of {c.source}, highlighted")
                with st.expander(f"Whole page {view.page}"):
                    st.image(view.png, width="stretch", output_format="PNG",
                             alt=f"Page {view.page} of {c.source}, the cited passage highlighted")
            else:
                st.image(view.png, width="stretch", output_format="PNG", alt=f"Page {view.page} of {c.source}")
        elif (code := ws.cited_code(c, caller=me)) is not None:  # the title line names the definition's lines
            st.code(code[1], language=code[0], line_numbers=True)
        else:
            segments = ws.cited_context(c, caller=me)
            body = "".join(f"<mark>{html.escape(t)}</mark>" if hit else html.escape(t) for t, hit in segments)
            st.markdown(f"<div style='white-space: pre-wrap; max-height: 60vh; overflow-y: auto'>{body}</div>",
                        unsafe_allow_html=True)
        st.download_button("Download original", data=lambda: ws.original_bytes(c.kb_id, c.doc_id, caller=me),
                           file_name=doc.source, on_click="ignore", icon=":material/download:",
                           disabled=not doc.stored_path)


def regenerate() -> None:
    """Ask the last question again in place of its answer (in the saved thread too)."""
    dropped = 0
    if messages and messages[-1]["role"] == "assistant":
        messages.pop()
        dropped += 1
    if messages and messages[-1]["role"] == "user":
        st.session_state.pending_question = messages.pop()["content"]
        dropped += 1
    if tid and dropped:
        convs.drop_last(tid, dropped)
    st.session_state.pending_no_cache = True  # a regenerated answer is computed afresh


def search_instead() -> None:
    """Ask the last question again as a plain search, in place of its whole-document answer."""
    regenerate()
    st.session_state.pending_route = "search"


ROUTE_NOTE = {"document": ":material/menu_book: Read as a whole", "compare": ":material/compare: Compared side by side"}


def route_caption(answer: Answer, idx: int, last: bool) -> None:
    """How the question was answered, when not by searching passages, and the way back to a
    search; a cached answer says when it was first computed."""
    if answer.plan.get("intent") == "show":  # "show me X": the document itself, opened at its first page
        for d in answer.plan.get("documents", [])[:3]:
            first = next((c for c in answer.citations if c.doc_id == d.get("doc_id")), None)
            if first is not None and st.button(f"Open {escape_md(d.get('source', ''))}", key=f"open_{idx}_{first.doc_id}",
                                               icon=":material/open_in_new:", type="primary"):
                st.session_state[f"viewer_page_{first.chunk_id}"] = 1
                show_source(first, as_citation=False)
    if answer.route in ROUTE_NOTE:
        docs = ", ".join(d.get("source", "") for d in answer.plan.get("documents", []))
        read = answer.signals.get("read", "")
        st.caption(escape_md(f"{docs}: {read}" if read else docs).join(
            (ROUTE_NOTE[answer.route] + ": ", "")))
        if last:
            st.button("Search instead", key=f"search_instead_{idx}", icon=":material/search:", on_click=search_instead,
                      help="Answer from the passages that best match the question, not by reading whole documents")
    if answer.cached:
        st.caption(escape_md(f"Cached answer, first computed {answer.cached_at.replace('T', ' ')} UTC; nothing it "
                             "depends on has changed since. Regenerate to compute it again.").join(
            (":material/history: ", "")))


def feedback_controls(m: dict) -> None:
    qid = m["query_id"]
    saved = m.get("rating")  # (rating, comment, reason): kept with the message, no query per rerun
    fb = st.feedback("thumbs", key=f"fb_{qid}", default={1: 1, -1: 0}.get(saved[0]) if saved else None)
    if fb is not None:
        rating = 1 if fb == 1 else -1
        if not saved or saved[0] != rating:
            feedback_log.rate(qid, rating, saved[1] if saved else "")
            saved = m["rating"] = (rating, saved[1] if saved else "", None)
    if not saved:
        return
    if saved[0] == -1:
        label = f"Why: {saved[2]}" if saved[2] else "Tell us what was wrong"
        # A popover keyed and tracked (on_change="rerun") so that sending can close it: the
        # user sees it close, a toast, and the label turn to the reason given.
        with st.popover(label, icon=":material/feedback:", key=f"pop_why_{qid}", on_change="rerun"):
            with st.form(f"why_{qid}", border=False):
                st.radio("What was wrong?", REASONS, horizontal=True, key=f"why_reason_{qid}",
                         index=REASONS.index(saved[2]) if saved[2] in REASONS else None)
                st.text_area("Anything to add?", value=saved[1], max_chars=2000, key=f"why_text_{qid}")
                st.form_submit_button("Send", on_click=_send_feedback, args=(m, -1))
    else:
        with st.popover("Add a comment" if not saved[1] else "Edit comment", icon=":material/comment:",
                        key=f"pop_good_{qid}", on_change="rerun"):
            with st.form(f"good_{qid}", border=False):
                st.text_area("What was good?", value=saved[1], key=f"cm_{qid}", max_chars=2000)
                st.form_submit_button("Save comment", on_click=_send_feedback, args=(m, 1))


def _send_feedback(m: dict, rating: int) -> None:
    """Form callback (runs before the rerun, so it may close the popover it sits in)."""
    qid = m["query_id"]
    ss = st.session_state
    if rating == -1:
        text, reason = ss.get(f"why_text_{qid}") or "", ss.get(f"why_reason_{qid}")
        feedback_log.rate(qid, -1, text, reason)
        m["rating"] = (-1, text.strip(), reason)
        ss[f"pop_why_{qid}"] = False
        st.toast("Thanks — this helps us fix it.")
    else:
        text = ss.get(f"cm_{qid}") or ""
        feedback_log.rate(qid, 1, text)
        m["rating"] = (1, text.strip(), None)
        ss[f"pop_good_{qid}"] = False
        st.toast("Thanks — feedback saved.")


def render_answer(m: dict, idx: int, last: bool) -> None:
    answer: Answer = m["answer"]
    if answer.models.get("llm_error") and not m.get("fresh"):
        st.warning(escape_md(answer.models["llm_error"]))
    if answer.models.get("llm_cut"):
        st.caption(":material/content_cut: " + escape_md(answer.models["llm_cut"]))
    if answer.models.get("instructions_removed"):
        st.caption(":material/shield: " + escape_md(answer.models["instructions_removed"]))
    lang = answer.language or "en"
    if answer.abstained:
        st.info(escape_md(answer.text))
        st.caption(ui_text.text("why", lang) + ": " + escape_md(answer.reason))
        if answer.signals.get("detail") or answer.decided_by:
            with st.expander(ui_text.text("details", lang)):
                st.caption(escape_md(decision_line(answer) + " " + answer.signals.get("detail", "")))
        if answer.below_threshold:
            st.caption(f":material/filter_alt: The knowledge base's *Minimum relevance* setting dropped "
                       f"{answer.below_threshold} passage(s) before answering: lower it on the Knowledge bases "
                       "page if relevant passages are being left out.")
        for s in answer.suggestions:
            st.markdown(f"- {escape_md(s)}")
        if answer.closest:
            # Not an answer: plain passages under a heading that says so, never styled as one
            # (no scores, no markers), each openable in the page viewer to judge for oneself.
            with st.expander(closest_heading(answer.language), expanded=True,  # our words, no document text
                             icon=":material/find_in_page:"):
                for c in answer.closest:
                    # the passage as an answer would show it (code as code, lists as lists),
                    # its best sentence in bold
                    st.markdown(passage_markdown(c.passage or c.snippet, c.snippet))
                    if st.button(f"{escape_md(c.source)} · {citation_place(c)}" + (f" · {c.date}" if c.date else "")
                                 + (" · OCR" if c.ocr else ""),
                                 key=f"closest_{idx}_{c.n}", type="tertiary", icon=":material/description:"):
                        show_source(c, as_citation=False)
    else:
        st.markdown(answer_markdown(answer))
        route_caption(answer, idx, last)
        for cf in answer.conflicts:
            # document text and file names: escaped like every other Markdown they reach
            st.warning(escape_md(conflict_note(cf)) + " Check both before relying on either.",
                       icon=":material/compare_arrows:")
        st.caption(badge(answer) + ("  ·  :material/warning: marks sentences the sources do not fully support" if any(
            c.label != "supported" for c in answer.claims) else ""))
        if answer.revised:
            st.caption(":material/find_replace: Rewritten after searching again: the first draft had sentences "
                       "the sources did not support.")
        if answer.signals.get("recency"):  # our words, with the question's own words quoted: escaped
            st.caption(escape_md(answer.signals["recency"].capitalize() + ".").join((":material/update: ", "")))
        for c in answer.citations:
            if c.stale:  # file names are document text: escaped
                st.caption(escape_md(f"[{c.n}] {c.source} may be out of date: {c.stale}.").join(
                    (":material/history: ", "")))
        # One button per citation: the marker, the file and the page; a click opens the page.
        # Labels and tooltips render Markdown: the file name and the snippet are document
        # text (`![](http://…)` in a document must not load an image), so both are escaped.
        with st.container(horizontal=True, gap="small"):
            for c in answer.citations:
                if st.button(f"{marker_text([c.n])} {escape_md(c.source)} · {citation_place(c)}"
                             + (f" · {c.date}" if c.date else "") + (" · OCR" if c.ocr else "")
                             + (" · :material/verified: trusted" if c.trusted else "")
                             + (" · :material/history: may be out of date" if c.stale else ""),
                             key=f"src_{idx}_{c.n}",
                             type="tertiary", icon=":material/description:",
                             help=escape_md(" ".join(c.snippet.split())[:300])):
                    show_source(c)
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        with st.popover("Copy", icon=":material/content_copy:"):
            st.code(plain_answer(answer), language=None, wrap_lines=True)
        if last:
            st.button("Regenerate", icon=":material/refresh:", key=f"regen_{idx}", on_click=regenerate)
        with st.popover("Timing", icon=":material/timer:"):
            # Text, not st.dataframe: twenty Arrow tables cost ~90 ms on every rerun of a long chat.
            st.markdown(timing_markdown(answer.timings_ms))
            if answer.decided_by:
                st.caption(escape_md(decision_line(answer)))
            if answer.below_threshold:
                st.caption(f"Minimum relevance dropped {answer.below_threshold} passage(s).")
        if m.get("query_id"):
            feedback_controls(m)
        elif m.get("unlogged"):
            st.caption("The query log is off for these knowledge bases: this answer was not recorded, so it cannot "
                       "be rated.")


def _produce(chain, req, events: queue.Queue) -> None:
    """The chain's events onto a queue, from a worker thread (it never touches Streamlit), so the
    page can tick the waiting line while the model is silent. `req.cancel` set: the model's
    stream closes at its next piece (the server stops writing) and the chain ends."""
    gen = chain.stream(req)
    try:
        for ev in gen:
            if req.cancel.is_set():
                break
            events.put(ev)
    except AnswerCancelled:
        pass
    except BaseException as exc:  # noqa: BLE001 - re-raised on the page's thread
        events.put(exc)
    finally:
        try:
            gen.close()
        except AnswerCancelled:
            pass
        events.put(None)


def stream_answer(req, language: str) -> Answer | None:
    """Run the answer chain — the same chain object `ask` and the benchmarks run — and show
    its events as they come: tokens, steps in progress ("checking the sources…"), a rewrite
    after a second search (announced, never a silent swap), an LLM failure notice.

    Until the first words the waiting line says what is happening and how long it has taken,
    updated every half second, never a blank space (issue 50: a local model was silent for
    29-50 s). Stop (or any other click, which reruns the page) cancels the answer."""
    status, notices, body = st.empty(), st.container(), st.empty()
    stop = st.empty()
    events: queue.Queue = queue.Queue()
    req = dataclasses.replace(req, cancel=threading.Event())
    # the answer's model runs queue under this user's name, as an API caller's do (inference.FairShare)
    ctx = contextvars.copy_context()
    ctx.run(run_for.set, me.user or "local")
    threading.Thread(target=ctx.run, args=(_produce, ws.answers.chain, req, events), daemon=True).start()
    text, shown, answer, writing = "", 0.0, None, False
    note, started = ui_text.text("searching", language), time.perf_counter()
    # Set until the answer is in: a run that ends without it (Stop, or any click, reruns the
    # page and ends this one) leaves it for the next run, which says the answer was stopped.
    st.session_state["stopped"] = req.question
    stop.button(ui_text.text("stop", language), icon=":material/stop_circle:", key=f"stop_{len(messages)}")
    try:
        while True:
            try:
                ev = events.get(timeout=0.5)
            except queue.Empty:
                ev = "tick"
            if ev is None:
                break
            if isinstance(ev, BaseException):
                raise ev
            if ev == "tick" or ev.kind == "status":
                note = note if ev == "tick" else ev.text
                if not writing or ev != "tick":
                    waited = ui_text.text("waited", language, s=str(int(time.perf_counter() - started)))
                    status.caption(f":material/progress_activity: {escape_md(note)} · {escape_md(waited)}")
            elif ev.kind == "token":
                text += ev.text
                if not writing:
                    writing = True
                    status.empty()  # the words are the progress now
                if time.perf_counter() - shown > 0.05:  # at most ~20 redraws a second
                    md = draft_markdown(text)
                    # after a code block the cursor goes on its own line: "``` ▌" would not close it
                    body.markdown(md + ("\n\n▌" if md.endswith("```") else " ▌"))
                    shown = time.perf_counter()
            elif ev.kind == "restart":
                text = ev.text
                body.markdown(draft_markdown(text))
            elif ev.kind == "notice":
                notices.warning(escape_md(ev.text))
            elif ev.kind == "answer":
                answer = ev.answer
    finally:
        if answer is None:  # stopped (the button, or another click rerunning the page)
            req.cancel.set()
    st.session_state.pop("stopped", None)
    status.empty()
    body.empty()
    stop.empty()
    return answer


question = st.chat_input("Ask a question about your documents") or st.session_state.pop("pending_question", None)
for i, m in enumerate(messages):
    with st.chat_message(m["role"]):
        if m["role"] == "user":
            st.markdown(escape_md(m["content"]))
        else:
            render_answer(m, i, last=i == len(messages) - 1 and not question)
if messages and messages[-1]["role"] == "user" and st.session_state.get("stopped") == messages[-1]["content"]:
    with st.chat_message("assistant"):  # the question stays; the page says why it has no answer
        st.caption(escape_md(ui_text.text("stopped", question_language(messages[-1]["content"]))))

if question:
    if tid is None:  # the first question starts a saved conversation
        tid = st.session_state.thread_id = st.session_state.loaded_thread = convs.create()
    convs.add(tid, "user", question)
    messages.append({"role": "user", "content": question})
    with st.chat_message("user"):
        st.markdown(escape_md(question))
    with st.chat_message("assistant"):
        history = [(m["role"], m["content"] if m["role"] == "user" else m["answer"].text) for m in messages[:-1]]
        with friendly_errors("Answering"):
            req = ws.answer_request(kbs, question, history=history, doc_ids=scope or None, caller=me,
                                    after=after, before=before, route=st.session_state.pop("pending_route", None),
                                    no_cache=st.session_state.pop("pending_no_cache", False),
                                    options=AnswerOptions(include_drafts=include_drafts))
            answer = stream_answer(req, question_language(question))
            kb_ids = [ws.get_kb(n, caller=me).kb_id for n in kbs]
            qid = feedback_log.log_answer(answer, kb_ids, thread_id=tid)
            convs.add(tid, "assistant", answer.text, answer, qid)
            messages.append({"role": "assistant", "content": answer.text, "answer": answer, "query_id": qid,
                             "unlogged": qid is None})
            render_answer({**messages[-1], "fresh": True}, len(messages) - 1, last=True)  # its notice is on screen already

conversations()
