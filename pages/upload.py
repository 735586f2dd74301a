"""Upload: add files to a knowledge base, see what went in, delete documents."""

from __future__ import annotations

import datetime

import pandas as pd
import streamlit as st

from rag_core.text.language import NAMES as LANGUAGE_NAMES, name as language_name

from pages.common import caller, friendly_errors, kb_names, toast_and_rerun, workspace
from rag_core.ingest.loaders import SUPPORTED_EXTENSIONS
from rag_core.render import escape_md, ocr_note

ws = workspace()
me = caller()
st.title("Upload documents")

if flash := st.session_state.pop("flash", None):
    st.success(flash)

names = kb_names()
with st.expander("Create a knowledge base", expanded=not names):
    with st.form("new_kb", clear_on_submit=True):
        new_name = st.text_input("Name", placeholder="e.g. Employee handbook")
        new_desc = st.text_input("Description (optional)")
        if st.form_submit_button("Create"):
            with friendly_errors("Creating the knowledge base"):
                # Signed in, a new knowledge base is its creator's (owner and only reader) until shared.
                private = dict(acl_users=[me.user]) if me.user and not me.admin else {}
                kb = ws.create_kb(new_name, caller=me, description=new_desc, **private)
                st.session_state.upload_kb = kb.name
                st.session_state.flash = f"Created {escape_md(kb.name)}. Now add files to it."
                st.rerun()
if not names:
    st.stop()

# The selection lives in session state only (a default `index` as well made Streamlit log a
# warning with a stack trace on every run after a knowledge base was created).
if st.session_state.get("upload_kb") not in names:
    st.session_state.upload_kb = names[0]
kb_name = st.selectbox("Knowledge base", names, key="upload_kb")
kb = ws.get_kb(kb_name, caller=me)
may_write = ws.can_write(kb.kb_id, caller=me)
if not may_write:
    st.info(f"You can read **{escape_md(kb.name)}** but not add to it or delete from it: only its owners and admins "
            "can. Ask an owner to add you as a co-owner on the Knowledge bases page.")

limit = ws.settings.max_file_mb
files = None if not may_write else st.file_uploader(
    f"Drop files here — PDF (scans too), DOCX, PPTX, XLSX, EPUB, TXT, MD, HTML, CSV, JSONL · up to {limit} MB each, "
    f"{ws.settings.max_files_per_batch} per batch",
    type=sorted(e.lstrip(".") for e in SUPPORTED_EXTENSIONS),
    accept_multiple_files=True,
    key=f"uploader_{st.session_state.get('upload_round', 0)}",
)
if files and st.button(f"Add {len(files)} file(s) to {kb.name}", type="primary"):
    with friendly_errors("Uploading"):
        job_id = ws.submit_upload(kb.kb_id, [(f.name, f.getvalue()) for f in files], caller=me)
        st.session_state.upload_round = st.session_state.get("upload_round", 0) + 1
        st.session_state.flash = (f"Queued {len(files)} file(s) for {escape_md(kb.name)}. They are read in the background: "
                                  "keep working, the progress is below.")
        st.rerun()


if may_write:
    with st.form("add_url", border=False, clear_on_submit=True):
        u1, u2 = st.columns([5, 1], vertical_alignment="bottom")
        url = u1.text_input("Or add a web page, or a sitemap of pages, by URL",
                            placeholder="https://example.com/handbook.html or https://example.com/sitemap.xml",
                            help="The page's main text is read (menus and footers left out); its URL is the source "
                            "and today its date. Adding it again updates a page whose text changed. robots.txt is "
                            "honoured; at most 50 pages from a sitemap.")
        if u2.form_submit_button("Add", icon=":material/link:") and url.strip():
            with friendly_errors("Adding the page"), st.spinner("Fetching and reading…"):
                stats = ws.ingest_url(kb.kb_id, url.strip(), caller=me)
                added = sum(r.status == "ingested" for r in stats.reports)
                same = sum(r.status == "duplicate" for r in stats.reports)
                failed = [r for r in stats.reports if r.status == "failed"]
                # URLs and reasons come from the web: escaped before they reach Markdown
                st.session_state.flash = escape_md(
                    f"{added} page(s) added to {kb.name}" + (f", {same} unchanged" if same else "")
                    + (f"; {len(failed)} not added: " + "; ".join(f"{r.file} ({r.reason})" for r in failed[:5])
                       if failed else "") + ".")
                st.rerun()


