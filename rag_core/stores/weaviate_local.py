"""A local Weaviate server process: for RAG_STORE=weaviate-embedded and for the tests.

`WEAVIATE_URL` when set (an existing server), otherwise the weaviate-server binary built by
`go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.35.2` (found via
$WEAVIATE_BIN or $(go env GOPATH)/bin) — nothing is downloaded at run time, unlike the
client's own embedded mode. Started on 127.0.0.1 with anonymous access, no vectorizer
modules, telemetry off, its data in the given folder (a temporary one for tests)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

WEAVIATE_VERSION = "v1.35.2"


class WeaviateUnavailable(RuntimeError):
    pass


@dataclass
class WeaviateServer:
    url: str
    grpc_port: int
    stop: Callable[[], None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_binary() -> Path | None:
    if os.environ.get("WEAVIATE_BIN"):
        return Path(os.environ["WEAVIATE_BIN"])
    candidates = []
    if shutil.which("go"):
        gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True).stdout.strip()
        if gopath:
            candidates.append(Path(gopath) / "bin" / "weaviate-server")
    candidates.append(Path.home() / "go" / "bin" / "weaviate-server")
    return next((c for c in candidates if c.exists()), None)


def build_binary() -> Path | None:
    """`go install` the server (≈7 minutes on 2 cores the first time; Go caches it)."""
    if not shutil.which("go"):
        return None
    subprocess.run(["go", "install", f"github.com/weaviate/weaviate/cmd/weaviate-server@{WEAVIATE_VERSION}"],
                   check=True, timeout=3600)
    return find_binary()


def start_weaviate(data_dir: Path | None = None, build: bool = False) -> WeaviateServer:
    if os.environ.get("WEAVIATE_URL"):
        return WeaviateServer(os.environ["WEAVIATE_URL"], int(os.environ.get("WEAVIATE_GRPC_PORT", "50051")), lambda: None)
    binary = find_binary() or (build_binary() if build else None)
    if binary is None:
        raise WeaviateUnavailable(
            "neither WEAVIATE_URL nor Go to build weaviate-server "
            f"(go install github.com/weaviate/weaviate/cmd/weaviate-server@{WEAVIATE_VERSION})"
        )
    temporary = data_dir is None
    data = str(data_dir) if data_dir else tempfile.mkdtemp(prefix="gw-weaviate-")
    Path(data).mkdir(parents=True, exist_ok=True)
    http, grpc = _free_port(), _free_port()
    env = {
        **os.environ,
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true", "PERSISTENCE_DATA_PATH": data,
        "DEFAULT_VECTORIZER_MODULE": "none", "ENABLE_MODULES": "", "DISABLE_TELEMETRY": "true",
        "CLUSTER_HOSTNAME": "node1", "CLUSTER_ADVERTISE_ADDR": "127.0.0.1", "GRPC_PORT": str(grpc),
        "CLUSTER_GOSSIP_BIND_PORT": str(_free_port()), "CLUSTER_DATA_BIND_PORT": str(_free_port()),
        "RAFT_PORT": str(_free_port()), "RAFT_INTERNAL_RPC_PORT": str(_free_port()),
        "RAFT_BOOTSTRAP_EXPECT": "1", "RAFT_JOIN": "node1", "LOG_LEVEL": "warning",
    }
    log = open(Path(data) / "server.log", "w")
    proc = subprocess.Popen([str(binary), "--host", "127.0.0.1", "--port", str(http), "--scheme", "http"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{http}"
    for _ in range(240):
        if proc.poll() is not None:
            break
        try:
            if urllib.request.urlopen(url + "/v1/.well-known/ready", timeout=1).status == 200:
                break
        except OSError:
            time.sleep(0.25)
    else:
        proc.kill()
        raise RuntimeError("weaviate did not become ready in 60 s; log: " + (Path(data) / "server.log").read_text()[-2000:])
    if proc.poll() is not None:
        raise RuntimeError("weaviate exited: " + (Path(data) / "server.log").read_text()[-2000:])

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        if temporary:
            shutil.rmtree(data, ignore_errors=True)

    return WeaviateServer(url, grpc, stop)
