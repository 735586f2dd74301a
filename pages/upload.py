"""Upload: add files to a knowledge base, see what went in, delete documents."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from pages.common import friendly_errors, kb_names, workspace
from rag_core.ingest.loaders import SUPPORTED_EXTENSIONS
from rag_core.render import escape_md

ws = workspace()
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
                kb = ws.create_kb(new_name, description=new_desc)
                st.session_state.upload_kb = kb.name
                st.session_state.flash = f"Created {kb.name}. Now add files to it."
                st.rerun()
if not names:
    st.stop()

default = names.index(st.session_state.get("upload_kb")) if st.session_state.get("upload_kb") in names else 0
kb_name = st.selectbox("Knowledge base", names, index=default, key="upload_kb")
kb = ws.get_kb(kb_name)

limit = ws.settings.max_file_mb
files = st.file_uploader(
    f"Drop files here — PDF, DOCX, TXT, MD, HTML, CSV, JSONL · up to {limit} MB each, "
    f"{ws.settings.max_files_per_batch} per batch",
    type=sorted(e.lstrip(".") for e in SUPPORTED_EXTENSIONS),
    accept_multiple_files=True,
    key=f"uploader_{st.session_state.get('upload_round', 0)}",
)
if files and st.button(f"Add {len(files)} file(s) to {kb.name}", type="primary"):
    with friendly_errors("Uploading"), tempfile.TemporaryDirectory() as tmp:
        paths, names_by_path = [], {}
        for i, f in enumerate(files):
            # Saved under a neutral name: the user's file name is data, not a path.
            p = Path(tmp) / f"upload-{i}{Path(f.name).suffix.lower()}"
            p.write_bytes(f.getbuffer())
            paths.append(p)
            names_by_path[p] = f.name
        bar = st.progress(0.0, text="Starting…")

        def progress(done: int, total: int, name: str) -> None:
            bar.progress(done / total, text=f"{done}/{total} · {name}")

        stats = ws.ingestor.ingest(kb, paths, display_names=names_by_path, progress=progress)
        bar.progress(1.0, text="Done")
        st.session_state.last_report = [
            {"file": r.file, "result": r.status, "pages": r.pages, "chunks": r.chunks, "reason": r.reason}
            for r in stats.reports
        ]
        st.session_state.upload_round = st.session_state.get("upload_round", 0) + 1
        st.rerun()

report = st.session_state.get("last_report")
if report:
    ok = sum(r["result"] == "ingested" for r in report)
    bad = sum(r["result"] == "failed" for r in report)
    (st.success if not bad else st.warning)(
        f"{ok} ingested, {sum(r['result'] == 'duplicate' for r in report)} duplicate, {bad} failed."
    )
    st.dataframe(pd.DataFrame(report), hide_index=True, use_container_width=True)

st.subheader(f"Documents in {kb.name}")
docs = ws.appdb.list_documents(kb.kb_id)
if not docs:
    st.caption("No documents yet.")
for d in docs:
    c1, c2, c3 = st.columns([6, 2, 1])
    c1.markdown(f"**{escape_md(d.source)}**  \n{escape_md(d.title)}" if d.title and d.title != d.source else f"**{escape_md(d.source)}**")
    c2.caption(f"{d.pages} page(s) · {d.chunks} chunk(s)")
    if c3.button("Delete", key=f"del_{d.doc_id}"):
        with friendly_errors("Deleting"):
            ws.delete_document(kb.kb_id, d.doc_id)
            st.toast(f"Deleted {d.source}.")
            st.rerun()
