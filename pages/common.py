"""What every page shares: the workspace (created once per process), the current identity,
the selected knowledge bases, and a friendly error wrapper."""

from __future__ import annotations

import gc
import traceback
from contextlib import contextmanager

import streamlit as st

from rag_core.config import get_settings
from rag_core.errors import GroundworkError
from rag_core.workspace import Workspace


@st.cache_resource(show_spinner="Loading the knowledge bases and models…")
def workspace() -> Workspace:
    """One workspace per process: the store's in-memory index and the models are loaded once
    and shared by every session (they are thread-safe).

    The models load here rather than on the first question, and then the heap is frozen:
    everything loaded so far lives as long as the process, and without the freeze Python's
    full garbage collection walks it again every few reruns (measured: 150–170 ms pauses in
    1 of ~15 chat reruns; benchmarks/chat_rerun.py)."""
    ws = Workspace(get_settings())
    try:
        ws.answers  # noqa: B018 - loads the embedder and the reader
    except GroundworkError:
        pass  # e.g. an embedding-model mismatch: reported where it matters, on the first question
    gc.collect()
    gc.freeze()
    ws.job_runner.start()  # resumes jobs a previous run left queued or half-done
    return ws


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
