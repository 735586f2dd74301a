"""Local servers must not lose a race for their port: a port checked free and released can be
taken by another process before the server binds it. Both launchers are run for real here,
with that race made certain (the "free" port handed to them is already taken):
- llama.cpp's server (rag_core/generation/local_server.py) binds port 0 itself and reports it,
- the Weaviate launcher (rag_core/stores/weaviate_local.py), whose nodes need fixed ports,
  starts again on a new block when a node exits with "address already in use"."""

from __future__ import annotations

import socket
import threading
import urllib.request

import pytest


def taken_port() -> socket.socket:
    """A listening socket on a port the OS picked: that port is taken while it is open."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_llm_server_start_never_uses_a_port_someone_else_took(monkeypatch):
    from rag_core.generation import local_server
    from tests.llm_server import LLMServerUnavailable, check_available

    try:
        gguf = check_available()
    except LLMServerUnavailable as exc:
        pytest.skip(str(exc))
    holder = taken_port()
    port = holder.getsockname()[1]
    # what a probe-then-release free_port() can return when another process won the race
    monkeypatch.setattr(local_server, "free_port", lambda: port)
    servers, errors = [], []

    def start():
        try:
            servers.append(local_server.start_server(gguf, threads=1, ctx=512, n_predict=4, ready_timeout=60))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(2)]  # two at once: two distinct ports
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert not errors, errors
        urls = {s.base_url for s in servers}
        assert len(urls) == 2 and f"http://127.0.0.1:{port}" not in urls
        for url in urls:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                assert r.status == 200
    finally:
        for s in servers:
            s.stop()
        holder.close()


def test_weaviate_start_moves_to_new_ports_when_one_is_taken(monkeypatch, tmp_path):
    from rag_core.stores import weaviate_local

    if weaviate_local.find_binary() is None:
        pytest.skip("no weaviate-server binary")
    monkeypatch.delenv("WEAVIATE_URL", raising=False)
    holder = taken_port()
    taken = holder.getsockname()[1]
    blocks = []
    real = weaviate_local._free_port_block

    def racy_block(size):  # the first block checked free, and its HTTP port taken since
        blocks.append(taken if not blocks else real(size))
        return blocks[-1]

    monkeypatch.setattr(weaviate_local, "_free_port_block", racy_block)
    try:
        server = weaviate_local.start_weaviate(tmp_path / "weaviate")
        try:
            assert len(blocks) == 2 and not server.url.endswith(f":{taken}")
            with urllib.request.urlopen(server.url + "/v1/.well-known/ready", timeout=5) as r:
                assert r.status == 200
        finally:
            server.stop()
    finally:
        holder.close()
