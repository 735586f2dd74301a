"""Knowledge-base settings: create, rename, describe, instruct, tune retrieval, restrict, delete."""

from __future__ import annotations

import json

import streamlit as st

from pages.common import caller, friendly_errors, kb_names, toast_and_rerun, workspace
from rag_core.generation.policy_choice import MIN_CALIBRATION_QUESTIONS
from rag_core.generation.prompts import system_prompt
from rag_core.models import RetrievalSettings
from rag_core.render import escape_md, saved_message

ws = workspace()
me = caller()
st.title("Knowledge bases")

with st.expander("Create a knowledge base", expanded=not kb_names()):
    with st.form("create_kb", clear_on_submit=True):
        name = st.text_input("Name")
        desc = st.text_input("Description")
        if st.form_submit_button("Create"):
            with friendly_errors("Creating"):
                # Signed in, a new knowledge base is its creator's (owner and only reader) until shared.
                private = dict(acl_users=[me.user]) if me.user and not me.admin else {}
                ws.create_kb(name, caller=me, description=desc, **private)
                st.rerun()



def api_keys_section() -> None:
    """Admins: keys for the HTTP API (`python -m rag_core serve`), per user and scope. A key is
    shown once, at creation; only its hash is kept."""
    if not me.admin:
        return
    keys = ws.api_keys
    with st.expander("API keys (admins)"):
        st.caption("Keys let programs use the HTTP API as a user: read (ask, search), write (also change knowledge "
                   "bases and documents), admin (everything).")
        with st.form("api_key_create", clear_on_submit=True):
            user = st.text_input("User", help="The key acts as this user (their knowledge bases and access).")
            groups = st.text_input("Groups (comma-separated)")
            tenant = st.text_input("Tenant")
            scope = st.selectbox("Scope", ["read", "write", "admin"])
            label = st.text_input("Label", help="What the key is for, e.g. 'Slack bot'.")
            if st.form_submit_button("Create key"):
                with friendly_errors("Creating the key"):
                    st.session_state.new_api_key = keys.create(user, scope, groups, tenant or None, label, by=me).key
        if new := st.session_state.pop("new_api_key", None):
            st.success("Key created. Copy it now: it is not shown again.")
            st.code(new, language=None)
        rows = [k.to_dict() for k in keys.list(by=me)]
        if rows:
            import pandas as pd

            df = pd.DataFrame(rows)[["key_id", "user", "scope", "label", "groups", "tenant", "created", "last_used",
                                     "revoked"]]
            for col in ("created", "last_used", "revoked"):
                df[col] = pd.to_datetime(df[col], unit="s")
            st.dataframe(df, hide_index=True)
            active = [r["key_id"] for r in rows if not r["revoked"]]
            if active:
                victim = st.selectbox("Revoke a key", active, key="api_key_revoke")
                if st.button("Revoke", key="api_key_revoke_btn"):
                    with friendly_errors("Revoking"):
                        keys.revoke(victim, by=me)
                        st.rerun()
    with st.expander("A user's data (admins)"):
        st.caption("Export everything stored about a user (questions, answers, ratings, conversations), or erase it. "
                   "Erasing does not revoke their API keys: revoke those above.")
        who = st.text_input("User", key="privacy_user")
        if who.strip():
            st.download_button("Export (JSON)", lambda: json.dumps(ws.export_user_data(who.strip(), caller=me),
                                                                   default=str, indent=1),
                               file_name=f"groundwork-{who.strip()}.json", mime="application/json", on_click="ignore")
            if st.button("Erase this user's data", key="privacy_erase", type="primary"):
                with friendly_errors("Erasing"):
                    res = ws.erase_user_data(who.strip(), caller=me)
                    st.toast(f"Erased {res['questions']} question(s) and {res['conversations']} conversation(s).")


def policy_section(kb) -> None:
    """The answer policy in force here, in words, and (admins) calibrating it to the model."""
    p = ws.answer_policy(caller=me, kb_names=[kb.name])
    with st.expander(f"Answer policy in force: {p['name']}", expanded=False):
        st.markdown(escape_md(p["summary"]))
        st.caption(f"Model: {escape_md(p['model'])} · source: {escape_md(p['source'])}"
                   + (f" · calibrated {escape_md(p['calibrated_at'])}" if p["calibrated_at"] else ""))
        if p["name"] != "model":
            st.caption(f"Lines in force: reader evidence before generation ≥ {p['evidence_min']:.2f}, written answer "
                       f"P(answers) ≥ {p['written_min']:.2f}; offline ≥ {p['offline_min']:.2f}.")
        if me.admin:
            calibration_panel()