def report_frame(job) -> pd.DataFrame:
    # "OCR": which pages had no text layer and were read from their image (may hold misreadings)
    return pd.DataFrame([{"file": r["file"], "result": r["status"], "pages": r["pages"], "chunks": r["chunks"],
                          "OCR": ocr_note(r.get("ocr_pages") or []), "reason": r["reason"]} for r in job.reports])


def jobs_panel() -> None:
    jobs = ws.list_jobs(kb.kb_id, caller=me, limit=5)  # the caller's own uploads (admins: all)
    if not jobs:
        return
    st.subheader("Uploads")
    for job in jobs:
        with st.container(border=True):
            p = job.progress
            if job.status == "running" and p.get("phase") == "embedding" and p.get("chunks_total"):
                st.progress(p["chunks_done"] / p["chunks_total"], text=job.summary())
            elif job.active:
                st.progress(p.get("files_done", 0) / max(len(job.files), 1), text=job.summary())
            else:
                bad = any(r["status"] == "failed" for r in job.reports) or job.status != "done"
                (st.warning if bad else st.success)(escape_md(job.summary()))  # holds file names
            for name in job.locked_files() if not job.active else []:
                with st.form(f"pw_{job.job_id}_{name}", border=False):
                    st.markdown(f":material/lock: **{escape_md(name)}** is encrypted.")
                    pw = st.text_input(f"Password for {name}", type="password",
                                       help="Used once to open the file; never stored.")
                    if st.form_submit_button("Open with this password") and pw:
                        with friendly_errors("Opening the PDF"):
                            ws.retry_with_password(job.job_id, name, pw, caller=me)
                            st.rerun()
            if job.active:
                if st.button("Cancel", key=f"cancel_{job.job_id}", icon=":material/cancel:"):
                    ws.cancel_job(job.job_id, caller=me)
                    st.toast("Cancelling… documents already fully indexed stay.")
            if job.reports:
                with st.expander(f"Per-file report ({len(job.reports)} of {len(job.files)} files)",
                                 expanded=not job.active and job.job_id == jobs[0].job_id):
                    st.dataframe(report_frame(job), hide_index=True, width="stretch")
    if any(j.active for j in jobs) and not st.session_state.get("_jobs_were_active"):
        st.session_state._jobs_were_active = True
    elif not any(j.active for j in jobs) and st.session_state.pop("_jobs_were_active", False):
        st.rerun()  # a job just ended: refresh the document list below


# Live progress without blocking the page: only this part reruns, every second, while a job runs.
active = any(j.active for j in ws.list_jobs(kb.kb_id, caller=me, limit=5))
st.fragment(run_every=1.0 if active else None)(jobs_panel)()

DOCS_SHOWN = 50
_DATE_FROM = {"metadata": "from the file", "upload": "upload day", "set": "set by hand"}


def save_date(doc_id: str, source: str) -> None:
    picked = st.session_state.get(f"date_{doc_id}")
    if picked is None:
        return
    with friendly_errors("Changing the date"):
        ws.set_document_date(kb.kb_id, doc_id, picked.isoformat(), caller=me)
        st.toast(f"{escape_md(source)} is now dated {picked.isoformat()}.")


def save_language(doc_id: str, source: str) -> None:
    picked = st.session_state.get(f"lang_{doc_id}")
    if not picked:
        return
    with friendly_errors("Changing the language"):
        ws.set_document_language(kb.kb_id, doc_id, picked, caller=me)
        st.toast(f"{escape_md(source)} is now read as {escape_md(language_name(picked))}.")


TRUST_LABELS = {"trusted": "Trusted", "normal": "Normal", "draft": "Draft"}


def save_trust(doc_id: str, source: str) -> None:
    picked = st.session_state.get(f"trust_{doc_id}")
    if not picked:
        return
    with friendly_errors("Changing the trust mark"):
        ws.set_document_trust(kb.kb_id, doc_id, picked, caller=me)
        st.toast(f"{escape_md(source)} is now marked {TRUST_LABELS[picked].lower()}.")


