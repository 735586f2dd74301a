"""Reads of many objects from a real Weaviate server page through all of them: a document
may have far more chunks than one Weaviate query returns (QUERY_MAXIMUM_RESULTS, 10,000 by
default), and a short read would leave chunks without vectors behind a document marked
indexed."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from rag_core.models import Chunk, SearchFilters


@pytest.fixture
def store(request, weaviate_server):
    from rag_core.stores.weaviate_store import WeaviateStore

    name = "P" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:16]
    s = WeaviateStore(weaviate_server.url, grpc_port=weaviate_server.grpc_port, collection=name)
    yield s
    s.client.collections.delete(name)
    s.close()


def vectors(n: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(n).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def check_whole(store, chunks: list[Chunk]) -> None:
    """Every read path returns every chunk; vectors set for all of them."""
    ids = [c.chunk_id for c in chunks]
    got = store.document_chunks("kb", "big")
    assert len(got) == len(chunks) and {c.chunk_id for c in got} == set(ids)
    assert [c.ordinal for c in got] == sorted(c.ordinal for c in chunks)
    assert [c.chunk_id for c in store.get_chunks(ids)] == ids
    vecs = vectors(len(chunks))
    assert store.set_vectors(ids, vecs) == len(chunks)
    back = store.vectors_for(ids)
    assert back.shape == vecs.shape and np.allclose(back, vecs, atol=1e-6)  # no zero row: none left without
    last = store.vector_search(vecs[-1], 1, SearchFilters(kb_ids=["kb"]))
    assert last[0].chunk.chunk_id == ids[-1]
    assert store.delete_document("kb", "big") == len(chunks)
    assert store.count() == 0


def test_reads_page_through_a_document_larger_than_a_page(store):
    """A lowered page size, so paging runs many times against the real server: 173 chunks in
    pages of 50, with ordinals shared across page ends and one ordinal held by more chunks
    than a page (chunks added through the API need not have distinct ordinals)."""
    store.page_size = 50
    ordinals = [0] * 61 + [1 + i // 3 for i in range(112)]  # 61 share ordinal 0, then triples
    chunks = [Chunk(chunk_id=f"kb/big#{i:03d}", doc_id="big", kb_id="kb", text=f"passage {i} common", ordinal=o)
              for i, o in enumerate(ordinals)]
    store.add_chunks(chunks, None)
    check_whole(store, chunks)


def test_a_document_of_more_than_ten_thousand_chunks_is_read_whole(store):
    """The default page size against Weaviate's own cap of 10,000 objects per query (about
    12 s here on 2 cores)."""
    n = 10_050
    chunks = [Chunk(chunk_id=f"kb/big#{i}", doc_id="big", kb_id="kb", text=f"p{i}", ordinal=i) for i in range(n)]
    store.add_chunks(chunks, None)
    check_whole(store, chunks)
