"""Groundwork: entry point. Navigation, shared resources, and the sidebar."""

import streamlit as st

from pages.common import identity, kb_names, remember_kbs, selected_kbs, workspace

st.set_page_config(page_title="Groundwork", page_icon=":material/menu_book:", layout="wide")

ws = workspace()
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
    mode = f"LLM · {ws.settings.llm_model}" if ws.settings.llm_configured else "Extractive · offline"
    store = "Weaviate" if ws.settings.store.startswith("weaviate") else "Embedded"
    user, _ = identity()
    st.caption(f"**Mode:** {mode}  \n**Store:** {store}  \n**User:** {user or 'local (no sign-in)'}")

nav.run()
