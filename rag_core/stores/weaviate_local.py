"""A local Weaviate server process: for RAG_STORE=weaviate-embedded and for the tests.

`WEAVIATE_URL` when set (an existing server), otherwise the weaviate-server binary built by
`go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.35.2` (found via
$WEAVIATE_BIN or $(go env GOPATH)/bin) — nothing is downloaded at run time, unlike the
client's own embedded mode. Started on 127.0.0.1 with anonymous access, no vectorizer
modules, telemetry off, its data in the given folder (a temporary one for tests).

Ports: weaviate-server needs six fixed ports per node (HTTP, gRPC, gossip, data, Raft, Raft
RPC) that the other nodes must know in advance, so it cannot bind port 0 and report back.
We pick a block that is free when checked; another process can still take one of its ports
before the server binds it. The server then exits with "address already in use", and the
start is repeated on a new block (`PORT_ATTEMPTS` in all)."""

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
PORT_ATTEMPTS = 5


class WeaviateUnavailable(RuntimeError):
    pass


@dataclass
class WeaviateServer:
    url: str
    grpc_port: int
    stop: Callable[[], None]


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


def _binary(build: bool, why: str) -> Path:
    binary = find_binary() or (build_binary() if build else None)
    if binary is None:
        raise WeaviateUnavailable(
            f"{why} (go install github.com/weaviate/weaviate/cmd/weaviate-server@{WEAVIATE_VERSION})")
    return binary


def start_weaviate(data_dir: Path | None = None, build: bool = False) -> WeaviateServer:
    """One local server: a one-node `WeaviateCluster` named "node1" whose data is `data_dir`
    itself (the layout RAG_STORE=weaviate-embedded has always had), or a temporary folder."""
    if os.environ.get("WEAVIATE_URL"):
        return WeaviateServer(os.environ["WEAVIATE_URL"], int(os.environ.get("WEAVIATE_GRPC_PORT", "50051")), lambda: None)
    binary = _binary(build, "neither WEAVIATE_URL nor Go to build weaviate-server")
    temporary = data_dir is None
    for attempt in range(PORT_ATTEMPTS):
        data = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="gw-weaviate-"))
        server = WeaviateCluster([_node("node1", _free_port_block(1), data)], binary, data, temporary)
        try:
            server.start_node(0, join=[])
            server.wait_ready(60)
        except Exception:
            clash = server.port_clash()
            server.stop()  # a temporary folder goes with it; a kept one is reused (one node moves ports freely)
            if clash and attempt + 1 < PORT_ATTEMPTS:
                continue
            raise
        node = server.nodes[0]
        return WeaviateServer(node.url, node.grpc, server.stop)
    raise AssertionError("unreachable")


# ---- a local cluster (tests, benchmarks) ------------------------------------------------------
@dataclass
class ClusterNode:
    name: str
    http: int
    grpc: int
    gossip: int
    data_port: int
    raft: int
    rpc: int
    data: Path
    proc: subprocess.Popen | None = None
    log_from: int = 0  # where this start's output begins in server.log (it is appended to)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _ports_free(ports: list[int]) -> bool:
    for p in ports:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


