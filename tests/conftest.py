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
