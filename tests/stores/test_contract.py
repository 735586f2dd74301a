"""One contract for every chunk store (Haystack-style): the same tests, parametrised over
each implementation. Vectors here are hand-made unit vectors so that expected vector
rankings are known exactly; the real embedding model is exercised in the pipeline tests."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rag_core.db import Database
from rag_core.models import Chunk, SearchFilters
from rag_core.stores.embedded import EmbeddedStore

DIM = 8


def open_embedded(path, request):
    return EmbeddedStore(Database(path / "groundwork.db"))


def open_weaviate(path, request):
    from rag_core.stores.weaviate_store import WeaviateStore

    server = request.getfixturevalue("weaviate_server")
    # one collection per test, the same one on "reopen"
    name = "T" + hashlib.sha1(str(path).encode()).hexdigest()[:16]
    return WeaviateStore(server.url, grpc_port=server.grpc_port, collection=name)


def open_weaviate_cluster(path, request):
    """The same contract on a 3-node cluster: one shard (the default) with 3 copies, QUORUM.
    (With one shard per node, Weaviate's per-shard BM25 statistics reordered results in
    most runs: hence the default of one shard.)"""
    from rag_core.stores.weaviate_store import WeaviateStore

    cluster = request.getfixturevalue("weaviate_cluster")
    name = "C" + hashlib.sha1(str(path).encode()).hexdigest()[:16]
    return WeaviateStore(cluster.urls, grpc_port=[n.grpc for n in cluster.nodes], collection=name,
                         replication_factor=3)


STORES = {"embedded": open_embedded, "weaviate": open_weaviate, "weaviate-cluster": open_weaviate_cluster}


@pytest.fixture(params=["embedded", "weaviate", pytest.param("weaviate-cluster", marks=pytest.mark.cluster)])
def store_factory(request, tmp_path):
    factory = STORES[request.param]
    opened = []

    def make():
        s = factory(tmp_path, request)
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()
    if request.param.startswith("weaviate"):  # drop this test's collection
        s = factory(tmp_path, request)
        s.client.collections.delete(s.collection_name)
        s.close()


def unit(i: int, j: int | None = None, w: float = 0.0) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    if j is not None:
        v[j] = w
    return v / np.linalg.norm(v)


def make_chunks(doc_id: str, kb_id: str, texts: list[str], **acl) -> list[Chunk]:
    return [
        Chunk(chunk_id=f"{kb_id}/{doc_id}#{i}", doc_id=doc_id, kb_id=kb_id, text=t, title=f"title {doc_id}",
              source=f"{doc_id}.txt", ordinal=i, **acl)
        for i, t in enumerate(texts)
    ]


ALL = SearchFilters()


def test_add_keyword_vector_search_and_reopen(store_factory):
    s = store_factory()
    s.add_chunks(make_chunks("d1", "kb1", ["the zebra grazes on the savanna", "penguins live in antarctica"]),
                 np.stack([unit(0), unit(1)]))
    s.add_chunks(make_chunks("d2", "kb1", ["a zebra crossing in london"]), np.stack([unit(0, 1, 0.5)]))
    kw = s.keyword_search("zebra savanna", 10, ALL)
    assert [r.chunk.chunk_id for r in kw][0] == "kb1/d1#0"
    assert {r.chunk.doc_id for r in kw} == {"d1", "d2"}
    assert all(kw[i].score >= kw[i + 1].score for i in range(len(kw) - 1))
    vec = s.vector_search(unit(1), 3, ALL)
    assert vec[0].chunk.chunk_id == "kb1/d1#1"
    assert vec[0].score == pytest.approx(1.0, abs=1e-5)
    assert s.count() == 3
    s.close()
    s2 = store_factory()  # a restart: everything is still there, vectors included
    assert s2.count() == 3
    assert s2.vector_search(unit(1), 1, ALL)[0].chunk.text == "penguins live in antarctica"
    assert s2.health()["ok"]


def test_chunk_fields_round_trip(store_factory):
    s = store_factory()
    ch = Chunk(chunk_id="k/d#0", doc_id="d", kb_id="k", text="Ünïcödé text — naïve café 東京", title="T",
               section="A > B", source="f.pdf", ordinal=0, page_start=3, page_end=4, char_start=10,
               char_end=40, line_start=2, line_end=5, chunk_type="table", tenant="t1",
               acl_users=["ann"], acl_groups=["g"])
    s.add_chunks([ch], np.stack([unit(2)]))
    got = s.get_chunks(["k/d#0"])[0]
    assert got == ch
    # diacritics folded and unicode tokenised in the keyword index
    assert s.keyword_search("cafe", 5, ALL)[0].chunk.chunk_id == "k/d#0"
    assert s.keyword_search("東京", 5, ALL)[0].chunk.chunk_id == "k/d#0"


def test_delete_document_never_returned_again(store_factory):
    s = store_factory()
    s.add_chunks(make_chunks("gone", "kb", ["secret launch codes for the zebra"]), np.stack([unit(3)]))
    s.add_chunks(make_chunks("kept", "kb", ["zebra facts"]), np.stack([unit(4)]))
    assert s.delete_document("kb", "gone") == 1
    assert all(r.chunk.doc_id != "gone" for r in s.keyword_search("zebra secret launch", 10, ALL))
    assert all(r.chunk.doc_id != "gone" for r in s.vector_search(unit(3), 10, ALL))
    assert s.get_chunks(["kb/gone#0"]) == []
    other = store_factory()  # another process/opening sees the delete too
    assert all(r.chunk.doc_id != "gone" for r in other.vector_search(unit(3), 10, ALL))
    assert other.health()["ok"]


def test_filters_by_kb_tenant_and_doc(store_factory):
    """The filters the access policy relies on (rag_core/access.py turns a caller into the
    kb_ids it may see). Chunks' own user/group stamps filter nothing: they go stale when a
    knowledge base's access is edited."""
    s = store_factory()
    s.add_chunks(make_chunks("a", "kb1", ["apple orchard report"]), np.stack([unit(0)]))
    s.add_chunks(make_chunks("b", "kb2", ["apple pie recipe"]), np.stack([unit(0, 1, 0.1)]))
    s.add_chunks(make_chunks("c", "kb1", ["apple board minutes"], tenant="acme", acl_users=["ann"]),
                 np.stack([unit(0, 2, 0.1)]))
    s.add_chunks(make_chunks("d", "kb1", ["apple hr salaries"], acl_groups=["hr"]), np.stack([unit(0, 3, 0.1)]))

    def docs(results):
        return {r.chunk.doc_id for r in results}

    kb1 = SearchFilters(kb_ids=["kb1"])
    assert docs(s.keyword_search("apple", 10, kb1)) == {"a", "c", "d"}
    assert docs(s.vector_search(unit(0), 10, kb1)) == {"a", "c", "d"}
    assert docs(s.hybrid_search("apple", unit(0), 10, kb1)) == {"a", "c", "d"}
    both = SearchFilters(kb_ids=["kb1", "kb2"], user="bob", groups=["sales"])  # who asks filters nothing
    assert docs(s.keyword_search("apple", 10, both)) == {"a", "b", "c", "d"}
    assert docs(s.vector_search(unit(0), 10, both)) == {"a", "b", "c", "d"}
    acme = SearchFilters(tenant="acme")
    assert docs(s.keyword_search("apple", 10, acme)) == {"c"}
    assert docs(s.vector_search(unit(0), 10, acme)) == {"c"}
    only = SearchFilters(kb_ids=["kb1", "kb2"], doc_ids=["b", "d"])
    assert docs(s.keyword_search("apple", 10, only)) == {"b", "d"}
    assert docs(s.vector_search(unit(0), 10, only)) == {"b", "d"}
    assert s.keyword_search("apple", 10, SearchFilters(kb_ids=["nope"])) == []
    assert s.vector_search(unit(0), 10, SearchFilters(kb_ids=["nope"])) == []
    assert s.vector_search(unit(0), 10, SearchFilters(kb_ids=[])) == []  # no visible knowledge base: nothing


