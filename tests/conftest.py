import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # lets fixtures see whether the test body failed (the browser test saves a screenshot then)
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


@pytest.fixture(scope="session")
def weaviate_server():
    """A real Weaviate server for the whole session (see rag_core/stores/weaviate_local.py)."""
    from rag_core.stores.weaviate_local import WeaviateUnavailable, start_weaviate

    try:
        server = start_weaviate(build=True)  # builds with Go once when the binary is missing
    except WeaviateUnavailable as exc:
        pytest.skip(str(exc))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def weaviate_cluster():
    """A real 3-node Weaviate cluster on 127.0.0.1 (rag_core/stores/weaviate_local.py)."""
    from rag_core.stores.weaviate_local import WeaviateUnavailable, start_cluster

    try:
        cluster = start_cluster(3, build=True)
    except WeaviateUnavailable as exc:
        pytest.skip(str(exc))
    yield cluster
    cluster.stop()
