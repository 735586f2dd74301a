"""Groundwork: entry point. Sign-in, navigation, shared resources, and the sidebar."""

import streamlit as st

from pages.common import auth_mode, identity, kb_names, remember_kbs, selected_kbs, show_pending_toasts, workspace
from rag_core.render import escape_md

st.set_page_config(page_title="Groundwork", page_icon=":material/menu_book:", layout="wide")

ws = workspace()
me = identity()


def sign_in_page() -> None:
    st.title(":material/menu_book: Groundwork")
    if auth_mode() == "oidc":
        st.write("Sign in to chat with the documents you have access to.")
        st.button("Sign in", type="primary", icon=":material/login:", on_click=st.login)
    elif auth_mode() == "local":
        st.error("Sign-in is required here (RAG_AUTH=required) but none is configured: set up sign-in "
                 "(README: Sign-in) or a user (RAG_USER).")
    else:
        st.error("No identity came with this request: this app expects to run behind the sign-in proxy.")


if me is None:  # sign-in configured and nobody signed in: the sign-in page is the only page
    st.navigation([st.Page(sign_in_page, title="Sign in", icon=":material/login:")], position="hidden").run()
    st.stop()

pages = [
    st.Page("pages/chat.py", title="Chat", icon=":material/forum:", default=True),
    st.Page("pages/upload.py", title="Upload", icon=":material/upload_file:"),
    st.Page("pages/knowledge_bases.py", title="Knowledge bases", icon=":material/folder_open:"),
    st.Page("pages/analytics.py", title="Analytics", icon=":material/monitoring:"),
]
nav = st.navigation(pages)

with st.sidebar:
    st.markdown("### :material/menu_book: Groundwork")
    names = kb_names()
    if names:
        selected_kbs()  # a valid default (last used, or the only one) before the widget reads it
        st.multiselect("Knowledge bases", names, key="selected_kbs",
                       on_change=lambda: remember_kbs(st.session_state.selected_kbs),
                       help="Answers come only from the knowledge bases selected here.")
    else:
        st.caption("No knowledge bases yet — create one on the Upload page.")
    # Which model answers: the local GGUF file, the endpoint's model, or none (offline sentences).
    mode = (f"LLM · {escape_md(ws.settings.llm_label)}" if ws.settings.llm_configured
            else "Extractive · offline (no LLM configured)")
    store = "Weaviate" if ws.settings.store.startswith("weaviate") else "Embedded"
    who = escape_md(me.user) if me.user else "local (no sign-in)"
    st.caption(f"**Mode:** {mode}  \n**Store:** {store}  \n**User:** {who}" + (" · admin" if me.admin and me.user else ""))
    if auth_mode() == "oidc":
        st.button("Sign out", icon=":material/logout:", on_click=st.logout)

show_pending_toasts()  # toasts raised just before a rerun (pages.common.toast_and_rerun)
nav.run()