@dataclass
class WeaviateCluster:
    """N weaviate-server processes on 127.0.0.1 joined into one cluster (memberlist gossip +
    Raft), each with its own ports and data folder. `kill(i)` is a SIGKILL (no shutdown),
    `restart(i)` brings the node back on its own data."""

    nodes: list[ClusterNode]
    binary: Path
    root: Path
    temporary: bool

    @property
    def url(self) -> str:
        return self.nodes[0].url

    @property
    def urls(self) -> str:
        """All nodes, comma-separated: what WEAVIATE_URL takes for a cluster (failover)."""
        return ",".join(n.url for n in self.nodes)

    def _env(self, node: ClusterNode, join: list[ClusterNode]) -> dict:
        return {
            **os.environ,
            "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true", "PERSISTENCE_DATA_PATH": str(node.data),
            "DEFAULT_VECTORIZER_MODULE": "none", "ENABLE_MODULES": "", "DISABLE_TELEMETRY": "true",
            "LOG_LEVEL": "warning", "GRPC_PORT": str(node.grpc),
            "CLUSTER_HOSTNAME": node.name, "CLUSTER_IN_LOCALHOST": "true", "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
            "CLUSTER_GOSSIP_BIND_PORT": str(node.gossip), "CLUSTER_DATA_BIND_PORT": str(node.data_port),
            **({"CLUSTER_JOIN": ",".join(f"127.0.0.1:{n.gossip}" for n in join)} if join else {}),
            "RAFT_PORT": str(node.raft), "RAFT_INTERNAL_RPC_PORT": str(node.rpc),
            "RAFT_JOIN": ",".join(f"{n.name}:{n.raft}" for n in self.nodes),
            "RAFT_BOOTSTRAP_EXPECT": str(len(self.nodes)),
        }

    def start_node(self, i: int, join: list[int] | None = None) -> None:
        """Start node i; it joins the gossip of the nodes in `join` (default: every other
        node that runs — none for the very first one)."""
        node = self.nodes[i]
        node.data.mkdir(parents=True, exist_ok=True)
        peers = [self.nodes[j] for j in join] if join is not None else [n for n in self.nodes if n is not node and n.alive]
        log = open(node.data / "server.log", "a")
        node.log_from = log.tell()
        node.proc = subprocess.Popen(
            [str(self.binary), "--host", "127.0.0.1", "--port", str(node.http), "--scheme", "http"],
            env=self._env(node, peers), stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def wait_listening(self, i: int, timeout: float = 60.0) -> None:
        """Until node i's gossip port accepts connections (others can join it)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if not self.nodes[i].alive:
                raise RuntimeError(f"weaviate {self.nodes[i].name} exited: " + self.log_tail(i))
            with socket.socket() as s:
                s.settimeout(0.5)
                if s.connect_ex(("127.0.0.1", self.nodes[i].gossip)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"{self.nodes[i].name} did not open its gossip port: " + self.log_tail(i))

    def wait_ready(self, timeout: float = 120.0, nodes: list[int] | None = None) -> float:
        """Seconds until every (given) node answers ready and node 0 sees them all healthy."""
        t0 = time.monotonic()
        want = nodes if nodes is not None else list(range(len(self.nodes)))
        while time.monotonic() - t0 < timeout:
            dead = [self.nodes[i].name for i in want if not self.nodes[i].alive]
            if dead:
                raise RuntimeError(f"weaviate node(s) {dead} exited: " + self.log_tail(want[0]))
            try:
                if all(urllib.request.urlopen(self.nodes[i].url + "/v1/.well-known/ready", timeout=1).status == 200
                       for i in want) and self.healthy_nodes() >= len(self.nodes):
                    return time.monotonic() - t0
            except OSError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"cluster not ready in {timeout:.0f} s: " + self.log_tail(want[0]))

    def healthy_nodes(self) -> int:
        import json

        for n in self.nodes:
            if not n.alive:
                continue
            try:
                with urllib.request.urlopen(n.url + "/v1/nodes", timeout=2) as r:
                    return sum(1 for x in json.loads(r.read())["nodes"] if x.get("status") == "HEALTHY")
            except OSError:
                continue
        return 0

    def log_tail(self, i: int) -> str:
        try:
            return (self.nodes[i].data / "server.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def port_clash(self) -> bool:
        """Whether a node of this start exited because one of its ports was taken."""
        for n in self.nodes:
            if n.proc is None or n.alive:
                continue
            try:
                with open(n.data / "server.log", "rb") as fh:
                    fh.seek(n.log_from)
                    if b"address already in use" in fh.read():
                        return True
            except OSError:
                pass
        return False

    def kill(self, i: int) -> None:
        node = self.nodes[i]
        if node.alive:
            node.proc.kill()  # SIGKILL: no graceful shutdown, like a lost machine
            node.proc.wait(timeout=20)

    def restart(self, i: int) -> None:
        self.kill(i)
        self.start_node(i)

    def stop(self) -> None:
        for n in self.nodes:
            if n.alive:
                n.proc.terminate()
        for n in self.nodes:
            if n.proc is not None:
                try:
                    n.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    n.proc.kill()
        if self.temporary:
            shutil.rmtree(self.root, ignore_errors=True)


def _free_port_block(size: int) -> int:
    """A base port with ten consecutive ports per node, the six each node uses free when
    checked (nothing holds them for us: a start that loses one is repeated)."""
    import random

    rng = random.Random()
    low, high = _below_ephemeral()
    for _ in range(50):
        base = rng.randrange(low, high - 10 * size)
        if _ports_free([base + 10 * i + j for i in range(size) for j in range(6)]):
            return base
    raise RuntimeError("no free port range for a local Weaviate")


def _below_ephemeral() -> tuple[int, int]:
    """Where to put the block: below the kernel's ephemeral range where there is room. A node
    restarted in place must bind its same ports again, and any outgoing connection on the
    machine takes a port from the ephemeral range: in suite run 7, under load, a restarted
    node's Raft RPC port (51656) had been taken meanwhile ("bind: address already in use")."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 20000, 60000
    return (10000, first) if first - 10000 >= 2000 else (20000, 60000)


def _node(name: str, base: int, data: Path) -> ClusterNode:
    # data = gossip + 1 and rpc = raft + 1, as Weaviate's own local multi-node scripts lay them out
    return ClusterNode(name=name, http=base, grpc=base + 1, gossip=base + 2, data_port=base + 3, raft=base + 4,
                       rpc=base + 5, data=data)


def start_cluster(size: int = 3, root: Path | None = None, build: bool = False, timeout: float = 180.0) -> WeaviateCluster:
    """A local cluster of `size` nodes from the same binary as `start_weaviate` (no
    WEAVIATE_URL shortcut: a cluster is always ours)."""
    binary = _binary(build, "no weaviate-server binary")
    temporary = root is None
    given = Path(root) if root is not None else None
    # a cluster's nodes record each other's addresses: only a start on fresh folders may move
    fresh = given is None or not any((given / f"node{i}").exists() for i in range(size))
    for attempt in range(PORT_ATTEMPTS):
        root = given or Path(tempfile.mkdtemp(prefix="gw-weaviate-cluster-"))
        base = _free_port_block(size)
        nodes = [_node(f"node{i}", base + 10 * i, root / f"node{i}") for i in range(size)]
        cluster = WeaviateCluster(nodes, binary, root, temporary)
        try:
            cluster.start_node(0, join=[])
            cluster.wait_listening(0)
            for i in range(1, size):
                cluster.start_node(i, join=[0])
            cluster.wait_ready(timeout)
        except Exception:
            clash = cluster.port_clash()
            cluster.stop()
            if clash and fresh and attempt + 1 < PORT_ATTEMPTS:
                if not temporary:
                    for n in nodes:
                        shutil.rmtree(n.data, ignore_errors=True)
                continue
            raise
        return cluster
    raise AssertionError("unreachable")
