import pytest


def pytest_collection_modifyitems(config, items):
    """Two workers (pytest-xdist, `-n 2 --dist loadgroup` in pytest.ini): a module's tests run
    together on one worker, in order, so its module fixtures (a server, a workspace) are built
    once; every module that uses a real Weaviate server shares one worker, so one server (and
    one cluster) starts per run, not one per worker."""
    for item in items:
        uses_weaviate = {"weaviate_server", "weaviate_cluster"} & set(getattr(item, "fixturenames", ()))
        item.add_marker(pytest.mark.xdist_group("weaviate" if uses_weaviate else item.module.__name__))


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


@pytest.fixture(scope="module")
def oidc():
    """A real local OpenID provider (oidc-provider-mock, a dev dependency) on localhost, with
    alice@example.com in group "research" and bob@example.com in "sales": its base URL is the
    issuer. Used by the app's sign-in test and the API's bearer-token test."""
    import json
    import urllib.request

    from rag_core.generation.local_server import free_port

    mock = pytest.importorskip("oidc_provider_mock")
    with mock.run_server_in_thread(port=free_port()) as server:
        base = f"http://localhost:{server.server_port}"
        for sub, groups in (("alice@example.com", ["research"]), ("bob@example.com", ["sales"])):
            req = urllib.request.Request(f"{base}/users/{sub}", method="PUT",
                                         data=json.dumps({"email": sub, "groups": groups}).encode(),
                                         headers={"Content-Type": "application/json"})
            assert urllib.request.urlopen(req).status == 204
        yield base
