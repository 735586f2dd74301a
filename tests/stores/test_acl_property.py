"""Property: whatever knowledge bases, access settings, edits and callers exist, a search
returns exactly the documents of the knowledge bases `rag_core.access.can_see` lets the
caller see (hypothesis generates the worlds).

Everything goes through the real parts: knowledge bases are created and their access edited
with AppDB on a real SQLite file, the filters are built by `rag_core.access.search_filters`
from the knowledge bases read back from that database (never from the test's own objects),
and the real store answers: the embedded store on the same file, and a real Weaviate server.
Chunks keep the access they were ingested with, which the edits make stale on purpose: the
stores must not filter on those stamps."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core import access
from rag_core.access import Caller
from rag_core.appdb import AppDB
from rag_core.db import Database
from rag_core.models import Chunk
from rag_core.stores.embedded import EmbeddedStore

USERS = ["ann", "bob", "cid", "dee"]
GROUPS = ["hr", "eng", "board"]
TENANTS = [None, "acme", "globex"]
DIM = 8

kb_rule = st.fixed_dictionaries({
    "tenant": st.sampled_from(TENANTS),
    "users": st.lists(st.sampled_from(USERS), max_size=2, unique=True),
    "groups": st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    "owners": st.lists(st.sampled_from(USERS), max_size=1, unique=True),
})
caller_rule = st.fixed_dictionaries({
    "user": st.sampled_from([*USERS, None]),
    "groups": st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    "tenant": st.sampled_from(TENANTS),
})
worlds = dict(
    rules=st.lists(kb_rule, min_size=1, max_size=4),
    edits=st.lists(st.tuples(st.integers(0, 3), kb_rule), max_size=4),
    callers=st.lists(caller_rule, min_size=1, max_size=4),
)


def run_world(appdb: AppDB, store, rules, edits, callers) -> None:
    """One document per knowledge base; check every caller before and after the edits."""
    everyone = lambda kb: True  # noqa: E731 - names are not what is under test
    doc_of = {}
    for i, r in enumerate(rules):
        kb = appdb.create_kb(f"kb{i}", everyone, tenant=r["tenant"], acl_users=r["users"], acl_groups=r["groups"],
                             owners=r["owners"])
        v = np.random.default_rng(i).normal(size=(1, DIM)).astype(np.float32)
        store.add_chunks([Chunk(chunk_id=f"{kb.kb_id}/d{i}#0", doc_id=f"d{i}", kb_id=kb.kb_id,
                                text="shared secret words", tenant=r["tenant"], acl_users=r["users"],
                                acl_groups=r["groups"])], v / np.linalg.norm(v))
        doc_of[kb.kb_id] = f"d{i}"

    def check() -> None:
        kbs = [kb for kb in appdb.list_kbs() if kb.kb_id in doc_of]  # as the database holds them now
        for c in callers:
            caller = Caller(user=c["user"], groups=frozenset(c["groups"]), tenant=c["tenant"], admin=False)
            f = access.search_filters(caller, kbs)
            expected = {doc_of[kb.kb_id] for kb in kbs if access.can_see(caller, kb)}
            q = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
            assert {r.chunk.doc_id for r in store.keyword_search("secret words", 100, f)} == expected
            assert {r.chunk.doc_id for r in store.vector_search(q, 100, f)} == expected
            assert {r.chunk.doc_id for r in store.hybrid_search("secret", q, 100, f)} == expected

    check()
    ids = list(doc_of)
    for i, e in edits:
        if i < len(ids):
            kb = appdb.find_kb(ids[i])
            appdb.update_kb(replace(kb, tenant=e["tenant"], acl_users=e["users"], acl_groups=e["groups"],
                                    owners=e["owners"]), everyone)
    check()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**worlds)
def test_embedded_search_returns_what_the_policy_allows(rules, edits, callers):
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "groundwork.db")  # app state and chunks in one file, as the app has them
        try:
            run_world(AppDB(db), EmbeddedStore(db), rules, edits, callers)
        finally:
            db.close()


@pytest.fixture(scope="module")
def weaviate_store(weaviate_server):
    """One collection for every example: knowledge-base ids are fresh per example, so an
    example's filters never match an earlier one's chunks."""
    from rag_core.stores.weaviate_store import WeaviateStore

    s = WeaviateStore(weaviate_server.url, grpc_port=weaviate_server.grpc_port, collection="AclProperty")
    yield s
    s.client.collections.delete("AclProperty")
    s.close()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**worlds)
def test_weaviate_search_returns_what_the_policy_allows(weaviate_store, rules, edits, callers):
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "groundwork.db")
        try:
            run_world(AppDB(db), weaviate_store, rules, edits, callers)
        finally:
            db.close()