@st.fragment(run_every=2)
def calibration_panel() -> None:
    state = ws.calibration_status(caller=me)
    if state.get("running"):
        done, total, eta = state.get("done") or 0, state.get("total"), state.get("eta_s")
        st.progress(done / total if total else 0.0,
                    text=f"Calibrating: {done} of {total or '?'} questions"
                    + (f", about {eta / 60:.0f} min left" if eta is not None else ""))
        return
    if state.get("error"):
        st.error(f"Calibration stopped: {escape_md(state['error'])}. Starting again resumes where it stopped.")
    elif state.get("result"):
        f = state["result"]["figures"]
        st.success(f"Calibrated on {f['questions']} questions: answers {f['answerable_correct']:.0%} of the answerable "
                   f"ones correctly, declines {f['unanswerable_abstained']:.0%} of the others.")
    quick = st.checkbox(f"Quick pass ({MIN_CALIBRATION_QUESTIONS} questions, the fewest auto will use)",
                        key="calibrate_quick")
    if st.button("Calibrate for this model", key="calibrate_btn",
                 help="Runs the shipped calibration set (270 questions, half of them not answered by its documents) "
                 "through the model in use and fits when to answer. Minutes offline; longer with a local model."):
        with friendly_errors("Calibrating"):
            ws.start_calibration(caller=me, limit=MIN_CALIBRATION_QUESTIONS if quick else None)
            st.rerun()


names = kb_names()
if not names:
    api_keys_section()
    st.stop()
# After a rename the selected name no longer exists, and the selector would fall back to the
# first knowledge base: select the renamed one (a widget's value can only be set before it is drawn).
if (renamed := st.session_state.pop("settings_kb_renamed", None)) in names:
    st.session_state.settings_kb = renamed
