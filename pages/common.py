"""What every page shares: the workspace (created once per process), the current identity,
the selected knowledge bases, and a friendly error wrapper."""

from __future__ import annotations

import traceback
from contextlib import contextmanager

import streamlit as st

from rag_core.config import get_settings
from rag_core.errors import GroundworkError
from rag_core.workspace import Workspace


@st.cache_resource(show_spinner="Loading the knowledge bases…")
def workspace() -> Workspace:
    """One workspace per process: the store's in-memory index and the embedding model are
    loaded once and shared by every session (they are thread-safe)."""
    return Workspace(get_settings())


def identity() -> tuple[str | None, list[str]]:
    """The current user. A real deployment puts its auth in front (e.g. Streamlit's st.login /
    an OIDC proxy) and maps its user and groups here; without one, RAG_USER / RAG_GROUPS."""
    s = workspace().settings
    return st.session_state.get("user") or s.user, s.group_list


def kb_names() -> list[str]:
    return [kb.name for kb in workspace().list_kbs()]


def selected_kbs() -> list[str]:
    """The knowledge bases chosen in the sidebar: by default the last used, or the only one."""
    names = kb_names()
    current = [n for n in st.session_state.get("selected_kbs", []) if n in names]
    if not current:
        last = (workspace().appdb.get_meta("last_kbs") or "").split("\n")
        current = [n for n in last if n in names] or names[:1]
    if current != st.session_state.get("selected_kbs"):
        st.session_state.selected_kbs = current
    return current


def remember_kbs(names: list[str]) -> None:
    workspace().appdb.set_meta("last_kbs", "\n".join(names))


@contextmanager
def friendly_errors(action: str):
    """A message a person can act on, never a traceback (the traceback goes to the log)."""
    try:
        yield
    except GroundworkError as exc:
        st.error(f"{action}: {exc}")
    except Exception as exc:  # noqa: BLE001 - last line of defence for the UI
        traceback.print_exc()
        st.error(f"{action} failed unexpectedly ({type(exc).__name__}). The details are in the server log.")
