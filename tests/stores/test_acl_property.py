"""Property: whatever users, groups, tenants and documents exist, no search result ever
violates the ACL (hypothesis generates the worlds; the real store answers)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core.db import Database
from rag_core.models import Chunk, SearchFilters
from rag_core.stores.embedded import EmbeddedStore

USERS = ["ann", "bob", "cid", "dee"]
GROUPS = ["hr", "eng", "board"]
TENANTS = [None, "acme", "globex"]
KBS = ["kb1", "kb2"]

doc_strategy = st.fixed_dictionaries({
    "kb": st.sampled_from(KBS),
    "tenant": st.sampled_from(TENANTS),
    "users": st.lists(st.sampled_from(USERS), max_size=2, unique=True),
    "groups": st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
})
query_strategy = st.fixed_dictionaries({
    "user": st.sampled_from(USERS),
    "groups": st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    "tenant": st.sampled_from(TENANTS),
    "kbs": st.lists(st.sampled_from(KBS), min_size=1, max_size=2, unique=True),
})


def allowed(doc: dict, q: dict) -> bool:
    if doc["kb"] not in q["kbs"]:
        return False
    if q["tenant"] is not None and doc["tenant"] != q["tenant"]:
        return False
    if not doc["users"] and not doc["groups"]:
        return True
    return q["user"] in doc["users"] or bool(set(q["groups"]) & set(doc["groups"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc_strategy, min_size=1, max_size=12), queries=st.lists(query_strategy, min_size=1, max_size=5))
def test_no_result_ever_violates_the_acl(docs, queries):
    with tempfile.TemporaryDirectory() as tmp:
        store = EmbeddedStore(Database(Path(tmp) / "g.db"))
        rng = np.random.default_rng(len(docs))
        for i, d in enumerate(docs):
            v = rng.normal(size=(1, 8)).astype(np.float32)
            store.add_chunks([Chunk(chunk_id=f"{d['kb']}/d{i}#0", doc_id=f"d{i}", kb_id=d["kb"],
                                    text="shared secret words", tenant=d["tenant"], acl_users=d["users"],
                                    acl_groups=d["groups"])], v / np.linalg.norm(v))
        for q in queries:
            f = SearchFilters(kb_ids=q["kbs"], tenant=q["tenant"], user=q["user"], groups=q["groups"], enforce_acl=True)
            expected = {f"d{i}" for i, d in enumerate(docs) if allowed(d, q)}
            kw = {r.chunk.doc_id for r in store.keyword_search("secret words", 100, f)}
            vec = {r.chunk.doc_id for r in store.vector_search(np.ones(8, dtype=np.float32), 100, f)}
            hyb = {r.chunk.doc_id for r in store.hybrid_search("secret", np.ones(8, dtype=np.float32), 100, f)}
            # nothing forbidden ever comes back, and everything allowed is findable
            assert kw == expected and vec == expected
            assert hyb <= expected
        store.db.close()


# ---- the policy module (rag_core/access.py) through the workspace ---------------------

kb_rule = st.fixed_dictionaries({
    "tenant": st.sampled_from(TENANTS),
    "users": st.lists(st.sampled_from(USERS), max_size=2, unique=True),
    "groups": st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
})
caller_strategy = st.fixed_dictionaries({
    "user": st.sampled_from(USERS),
    "groups": st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    "tenant": st.sampled_from(TENANTS),
    "admin": st.booleans(),
})


def may_see(kb: dict, c: dict) -> bool:
    """The rule, written out independently of rag_core/access.py."""
    if c["admin"]:
        return True
    if kb["tenant"] is not None and kb["tenant"] != c["tenant"]:
        return False
    return (not kb["users"] and not kb["groups"]) or c["user"] in kb["users"] or bool(set(c["groups"]) & set(kb["groups"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=st.lists(kb_rule, min_size=1, max_size=4), edits=st.lists(kb_rule, min_size=1, max_size=4),
       callers=st.lists(caller_strategy, min_size=1, max_size=4))
def test_the_policy_decides_every_surface_and_edits_apply_at_once(rules, edits, callers):
    """Knowledge bases with random tenants/users/groups, one document each; for random callers
    the KB list, search and the original-file check agree with the rule, before and after the
    knowledge bases' access is edited (nothing re-ingested)."""
    from dataclasses import replace

    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.errors import NotFound
    from rag_core.models import Document
    from rag_core.workspace import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(get_settings(Path(tmp) / "data"))
        kbs = []
        for i, r in enumerate(rules):
            kb = ws.create_kb(f"kb{i}", tenant=r["tenant"], acl_users=r["users"], acl_groups=r["groups"])
            # stamped with the ingest-time ACL, which the edits below make stale on purpose
            ws.store.add_chunks([Chunk(chunk_id=f"{kb.kb_id}/d{i}#0", doc_id=f"d{i}", kb_id=kb.kb_id,
                                       text="shared secret words", tenant=r["tenant"], acl_users=r["users"],
                                       acl_groups=r["groups"])], None)
            ws.appdb.begin_document(Document(doc_id=f"d{i}", kb_id=kb.kb_id, source=f"d{i}.txt", title="",
                                             mime="text/plain", sha256=str(i)))
            ws.appdb.mark_searchable(kb.kb_id, f"d{i}", 1)
            kbs.append(kb)

        def check(current):
            for c in callers:
                caller = Caller(user=c["user"], groups=frozenset(c["groups"]), tenant=c["tenant"], admin=c["admin"])
                expected = {kb.name for kb, r in zip(kbs, current) if may_see(r, c)}
                assert {kb.name for kb in ws.list_kbs(caller)} == expected
                found = {r.chunk.doc_id for r in ws.retrieval.run(
                    "secret words", ws.filters_for(kbs, caller=caller), kbs[0].retrieval, mode="keyword",
                    rerank=False, k=50).results}
                assert found == {f"d{i}" for i, (kb, r) in enumerate(zip(kbs, current)) if may_see(r, c)}
                for i, (kb, r) in enumerate(zip(kbs, current)):
                    if may_see(r, c):
                        ws.accessible_document(kb.kb_id, f"d{i}", caller=caller)
                    else:
                        with pytest.raises(NotFound):
                            ws.accessible_document(kb.kb_id, f"d{i}", caller=caller)

        check(rules)
        current = list(rules)
        for i, e in enumerate(edits[: len(kbs)]):
            kbs[i] = replace(kbs[i], tenant=e["tenant"], acl_users=e["users"], acl_groups=e["groups"])
            ws.appdb.update_kb(kbs[i])
            current[i] = e
        check(current)
        ws.close()
