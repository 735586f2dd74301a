"""The factory picks Weaviate from settings and reports a bad address clearly."""

import pytest

from rag_core.config import Settings
from rag_core.db import Database
from rag_core.errors import GroundworkError
from rag_core.stores import make_store


def test_weaviate_needs_a_url(tmp_path):
    with pytest.raises(GroundworkError, match="WEAVIATE_URL"):
        make_store(Settings(store="weaviate", weaviate_url=None), Database(tmp_path / "g.db"))


def test_unreachable_weaviate_is_a_clear_error(tmp_path):
    s = Settings(store="weaviate", weaviate_url="http://127.0.0.1:9", weaviate_grpc_port=10)
    with pytest.raises(GroundworkError, match="cannot reach Weaviate at http://127.0.0.1:9"):
        make_store(s, Database(tmp_path / "g.db"))


def test_factory_builds_a_working_store(tmp_path, weaviate_server):
    s = Settings(store="weaviate", weaviate_url=weaviate_server.url, weaviate_grpc_port=weaviate_server.grpc_port)
    store = make_store(s, Database(tmp_path / "g.db"))
    assert store.health()["ok"]
    store.close()


def test_weaviate_embedded_runs_a_local_server_in_the_data_dir(tmp_path, weaviate_server, monkeypatch):
    from rag_core.stores.weaviate_local import find_binary

    if find_binary() is None:
        pytest.skip("weaviate-embedded needs the weaviate-server binary (only WEAVIATE_URL is set)")
    monkeypatch.delenv("WEAVIATE_URL", raising=False)
    store = make_store(Settings(store="weaviate-embedded", data_dir=tmp_path), Database(tmp_path / "g.db"))
    assert store.health()["ok"]
    assert (tmp_path / "weaviate").is_dir()
    store.close()


def test_older_schema_is_migrated_in_place(weaviate_server):
    import weaviate
    from weaviate.classes.config import Configure, DataType, Property

    from rag_core.stores.weaviate_store import WeaviateStore

    c = weaviate.connect_to_custom(http_host="127.0.0.1", http_port=int(weaviate_server.url.rsplit(":", 1)[1]),
                                   http_secure=False, grpc_host="127.0.0.1", grpc_port=weaviate_server.grpc_port,
                                   grpc_secure=False)
    name = "OldSchema"
    c.collections.delete(name)
    c.collections.create(name, properties=[Property(name="text", data_type=DataType.TEXT)],
                         vector_config=Configure.Vectors.self_provided())
    store = WeaviateStore(weaviate_server.url, grpc_port=weaviate_server.grpc_port, collection=name)
    props = {p.name for p in c.collections.get(name).config.get().properties}
    assert {"content", "kb_id", "doc_key", "acl_users", "acl_public", "page_start"} <= props
    store.close()
    c.collections.delete(name)
    c.close()