def documents_panel() -> None:
    st.subheader(f"Documents in {escape_md(kb.name)}")
    docs = ws.list_documents(kb.kb_id, caller=me)
    if not docs:
        st.caption("No documents yet.")
    share = ws.indexing_progress([kb.name], caller=me) if docs else None
    if share is not None and active:
        # One progress figure: while an upload runs, its bar above is the figure (a second,
        # knowledge-base-wide percentage here read "Indexing 30%" beside the bar's 91%).
        st.caption("Vectors are being computed (progress above): every listed document is searchable by its "
                   "words meanwhile; answers may still improve until it ends.")
    elif share is not None:
        st.caption(f"Indexing {share:.0%}: every listed document is searchable by its words; answers may still "
                   "improve while the rest of the vectors are computed.")
    # A page of rows, not thousands: a 5,000-record upload made 5,000 rows of widgets, redrawn
    # every 2 s while the job ran, which stalled the browser.
    if len(docs) > DOCS_SHOWN:
        wanted = st.text_input("Find a document", key=f"doc_filter_{kb.kb_id}",
                               placeholder="part of a file name or title").strip().lower()
        if wanted:
            docs = [d for d in docs if wanted in f"{d.source} {d.title or ''}".lower()]
        if len(docs) > DOCS_SHOWN:
            st.caption(f"Showing {DOCS_SHOWN} of {len(docs):,} documents: type part of a name to find others.")
    for d in docs[:DOCS_SHOWN]:
        c1, c2, c3, c5, c6, c4 = st.columns([5, 2, 2, 2, 2, 1])
        c1.markdown(f"**{escape_md(d.source)}**  \n{escape_md(d.title)}" if d.title and d.title != d.source else f"**{escape_md(d.source)}**")
        c2.caption(f"{d.pages} page(s) · {d.chunks} chunk(s)"
                   + (" · searchable, vectors being computed" if d.status == "searchable" else ""))
        # The document's date drives "only documents after/before" and the recency preference:
        # owners correct it here when the file's metadata is wrong or missing.
        c3.date_input(f"Dated ({_DATE_FROM.get(d.date_source, d.date_source)})", datetime.date.fromisoformat(d.date),
                      min_value=datetime.date(1900, 1, 1), max_value=datetime.date(2100, 12, 31), format="YYYY-MM-DD",
                      key=f"date_{d.doc_id}", disabled=not may_write, on_change=save_date, args=(d.doc_id, d.source),
                      help="The document's own date: from its metadata when the file states one, else the upload day.")
        # Detected at ingest; an owner corrects it here and the keyword index is rebuilt in it.
        codes = list(dict.fromkeys([d.language or "en", *LANGUAGE_NAMES]))
        c5.selectbox(f"Language ({'set' if d.language_source == 'set' else 'detected'})", codes,
                     index=0, format_func=language_name, key=f"lang_{d.doc_id}", disabled=not may_write,
                     on_change=save_language, args=(d.doc_id, d.source),
                     help="The language the document is written in: its keyword search reads it so.")
        c6.selectbox("Trust", list(TRUST_LABELS), index=list(TRUST_LABELS).index(d.trust), format_func=TRUST_LABELS.get,
                     key=f"trust_{d.doc_id}", disabled=not may_write, on_change=save_trust, args=(d.doc_id, d.source),
                     help="Trusted: ranks a little higher, carries a badge where cited, and is named first when "
                          "sources disagree. Draft: left out of answers unless a question asks for drafts.")
        if may_write and c4.button("Delete", key=f"del_{d.doc_id}"):
            with friendly_errors("Deleting"):
                ws.delete_document(kb.kb_id, d.doc_id, caller=me)
                toast_and_rerun(f"Deleted {escape_md(d.source)}.")


# The list follows an upload as it happens (each document appears once its words are
# searchable, with the share of vectors computed): it reruns every 2 s while a job runs.
st.fragment(run_every=2.0 if active else None)(documents_panel)()
