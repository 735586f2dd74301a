"""Groundwork: entry point. Navigation, shared resources, and the sidebar."""

import streamlit as st

from pages.common import identity, kb_names, remember_kbs, selected_kbs, workspace

st.set_page_config(page_title="Groundwork", page_icon="📚", layout="wide")

ws = workspace()
pages = [
    st.Page("pages/chat.py", title="Chat", icon="💬", default=True),
    st.Page("pages/upload.py", title="Upload", icon="📤"),
    st.Page("pages/knowledge_bases.py", title="Knowledge bases", icon="🗂️"),
    st.Page("pages/analytics.py", title="Analytics", icon="📊"),
]
nav = st.navigation(pages)

with st.sidebar:
    st.markdown("### 📚 Groundwork")
    names = kb_names()
    if names:
        chosen = st.multiselect("Knowledge bases", names, default=selected_kbs(), key="kb_picker",
                                help="Answers come only from the knowledge bases selected here.")
        if chosen != st.session_state.get("selected_kbs"):
            st.session_state.selected_kbs = chosen
            remember_kbs(chosen)
    else:
        st.caption("No knowledge bases yet — create one on the Upload page.")
    mode = f"LLM · {ws.settings.llm_model}" if ws.settings.llm_configured else "Extractive · offline"
    store = "Weaviate" if ws.settings.store.startswith("weaviate") else "Embedded"
    user, _ = identity()
    st.caption(f"**Mode:** {mode}  \n**Store:** {store}  \n**User:** {user or 'local (no sign-in)'}")

nav.run()
