"""A real API server for the API tests: `python -m rag_core serve` in a subprocess on 127.0.0.1,
over a data folder with three knowledge bases written for the tests, driven with httpx.

- handbook       owned by alice, open to everyone (no tenant)
- alice-private  owned by alice, readable by alice only
- acme-secrets   owned by carol in tenant "acme"
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from rag_core.access import Caller
from rag_core.api_keys import ApiKeys
from rag_core.config import get_settings
from rag_core.generation.local_server import free_port
from rag_core.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
HANDBOOK = ("# Handbook\n\nThe office opens at 8 o'clock on weekdays.\n\nStaff get 25 vacation days a year.\n\n"
            "## Travel\n\nBook train tickets through the travel desk at least two days ahead.\n")
PRIVATE = "# Papaya\n\nThe launch code of project Papaya is 4471.\n"
ACME = "# Acme plans\n\nThe Acme budget for 2027 is 12 million euros.\n"
# Small limits so the oversize tests send kilobytes, not megabytes.
SERVER_ENV = {"RAG_MAX_FILE_MB": "1", "RAG_API_MAX_BODY_MB": "0.05", "RAG_API_MAX_UPLOAD_MB": "3"}


def build_data(root: Path) -> Path:
    data = root / "data"
    ws = Workspace(get_settings(data))
    try:
        alice, carol = Caller.of("alice"), Caller.of("carol", tenant="acme")
        ws.create_kb("handbook", caller=alice)
        ws.create_kb("alice-private", caller=alice, acl_users=["alice"])
        ws.create_kb("acme-secrets", caller=carol)
        for name, text, who, kb in (("handbook.md", HANDBOOK, alice, "handbook"),
                                    ("papaya.md", PRIVATE, alice, "alice-private"),
                                    ("acme.md", ACME, carol, "acme-secrets")):
            (root / name).write_text(text)
            stats = ws.ingest(kb, [root / name], caller=who)
            assert stats.reports[0].status == "ingested", stats.reports
    finally:
        ws.close()
    return data


def make_keys(data: Path) -> dict[str, str]:
    ws = Workspace(get_settings(data))
    try:
        keys, op = ApiKeys(ws.db), Caller.operator()
        return {
            "alice": keys.create("alice", "write", by=op).key,
            "alice_read": keys.create("alice", "read", by=op).key,
            "bob": keys.create("bob", "write", by=op).key,
            "carol": keys.create("carol", "write", tenant="acme", by=op).key,
            "admin": keys.create("root", "admin", by=op).key,
        }
    finally:
        ws.close()


@contextmanager
def api_server(data: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()):
    port = free_port()
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **SERVER_ENV, **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_core", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--data-dir", str(data), "--log-level", "warning", *args],
        cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the API server exited: {proc.stdout.read()[-3000:]}")
            try:
                if httpx.get(f"{base}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise RuntimeError("the API server did not start in 120 s")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="package")
def api(tmp_path_factory):
    """(base URL, keys by name, data folder) of a running server."""
    root = tmp_path_factory.mktemp("api")
    data = build_data(root)
    keys = make_keys(data)
    with api_server(data) as base:
        yield base, keys, data


@pytest.fixture
def client(api):
    base, keys, _ = api

    def as_(who: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {keys[who]}"} if who else {}
        return httpx.Client(base_url=base, headers=headers, timeout=120)

    return as_


def wait_for_job(c: httpx.Client, job_id: str, timeout: float = 300) -> dict:
    """Poll an ingest job until it leaves queued/running; its final record."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = c.get(f"/v1/jobs/{job_id}").json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish")
