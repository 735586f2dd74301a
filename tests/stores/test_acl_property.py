"""Property: whatever users, groups, tenants and documents exist, no search result ever
violates the ACL (hypothesis generates the worlds; the real store answers)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
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