def test_search_filters_have_no_per_chunk_acl_switch():
    """Access is per knowledge base; the per-chunk ACL switch is gone from the filters."""
    with pytest.raises(TypeError):
        SearchFilters(enforce_acl=True)


def test_keyword_query_syntax_is_never_an_error(store_factory):
    s = store_factory()
    s.add_chunks(make_chunks("x", "kb", ['he said "NEAR" AND (OR) * ^ - :col']), np.stack([unit(5)]))
    for q in ['"', "AND OR NOT", "col:near", "*", "(((", "NEAR(a b)", "-", "ünï"]:
        s.keyword_search(q, 5, ALL)  # must not raise
    assert s.keyword_search("?!", 5, ALL) == []


def test_add_is_atomic_on_failure(store_factory):
    s = store_factory()
    chunks = make_chunks("bad", "kb", ["one", "two"])
    with pytest.raises(ValueError):
        s.add_chunks(chunks, np.stack([unit(0)]))  # one vector for two chunks
    dup = make_chunks("dup", "kb", ["alpha", "beta"])
    dup[1].chunk_id = dup[0].chunk_id  # unique-key violation on the second row
    with pytest.raises(Exception):
        s.add_chunks(dup, np.stack([unit(0), unit(1)]))
    assert s.count() == 0
    assert s.keyword_search("alpha", 5, ALL) == []
    assert s.vector_search(unit(0), 5, ALL) == []
    assert s.health()["ok"]


