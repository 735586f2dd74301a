"""Groundwork — placeholder entry until the app issue lands: lists knowledge bases and runs a search."""

import streamlit as st

from rag_core.config import get_settings
from rag_core.errors import GroundworkError
from rag_core.workspace import Workspace

st.set_page_config(page_title="Groundwork", page_icon="📚", layout="wide")


@st.cache_resource
def workspace() -> Workspace:
    return Workspace(get_settings())


ws = workspace()
st.title("Groundwork")
st.caption("Chat with your documents — grounded answers with citations.")
kbs = ws.list_kbs()
if not kbs:
    st.info("No knowledge bases yet. Create one with `python -m rag_core kb create NAME` and add files with "
            "`python -m rag_core ingest --kb NAME FILES…`.")
else:
    names = [kb.name for kb in kbs]
    chosen = st.multiselect("Knowledge bases", names, default=names[:1])
    query = st.text_input("Search")
    if query and chosen:
        try:
            res = ws.search(chosen, query, k=5)
        except GroundworkError as exc:
            st.error(str(exc))
        else:
            for r in res.results:
                c = r.chunk
                with st.container(border=True):
                    st.markdown(f"**{c.source}** · page {c.page_start} · score {r.score:.3f}")
                    st.text(c.text[:800])
