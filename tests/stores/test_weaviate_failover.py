"""Failover replaces the store's client under a lock: two threads whose calls fail at the
same moment make one new connection between them, and neither closes a client the other
is using. Against a real server, listed twice (two "nodes" that are the same process), so
failing over has somewhere to go; the first call of each thread fails as a lost node's
would."""

from __future__ import annotations

import threading
import time


def test_two_threads_failing_over_at_once_make_one_new_client(weaviate_server):
    from rag_core.stores.weaviate_store import WeaviateStore

    url = f"{weaviate_server.url},{weaviate_server.url}"
    store = WeaviateStore(url, grpc_port=[weaviate_server.grpc_port] * 2, collection="FailoverLock")
    first = store.client
    made = []
    connect = store._connect

    def slow_connect(start):  # a real connection, slow enough that both threads are inside
        time.sleep(0.5)
        client = connect(start)
        made.append(client)
        return client

    store._connect = slow_connect
    both_failing = threading.Barrier(2)

    def call_failing_once():
        failed = []

        def call():
            if not failed:
                failed.append(1)
                both_failing.wait(timeout=10)
                raise RuntimeError("<AioRpcError: StatusCode.UNAVAILABLE: failed to connect to all addresses>")
            return len(store.coll.query.fetch_objects(limit=1).objects)

        return call

    results, errors = [], []

    def worker():
        try:
            results.append(store._retry(call_failing_once()))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    try:
        assert not errors, errors
        assert results == [0, 0]
        assert len(made) == 1, f"{len(made)} new clients for one failed client"
        assert store.client is made[0] and store.client.is_connected()
        deadline = time.monotonic() + 10  # the replaced client is closed in the background
        while first.is_connected() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not first.is_connected()
        assert store.retries == 2  # each thread's call succeeded on its one retry
        assert store.count() == 0  # the store works on the new client
    finally:
        store.client.collections.delete("FailoverLock")
        store.close()
        for c in made:
            c.close()


def test_concurrent_calls_on_a_healthy_store_never_fail_over(weaviate_server):
    from rag_core.stores.weaviate_store import WeaviateStore

    store = WeaviateStore(f"{weaviate_server.url},{weaviate_server.url}",
                          grpc_port=[weaviate_server.grpc_port] * 2, collection="FailoverQuiet")
    try:
        client = store.client
        threads = [threading.Thread(target=store.count) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert store.client is client and store.retries == 0
    finally:
        store.client.collections.delete("FailoverQuiet")
        store.close()