def test_many_adds_and_deletes_keep_indexes_consistent(store_factory):
    s = store_factory()
    rng = np.random.default_rng(0)
    for d in range(60):
        vecs = rng.normal(size=(5, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        s.add_chunks(make_chunks(f"d{d}", "kb", [f"doc{d} part{i} common" for i in range(5)]), vecs)
    for d in range(0, 60, 2):
        s.delete_document("kb", f"d{d}")
    assert s.count() == 150
    h = s.health()
    assert h["ok"] and h["vectors"] == 150
    res = s.vector_search(rng.normal(size=DIM).astype(np.float32), 200, ALL)
    assert len(res) == 150
    assert all(int(r.chunk.doc_id[1:]) % 2 == 1 for r in res)
    assert len(s.keyword_search("common", 500, ALL)) == 150


def test_long_text(store_factory):
    s = store_factory()
    long_text = ("lorem ipsum " * 20000) + " needle"
    s.add_chunks(make_chunks("long", "kb", [long_text]), np.stack([unit(6)]))
    assert s.keyword_search("needle", 1, ALL)[0].chunk.doc_id == "long"


def test_hybrid_alpha_extremes_and_scores(store_factory):
    s = store_factory()
    # "kw" matches the query words; "vec" matches the query vector; "both" a little of each
    s.add_chunks(make_chunks("kw", "kb", ["quantum entanglement of photons"]), np.stack([unit(1)]))
    s.add_chunks(make_chunks("vec", "kb", ["unrelated words entirely"]), np.stack([unit(0)]))
    s.add_chunks(make_chunks("both", "kb", ["photons"]), np.stack([unit(0, 1, 0.6)]))
    q, v = "quantum entanglement photons", unit(0)
    kw_hits = s.hybrid_search(q, v, 3, ALL, alpha=0.0)
    pure_kw = [r.chunk.doc_id for r in kw_hits]
    assert pure_kw == [r.chunk.doc_id for r in s.keyword_search(q, 3, ALL)] == ["kw", "both"]
    # keyword ranking still reports each hit's cosine (the reranker reads it)
    cos = {r.chunk.doc_id: r.scores["vector"] for r in kw_hits}
    assert cos["kw"] == pytest.approx(0.0, abs=1e-5) and cos["both"] == pytest.approx(float(unit(0, 1, 0.6) @ v), abs=1e-4)
    pure_vec = [r.chunk.doc_id for r in s.hybrid_search(q, v, 3, ALL, alpha=1.0)]
    assert pure_vec == [r.chunk.doc_id for r in s.vector_search(v, 3, ALL)]
    assert pure_vec[0] == "vec"
    for fusion in ("relative_score", "rrf"):
        mixed = s.hybrid_search(q, v, 3, ALL, alpha=0.5, fusion=fusion)
        assert {r.chunk.doc_id for r in mixed} == {"kw", "vec", "both"}
        assert all({"keyword", "vector", "fused"} <= set(r.scores) for r in mixed)
        assert all(mixed[i].score >= mixed[i + 1].score for i in range(len(mixed) - 1))
    # filters apply inside hybrid search too
    assert s.hybrid_search(q, v, 3, SearchFilters(kb_ids=["other"]), alpha=0.5) == []


def test_keyword_first_then_vectors(store_factory):
    """A document written without vectors is found by its words at once (keyword search and
    the keyword side of hybrid), never by vector search; once its vectors are set it is."""
    s = store_factory()
    s.add_chunks(make_chunks("old", "kb", ["the heron fishes in the marsh"]), np.stack([unit(5)]))
    s.add_chunks(make_chunks("new", "kb", ["the okapi hides in the rainforest", "okapi calves"]), None)
    assert s.keyword_search("okapi", 5, ALL)[0].chunk.doc_id == "new"
    assert {r.chunk.doc_id for r in s.vector_search(unit(6), 5, ALL)} == {"old"}
    hybrid = s.hybrid_search("okapi rainforest", unit(6), 5, ALL, alpha=0.3)
    assert hybrid and hybrid[0].chunk.chunk_id == "kb/new#0"  # on its keyword side alone
    assert hybrid[0].scores["keyword"] > 0 and hybrid[0].scores["vector"] == 0
    # vector-only ranking cannot see it yet
    assert "new" not in {r.chunk.doc_id for r in s.hybrid_search("okapi", unit(6), 5, ALL, alpha=1.0)}
    assert (s.vectors_for(["kb/new#0"]) == 0).all()

    assert s.set_vectors(["kb/new#0", "kb/new#1", "kb/gone#0"], np.stack([unit(6), unit(7), unit(0)])) == 2
    top = s.vector_search(unit(6), 1, ALL)[0]
    assert top.chunk.chunk_id == "kb/new#0" and top.score == pytest.approx(1.0, abs=1e-5)
    assert s.hybrid_search("okapi", unit(7), 5, ALL, alpha=1.0)[0].chunk.chunk_id == "kb/new#1"
    assert s.get_chunks(["kb/new#0"])[0].text == "the okapi hides in the rainforest"  # properties kept
    s.close()
    s2 = store_factory()  # the vectors persisted
    assert s2.vector_search(unit(7), 1, ALL)[0].chunk.chunk_id == "kb/new#1"


def test_vectors_set_by_another_process_are_seen(store_factory, tmp_path, request):
    """Two store objects on the same data (the app and a CLI ingest): vectors one sets are
    used by the other's next search."""
    a = store_factory()
    b = store_factory()
    a.add_chunks(make_chunks("d", "kb", ["tapir snout"]), None)
    assert b.vector_search(unit(2), 5, ALL) == []
    a.set_vectors(["kb/d#0"], np.stack([unit(2)]))
    assert b.vector_search(unit(2), 5, ALL)[0].chunk.chunk_id == "kb/d#0"


def dated(doc_id: str, kb_id: str, texts: list[str], date: str) -> list[Chunk]:
    from rag_core.models import iso_to_day

    chunks = make_chunks(doc_id, kb_id, texts)
    for c in chunks:
        c.doc_day = iso_to_day(date)
    return chunks


def test_date_range_filters_inside_every_search(store_factory):
    """after/before keep documents dated in range (inclusive) in keyword, vector and hybrid
    search alike, combined with the other filters; the date comes back with the chunk."""
    s = store_factory()
    s.add_chunks(dated("old", "kb", ["leave policy: 20 days of annual leave"], "2023-03-01"), np.stack([unit(0)]))
    s.add_chunks(dated("new", "kb", ["leave policy: 25 days of annual leave"], "2025-03-01"), np.stack([unit(0, 1, 0.1)]))
    s.add_chunks(dated("other", "kb2", ["leave policy elsewhere"], "2025-06-01"), np.stack([unit(0, 2, 0.1)]))

    def docs(filters):
        return [{r.chunk.doc_id for r in s.keyword_search("leave policy", 10, filters)},
                {r.chunk.doc_id for r in s.vector_search(unit(0), 10, filters)},
                {r.chunk.doc_id for r in s.hybrid_search("leave policy", unit(0), 10, filters)}]

    assert docs(SearchFilters(after="2024-01-01")) == [{"new", "other"}] * 3
    assert docs(SearchFilters(before="2024-12-31")) == [{"old"}] * 3
    assert docs(SearchFilters(after="2023-03-01", before="2023-03-01")) == [{"old"}] * 3  # inclusive
    assert docs(SearchFilters(kb_ids=["kb"], after="2025-01-01")) == [{"new"}] * 3
    assert docs(SearchFilters(after="2026-01-01")) == [set()] * 3
    got = s.get_chunks(["kb/new#0"])[0]
    assert got.date == "2025-03-01"


def test_document_date_change_applies_at_once_and_in_other_openings(store_factory):
    s = store_factory()
    s.add_chunks(dated("d", "kb", ["tariff table one", "tariff table two"], "2020-01-01"),
                 np.stack([unit(3), unit(4)]))
    s.add_chunks(dated("e", "kb", ["tariff table three"], "2020-01-01"), np.stack([unit(5)]))
    later = SearchFilters(after="2024-01-01")
    other = store_factory()  # another process: must see the edit on its next search
    assert other.keyword_search("tariff", 10, later) == []
    from rag_core.models import iso_to_day

    assert s.set_document_date("kb", "d", iso_to_day("2024-06-30")) == 2
    for st in (s, other):
        assert {r.chunk.chunk_id for r in st.keyword_search("tariff", 10, later)} == {"kb/d#0", "kb/d#1"}
        assert {r.chunk.doc_id for r in st.vector_search(unit(3), 10, later)} == {"d"}
    assert s.get_chunks(["kb/d#1"])[0].date == "2024-06-30"
    assert s.get_chunks(["kb/e#0"])[0].date == "2020-01-01"  # the other document keeps its date
    assert s.health()["ok"]


def test_chunks_are_keyword_indexed_in_their_language_and_can_be_reindexed_in_another(store_factory):
    """A German chunk's terms are German stems (an inflected question form finds it), a
    Japanese one's are bigrams; re-indexing a document in another language swaps its terms
    at once, in this opening and another, and keeps its vectors and its other chunks."""
    s = store_factory()
    de = make_chunks("de", "kb", ["Die Passwörter werden jedes Jahr geändert.", "Urlaubsanträge gehen an die Leitung."])
    for c in de:
        c.language = "de"
    ja = make_chunks("ja", "kb", ["パスワードは毎年変更してください。"])
    ja[0].language = "ja"
    s.add_chunks(de, np.stack([unit(5), unit(6)]))
    s.add_chunks(ja, np.stack([unit(7)]))
    german = SearchFilters(languages=("de",))
    assert [r.chunk.chunk_id for r in s.keyword_search("Wie ändere ich mein Passwort?", 5, german)] == ["kb/de#0"]
    assert [r.chunk.chunk_id for r in s.keyword_search("パスワードの変更", 5, SearchFilters(languages=("ja",)))] == ["kb/ja#0"]
    assert s.get_chunks(["kb/de#0"])[0].language == "de"
    es = make_chunks("es", "kb", ["Las contraseñas se cambian cada año."])
    es[0].language = "es"
    s.add_chunks(es, np.stack([unit(4)]))
    spanish = SearchFilters(languages=("es",))
    assert [r.chunk.chunk_id for r in s.keyword_search("¿Cómo cambio la contraseña?", 5, spanish)] == ["kb/es#0"]
    other = store_factory()
    # read as English, "contraseñas" is folded before an English stem: the Spanish stem no longer meets it
    assert s.reanalyse_document("kb", "es", "en") == 1
    for st in (s, other):
        assert st.keyword_search("¿Cómo cambio la contraseña?", 5, spanish) == []
        assert st.get_chunks(["kb/es#0"])[0].language == "en"
        assert [r.chunk.doc_id for r in st.vector_search(unit(4), 1, SearchFilters())] == ["es"]
        assert st.count("kb") == 4
    assert s.reanalyse_document("kb", "es", "es") == 1
    assert [r.chunk.chunk_id for r in other.keyword_search("¿Cómo cambio la contraseña?", 5, spanish)] == ["kb/es#0"]


def test_cleared_vectors_leave_vector_search_and_keyword_search_keeps_the_document(store_factory):
    """Re-embedding with another model: a document's vectors are dropped (it is found by its
    words only, in this opening and another), then set anew."""
    s = store_factory()
    s.add_chunks(make_chunks("a", "kb", ["glacier melt rates", "glacier ice cores"]), np.stack([unit(1), unit(2)]))
    s.add_chunks(make_chunks("b", "kb", ["desert dunes"]), np.stack([unit(3)]))
    assert s.vector_dim() == DIM
    other = store_factory()
    assert s.clear_vectors("kb", "a") == 2
    for st in (s, other):
        assert {r.chunk.doc_id for r in st.vector_search(unit(1), 5, ALL)} == {"b"}
        assert {r.chunk.doc_id for r in st.keyword_search("glacier", 5, ALL)} == {"a"}
        assert {r.chunk.doc_id for r in st.hybrid_search("glacier", unit(1), 5, ALL)} >= {"a"}
    assert s.set_vectors(["kb/a#0", "kb/a#1"], np.stack([unit(4), unit(5)])) == 2
    for st in (s, other):
        assert [r.chunk.chunk_id for r in st.vector_search(unit(4), 1, ALL)] == ["kb/a#0"]


def test_code_is_keyword_searchable_by_whole_identifiers_and_by_their_words(store_factory):
    """Issue 53: an identifier is one term (`read_csv` meets `read_csv`, not every passage
    with "read" or "csv"), and in code its words are indexed beside it, so a question in
    plain words ("get a user by id") meets `getUserById`."""
    s = store_factory()
    code = [Chunk(chunk_id="kb1/c#0", doc_id="c", kb_id="kb1", source="users.js", chunk_type="code", ordinal=0,
                  text="```javascript\nexport async function getUserById(id) {\n  return db.rows[id];\n}\n```"),
            Chunk(chunk_id="kb1/c#1", doc_id="c", kb_id="kb1", source="users.js", chunk_type="code", ordinal=1,
                  text="```python\ndef read_csv(path):\n    return parse(path)\n```")]
    prose = make_chunks("p", "kb1", ["To read a csv file you open it first; csv files read fast and read well.",
                                     "The user id is shown on the profile page of every user."])
    s.add_chunks(code + prose, np.stack([unit(0), unit(1), unit(2), unit(3)]))
    assert s.keyword_search("read_csv", 5, ALL)[0].chunk.chunk_id == "kb1/c#1"
    assert s.keyword_search("getUserById", 5, ALL)[0].chunk.chunk_id == "kb1/c#0"
    assert [r.chunk.chunk_id for r in s.keyword_search("getUserById", 5, ALL)] == ["kb1/c#0"]  # one term, in one passage
    hits = [r.chunk.chunk_id for r in s.keyword_search("get user by id", 5, ALL)]
    assert "kb1/c#0" in hits  # the identifier's words are in the index
    # prose is indexed as before: its words only, no identifier splitting
    assert not s.keyword_search("getuserbyid", 5, SearchFilters(doc_ids=["p"]))


def test_excluded_documents_are_left_out_inside_every_search(store_factory):
    """Drafts (issue 53): (kb_id, doc_id) pairs left out by the store query itself, per
    knowledge base: the same doc_id in another knowledge base is still found."""
    s = store_factory()
    s.add_chunks(make_chunks("d1", "kb1", ["the zebra grazes on the savanna"]), np.stack([unit(0)]))
    s.add_chunks(make_chunks("d2", "kb1", ["a zebra crossing in london"]), np.stack([unit(0, 1, 0.5)]))
    s.add_chunks(make_chunks("d1", "kb2", ["a zebra in the zoo"]), np.stack([unit(0, 2, 0.5)]))
    f = SearchFilters(exclude_docs=(("kb1", "d1"),))
    for hits in (s.keyword_search("zebra", 10, f), s.vector_search(unit(0), 10, f),
                 s.hybrid_search("zebra", unit(0), 10, f)):
        assert {(r.chunk.kb_id, r.chunk.doc_id) for r in hits} == {("kb1", "d2"), ("kb2", "d1")}
    assert len(s.keyword_search("zebra", 10, ALL)) == 3
