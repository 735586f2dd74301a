"""Knowledge-base settings: create, rename, describe, instruct, tune retrieval, restrict, delete."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from pages.common import auth_mode, caller, friendly_errors, kb_names, workspace
from rag_core.generation.prompts import system_prompt
from rag_core.models import RetrievalSettings

ws = workspace()
me = caller()
signed_in = auth_mode() != "local"
st.title("Knowledge bases")

with st.expander("Create a knowledge base", expanded=not kb_names()):
    with st.form("create_kb", clear_on_submit=True):
        name = st.text_input("Name")
        desc = st.text_input("Description")
        if st.form_submit_button("Create"):
            with friendly_errors("Creating"):
                # Signed in, a new knowledge base is its creator's until they share it.
                private = dict(acl_users=[me.user], tenant=me.tenant) if signed_in and not me.admin else {}
                ws.create_kb(name, description=desc, **private)
                st.rerun()

names = kb_names()
if not names:
    st.stop()
kb = ws.resolve_kbs([st.selectbox("Knowledge base", names, key="settings_kb")], me)[0]
# Who may change it (settings, access, deletion): admins, and the users named on it (its owners).
may_share = me.admin or (me.user is not None and me.user in kb.acl_users)
docs, chunks = ws.appdb.counts(kb.kb_id)
st.caption(f"{docs} document(s) · {chunks} chunk(s) · id `{kb.kb_id}`")

defaults = RetrievalSettings()
with st.form(f"edit_{kb.kb_id}"):
    st.subheader("General")
    new_name = st.text_input("Name", kb.name)
    description = st.text_area("Description", kb.description, height=68)
    instructions = st.text_area(
        "Custom instructions (system prompt)", kb.instructions, height=120,
        help="Added to the assistant's rules when this knowledge base is selected (LLM mode). "
        "They refine tone and scope; they cannot switch off citations or grounding.",
    )
    grounded = st.toggle("Grounded-only answers", kb.grounded_only,
                         help="Every sentence must be supported by the sources; unsupported sentences are removed, "
                         "or the assistant says it does not know.")
    st.subheader("Retrieval")
    r = kb.retrieval
    c1, c2 = st.columns(2)
    top_k = c1.slider("Passages per answer (top k)", 1, 20, r.top_k, help=f"Default {defaults.top_k}.")
    alpha = c2.slider("Keyword ↔ meaning (alpha)", 0.0, 1.0, float(r.alpha), 0.05,
                      help="0 = keywords only (BM25), 1 = meaning only (embeddings). Default 0.5.")
    fusion = c1.selectbox("Fusion", ["relative_score", "rrf"], index=["relative_score", "rrf"].index(r.fusion),
                          help="relative_score: normalise each list's scores and blend (Weaviate's default). "
                          "rrf: reciprocal rank fusion (k = 60).")
    rerank = c2.toggle("Rerank candidates", r.rerank, help="Re-score the top 30 candidates with the reranker.")
    mmr = c1.slider("Diversity (MMR λ)", 0.0, 1.0, float(r.mmr_lambda), 0.05,
                    help="1 = pure relevance; lower values prefer passages that add something new. Default 0.7.")
    threshold = c2.slider("Minimum relevance", 0.0, 1.0, float(r.score_threshold), 0.05,
                          help="Passages scoring below this (reranker probability) are not used. 0 = off.")
    budget = c1.number_input("Context budget (tokens)", 200, 32000, int(r.context_tokens), 100,
                             help="Most passage text sent to the model per answer.")
    st.subheader("Access")
    if not signed_in:
        st.caption(":material/info: No sign-in is configured, so in this app you are the operator and see every "
                   "knowledge base: these fields are not enforced here. They are enforced once sign-in is set up "
                   "(README: Sign-in) and for the CLI's --user/--groups/--tenant.")
    tenant = st.text_input("Tenant", kb.tenant or "", disabled=not may_share,
                           help="Only users of this tenant see the knowledge base. Empty = any.")
    users = st.text_input("Users (comma separated)", ", ".join(kb.acl_users), disabled=not may_share,
                          help="Empty users and groups = everyone.")
    groups = st.text_input("Groups (comma separated)", ", ".join(kb.acl_groups), disabled=not may_share)
    if not may_share:
        st.caption("Only admins and the users named on this knowledge base can change it.")
    if st.form_submit_button("Save", type="primary", disabled=not may_share):
        with friendly_errors("Saving"):
            updated = replace(
                kb, name=new_name, description=description, instructions=instructions, grounded_only=grounded,
                retrieval=RetrievalSettings(top_k=top_k, alpha=alpha, fusion=fusion, rerank=rerank, mmr_lambda=mmr,
                                            score_threshold=threshold, context_tokens=int(budget)),
                tenant=tenant.strip() or None,
                acl_users=[u.strip() for u in users.split(",") if u.strip()],
                acl_groups=[g.strip() for g in groups.split(",") if g.strip()],
            )
            ws.appdb.update_kb(updated)
            st.toast("Saved. Access changes apply at once, to the documents already in it too.")
            st.rerun()

with st.expander("Preview: how the instructions are assembled"):
    st.code(system_prompt([kb]), language=None)

with st.expander("Delete this knowledge base"):
    st.warning(f"This removes {kb.name} and its {docs} document(s) for good.")
    sure = st.checkbox(f"Yes, delete {kb.name}", key=f"sure_{kb.kb_id}", disabled=not may_share)
    if st.button("Delete knowledge base", disabled=not (sure and may_share), type="primary"):
        with friendly_errors("Deleting"):
            ws.delete_kb(kb.kb_id)
            st.session_state.pop("settings_kb", None)
            st.rerun()
