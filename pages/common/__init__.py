"""What every page shares: the workspace (created once per process), who is signed in, the
knowledge bases they may use, and a friendly error wrapper."""

from __future__ import annotations

import gc
import traceback
from contextlib import contextmanager

import streamlit as st

from rag_core.access import Caller, local_caller, with_admin
from rag_core.config import get_settings
from rag_core.errors import GroundworkError
from rag_core.render import escape_md
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
    ws.start_worker()  # resumes jobs a previous run left queued or half-done
    return ws


def auth_mode() -> str:
    """"oidc" (Streamlit's st.login, configured in secrets.toml [auth]), "headers" (a trusted
    auth proxy, RAG_TRUSTED_HEADERS=true) or "local" (one user, no sign-in)."""
    try:
        if "auth" in st.secrets:
            return "oidc"
    except Exception:  # noqa: BLE001 - no secrets file at all
        pass
    return "headers" if workspace().settings.trusted_headers else "local"


def _split(value) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value or []]


def identity() -> Caller | None:
    """Who is using this session, or None when nobody is signed in (sign-in required)."""
    s = workspace().settings
    mode = auth_mode()
    if mode == "local":
        # No sign-in configured: RAG_USER/RAG_GROUPS/RAG_TENANT if set; else the person at the
        # machine, the local operator, unless RAG_AUTH=required (then nobody: sign-in needed).
        return local_caller(s.user, s.groups, s.tenant, s)
    if mode == "oidc":
        if not st.user.is_logged_in:
            return None
        user = st.user.get("email") or st.user.get("sub")
        groups = _split(st.user.get(s.auth_groups_claim))
        tenant = st.user.get(s.auth_tenant_claim) if s.auth_tenant_claim else None
    else:
        headers = st.context.headers
        user = headers.get(s.user_header)
        if not user:
            return None
        groups = _split(headers.get(s.groups_header))
        tenant = None
    return with_admin(Caller.of(user, groups, tenant), s)


def caller() -> Caller:
    """The signed-in caller (pages run only after streamlit_app.py required one)."""
    c = identity()
    if c is None:
        st.stop()
    return c


def kb_names() -> list[str]:
    return [kb.name for kb in workspace().list_kbs(caller=caller())]


def selected_kbs() -> list[str]:
    """The knowledge bases chosen in the sidebar: by default the last used, or the only one."""
    names = kb_names()
    current = [n for n in st.session_state.get("selected_kbs", []) if n in names]
    if not current:
        last = workspace().last_kbs(caller=caller())
        current = [n for n in last if n in names] or names[:1]
    if current != st.session_state.get("selected_kbs"):
        st.session_state.selected_kbs = current
    return current


def remember_kbs(names: list[str]) -> None:
    workspace().remember_kbs(names, caller=caller())


_PENDING_TOASTS = "_pending_toasts"


def toast_and_rerun(message: str) -> None:
    """A toast that survives the rerun that follows it: `st.toast` then `st.rerun` loses the
    toast with the run it belonged to (found in the browser: a rename's "Renamed … and saved"
    never showed). The message is kept for the next run, which shows it."""
    st.session_state.setdefault(_PENDING_TOASTS, []).append(message)
    st.rerun()


def show_pending_toasts() -> None:
    for message in st.session_state.pop(_PENDING_TOASTS, []):
        st.toast(message)


@contextmanager
def friendly_errors(action: str):
    """A message a person can act on, never a traceback (the traceback goes to the log)."""
    try:
        yield
    except GroundworkError as exc:
        st.error(f"{action}: {escape_md(str(exc))}")  # the message may quote a name someone typed
    except Exception as exc:  # noqa: BLE001 - last line of defence for the UI
        traceback.print_exc()
        st.error(f"{action} failed unexpectedly ({type(exc).__name__}). The details are in the server log.")