kb = ws.get_kb(st.selectbox("Knowledge base", names, key="settings_kb"), caller=me)
# Who may change it (settings, access, deletion): its owners and admins (rag_core/access.py).
may_share = ws.can_write(kb.kb_id, caller=me)
docs, chunks = ws.kb_counts(kb.kb_id, caller=me)
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
    retention = st.number_input(
        "Keep questions asked here for (days)", 0, 36500, int(kb.retention_days), 30,
        help="The query log and feedback of questions asked in this knowledge base are deleted after this many "
        "days (0 = kept until a user or an admin deletes them).")
    log_choices = ["default", "full", "anonymous", "off"]
    query_log = st.selectbox(
        "Query log for questions asked here", log_choices, index=log_choices.index(kb.query_log or "default"),
        help=f"default: the deployment's setting ({ws.settings.query_log}). full: who asked, the question and the "
        "answer. anonymous: the same without who asked. off: nothing is logged (and answers are not cached), so "
        "they cannot be rated and do not appear on Analytics. The deployment's setting is the most that is kept.")
    st.subheader("Retrieval")
    r = kb.retrieval
    c1, c2 = st.columns(2)
    top_k = c1.slider("Passages per answer (top k)", 1, 20, r.top_k, help=f"Default {defaults.top_k}.")
    alpha = c2.slider("Keyword ↔ meaning (alpha)", 0.0, 1.0, float(r.alpha), 0.05,
                      help="0 = keywords only (BM25), 1 = meaning only (embeddings). Default 0.5.")
    fusion = c1.selectbox("Fusion", ["relative_score", "rrf"], index=["relative_score", "rrf"].index(r.fusion),
                          help="relative_score: normalise each list's scores and blend (Weaviate's default). "
                          "rrf: reciprocal rank fusion (k = 60).")
    # RAG_RERANKER=none (rag_core/retrieval/factory.py) switches reranking off for every
    # knowledge base: the switch says so and is disabled rather than silently ignored.
    no_reranker = ws.settings.reranker == "none"
    rerank = c2.toggle("Rerank candidates" + (" (unavailable)" if no_reranker else ""), r.rerank,
                       disabled=no_reranker,
                       help="Reranking is unavailable: the app runs with RAG_RERANKER=none, so candidates keep "
                       "their fused order and this switch has no effect." if no_reranker else
                       f"Re-score the top 30 candidates with the reranker (RAG_RERANKER={ws.settings.reranker}).")
    if no_reranker:
        c2.caption(":material/info: Reranking is unavailable because RAG_RERANKER=none.")
    mmr = c1.slider("Diversity (MMR λ)", 0.0, 1.0, float(r.mmr_lambda), 0.05,
                    help="1 = pure relevance; lower values prefer passages that add something new. Default 0.7.")
    threshold = c2.slider(
        "Minimum relevance", 0.0, 1.0, float(r.score_threshold), 0.05,
        help="Passages below this are not used; 0 = off. With reranking on it is the reranker's probability "
        "that a passage is relevant. With reranking off (or unavailable) it is a passage's score relative to "
        "the best passage for the question (the best is 1.0), the same for relative-score and RRF fusion, "
        "so 0.5 keeps passages scoring at least half as well as the best. An answer says how many passages "
        "it dropped.")
    budget = c1.number_input("Context budget (tokens)", 200, 32000, int(r.context_tokens), 100,
                             help="Most passage text sent to the model per answer.")
    recency = c2.number_input(
        "Prefer newer documents: half-life (days)", 0, 36500, int(r.recency_half_life_days), 30,
        help="0 = off (the default: a manual does not age). Otherwise a passage's relevance is blended with its "
        "document's age: a document this many days older counts up to a quarter less, and never more than half "
        "less, so the newer of two similar passages (two editions of a policy) comes first.")
    stale = c1.number_input(
        "Flag sources older than (days)", 0, 36500, int(r.stale_after_days), 30,
        help="0 = never. A cited source dated more than this many days ago is marked as possibly out of date; "
        "one superseded by a newer version of the same document is marked whatever this is.")
    st.subheader("Answering")
    choices = ["", "auto", "conservative", "model"]
    policy_names = {"": f"App default ({ws.settings.answer_policy})", "auto": "Auto: calibrated for the model in use",
                    "conservative": "Conservative: the reader must confirm every answer",
                    "model": "Model: the language model's own verdict decides"}
    answer_policy = st.selectbox(
        "Answer policy", choices, index=choices.index(r.answer_policy if r.answer_policy in choices else ""),
        format_func=policy_names.get,
        help="Who decides whether an answer is shown. Offline the reader always decides. With a language model: "
        "auto uses the policy calibrated for that model while the calibration still fits (same model files, prompts "
        "and settings, enough questions, target met); uncalibrated, a model behind an endpoint decides by its own "
        "verdict (measured best on a paraphrasing model) and a local model file keeps the conservative gates; it "
        "always says which. model lets a strong "
        "model decide, with sentences the sources do not support still marked, and answers with no supported "
        "sentence withheld. Knowledge bases asked together get the strictest of their policies.")
    levels = ["", "off", "standard", "strict"]
    level_names = {"": f"App default ({ws.settings.moderation})", "off": "Off: nothing is checked",
                   "standard": "Standard: refuse requests for instructions to cause harm",
                   "strict": "Strict: also refuse any request or answer on a harmful subject"}
    moderation = st.selectbox(
        "Moderation", levels, index=levels.index(r.moderation if r.moderation in levels else ""),
        format_func=level_names.get,
        help="Standard refuses a question that asks how to do or make something harmful (weapons, drugs, malware, "
        "fraud, violence, self-harm, hateful writing, explicit sexual content) and always anything sexualising "
        "minors; a question about what a document says is answered. Strict also refuses a question or an answer "
        "that only names such a subject. Refusals are counted on the Analytics page. Knowledge bases asked "
        "together get the strictest level.")
    st.subheader("Access")
    if me.is_operator:
        st.caption(":material/info: No sign-in is configured, so in this app you are the operator and see every "
                   "knowledge base: these fields are not enforced here. They are enforced once sign-in is set up "
                   "(README: Sign-in) and for the CLI's --user/--groups/--tenant.")
    if kb.tenant:
        st.caption(f"Tenant: {escape_md(kb.tenant)} (a knowledge base lives in its creator's tenant)")
    owners = st.text_input("Owners (comma separated)", ", ".join(kb.owners), disabled=not may_share,
                           help="Owners (and admins) change settings, access and documents.")
    users = st.text_input("Readers (comma separated)", ", ".join(kb.acl_users), disabled=not may_share,
                          help="Users who may read it. Empty readers and groups = everyone in the tenant.")
    groups = st.text_input("Reader groups (comma separated)", ", ".join(kb.acl_groups), disabled=not may_share)
    if not may_share:
        st.caption("Only its owners and admins can change this knowledge base.")
    if st.form_submit_button("Save", type="primary", disabled=not may_share):
        with friendly_errors("Saving"):
            saved = ws.update_kb(
                kb.kb_id, caller=me, name=new_name, description=description, instructions=instructions,
                grounded_only=grounded, retention_days=int(retention),
                query_log="" if query_log == "default" else query_log,
                retrieval=RetrievalSettings(top_k=top_k, alpha=alpha, fusion=fusion, rerank=rerank, mmr_lambda=mmr,
                                            score_threshold=threshold, context_tokens=int(budget),
                                            recency_half_life_days=float(recency), stale_after_days=int(stale),
                                            answer_policy=answer_policy, moderation=moderation),
                owners=[u.strip() for u in owners.split(",") if u.strip()],
                acl_users=[u.strip() for u in users.split(",") if u.strip()],
                acl_groups=[g.strip() for g in groups.split(",") if g.strip()],
            )
            if saved.name != kb.name:
                st.session_state.settings_kb_renamed = saved.name
                toast_and_rerun(f"Renamed “{escape_md(kb.name)}” to “{escape_md(saved.name)}” and saved.")
            toast_and_rerun(saved_message(kb, saved))

policy_section(kb)

with st.expander("Preview: how the instructions are assembled"):
    st.code(system_prompt([kb]), language=None)

with st.expander("Delete this knowledge base"):
    st.warning(f"This removes {escape_md(kb.name)} and its {docs} document(s) for good.")
    sure = st.checkbox(f"Yes, delete {kb.name}", key=f"sure_{kb.kb_id}", disabled=not may_share)
    if st.button("Delete knowledge base", disabled=not (sure and may_share), type="primary"):
        with friendly_errors("Deleting"):
            ws.delete_kb(kb.kb_id, caller=me)
            st.session_state.pop("settings_kb", None)
            st.rerun()

api_keys_section()
