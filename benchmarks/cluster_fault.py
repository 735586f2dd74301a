"""Losing a node of a replicated Weaviate cluster under load, for real.

    python benchmarks/cluster_fault.py [--docs 300] [--down-s 10]

Starts a local 3-node cluster (rag_core/stores/weaviate_local.py), creates our collection
with replication factor 3 (writes at ALL, repeated at QUORUM when a copy cannot be reached;
QUORUM object reads; asynchronous repair, DeleteOnConflict), then runs a bounded load from
two processes through `WeaviateStore`, both talking to node 0 first (WEAVIATE_URL lists all
three):
- ingest: `--docs` documents of 4 chunks each, one `add_chunks` per document; every 4th
  document goes into the knowledge base "private" (only user "ann" may see it); every 5th
  acknowledged document is deleted again. Each acknowledgement and deletion is logged with
  its time.
- query: hybrid searches as user "bob", with the filters the access policy builds for him
  (rag_core/access.py: the knowledge bases he may see) until told to stop; errors, retries
  (the one failover retry the store allows) and any private or deleted document returned
  are logged.
Two seconds in, node 0 is killed with SIGKILL; `--down-s` later it is restarted on its own
data. (The Weaviate client itself would retry a refused gRPC call with back-off for about a
minute; the store instead probes a call still pending after 2 s and fails over to the next
node: the report shows the longest query meanwhile.) After the load: every acknowledged,
undeleted document must be found whole; no deleted
document may be returned; each node's copy must hold the same number of objects (read from
/v1/nodes: the time until they agree is the catch-up time). The test
(tests/stores/test_weaviate_cluster.py) asserts these; this prints the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from rag_core.access import Caller, search_filters  # noqa: E402
from rag_core.models import Chunk, KnowledgeBase  # noqa: E402

COLLECTION = "FaultTest"
DIM = 32
# "kb" is open to everyone, "private" to ann only (the access policy decides per knowledge base)
KBS = [KnowledgeBase(kb_id="kb", name="kb"), KnowledgeBase(kb_id="private", name="private", acl_users=["ann"])]
WORDS = ("river bridge castle harbour market garden tower station library museum forest valley mountain "
         "island village temple palace square church school").split()


def _store(urls: str, ports: str, collection: str = COLLECTION):
    from rag_core.stores.weaviate_store import WeaviateStore

    return WeaviateStore(urls, grpc_port=[int(p) for p in ports.split(",")], collection=collection,
                         replication_factor=3, consistency="QUORUM")


def _kb(i: int) -> str:
    return "private" if i % 4 == 0 else "kb"


def _doc(i: int) -> tuple[list[Chunk], np.ndarray]:
    rng = np.random.default_rng(i)
    chunks = [Chunk(chunk_id=f"d{i}#{j}", doc_id=f"d{i}", kb_id=_kb(i), source=f"doc{i}.txt", ordinal=j,
                    text=f"Document {i} part {j}: the {WORDS[(i + j) % len(WORDS)]} near the "
                         f"{WORDS[(i * 7 + j) % len(WORDS)]} is described here.") for j in range(4)]
    v = rng.normal(size=(4, DIM)).astype(np.float32)
    return chunks, v / np.linalg.norm(v, axis=1, keepdims=True)


def role_ingest(args) -> None:
    store = _store(args.urls, args.ports)
    log = open(args.log, "a", buffering=1)  # line-buffered so a crash loses nothing
    log.write(json.dumps({"ev": "ready", "t": time.time()}) + "\n")
    for i in range(args.docs):
        chunks, vecs = _doc(i)
        t = time.time()
        try:
            store.add_chunks(chunks, vecs)
            log.write(json.dumps({"ev": "ack", "doc": f"d{i}", "t": time.time(), "private": i % 4 == 0}) + "\n")
        except Exception as exc:  # noqa: BLE001 - an unacknowledged write: allowed, and logged
            log.write(json.dumps({"ev": "write_error", "doc": f"d{i}", "t": t, "error": str(exc)[:200]}) + "\n")
            continue
        if i % 5 == 0:
            try:
                store.delete_document(_kb(i), f"d{i}")
                log.write(json.dumps({"ev": "deleted", "doc": f"d{i}", "t": time.time()}) + "\n")
            except Exception as exc:  # noqa: BLE001
                log.write(json.dumps({"ev": "delete_error", "doc": f"d{i}", "error": str(exc)[:200]}) + "\n")
        time.sleep(args.pause)
    log.write(json.dumps({"ev": "ingest_done", "retries": store.retries, "degraded_writes": store.degraded_writes,
                          "t": time.time()}) + "\n")
    log.close()
    store.close()


def role_query(args) -> None:
    store = _store(args.urls, args.ports)
    log = open(args.log, "a", buffering=1)
    log.write(json.dumps({"ev": "ready", "t": time.time()}) + "\n")
    bob = search_filters(Caller(user="bob", groups=frozenset(), tenant=None, admin=False), KBS)
    rng = np.random.default_rng(7)
    n = errors = 0
    while not Path(args.stop).exists():
        q = f"{WORDS[n % len(WORDS)]} {WORDS[(n * 3) % len(WORDS)]}"
        v = rng.normal(size=DIM).astype(np.float32)
        t = time.time()
        try:
            res = store.hybrid_search(q, v / np.linalg.norm(v), 10, bob)
            docs = sorted({r.chunk.doc_id for r in res})
            private = [r.chunk.doc_id for r in res if r.chunk.kb_id == "private"]
            log.write(json.dumps({"ev": "q", "t": t, "ms": round((time.time() - t) * 1000, 1), "docs": docs,
                                  "private": private}) + "\n")
        except Exception as exc:  # noqa: BLE001
            errors += 1
            log.write(json.dumps({"ev": "query_error", "t": t, "error": str(exc)[:200]}) + "\n")
        n += 1
        time.sleep(args.pause)
    log.write(json.dumps({"ev": "query_done", "queries": n, "errors": errors, "retries": store.retries}) + "\n")
    log.close()
    store.close()


def node_counts(cluster, collection: str = COLLECTION) -> dict[str, int]:
    """Objects per node for our collection, from each live node's own view (/v1/nodes)."""
    out = {}
    for node in cluster.nodes:
        if not node.alive:
            continue
        try:
            with urllib.request.urlopen(f"{node.url}/v1/nodes/{collection}?output=verbose", timeout=5) as r:
                for x in json.loads(r.read())["nodes"]:
                    if x["name"] == node.name:
                        out[node.name] = sum(s.get("objectCount", 0) for s in x.get("shards") or [])
        except OSError:
            pass
    return out


def _pct(xs: list[float], p: float) -> float | None:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else None


def _wait_events(wanted, procs, timeout: float, what: str) -> None:
    """Until each log holds `n` lines with its marker. A load process that fails, both ending
    before that, or the timeout: RuntimeError saying `what` was awaited."""
    end = time.time() + timeout
    while not all(f.exists() and f.read_text().count(mark) >= n for f, mark, n in wanted):
        if any(p.poll() not in (None, 0) for p in procs) or all(p.poll() == 0 for p in procs) \
                or time.time() > end:
            raise RuntimeError(f"no {what} after {timeout:.0f} s (exit codes {[p.poll() for p in procs]})")
        time.sleep(0.1)


def run_fault(cluster, workdir: Path, docs: int = 300, down_s: float = 10.0, pause: float = 0.02,
              catchup_timeout: float = 180.0) -> dict:
    """The whole scenario on a running cluster; returns the figures and the raw findings."""
    workdir.mkdir(parents=True, exist_ok=True)
    urls = cluster.urls
    ports = ",".join(str(n.grpc) for n in cluster.nodes)
    setup = _store(urls, ports)
    if setup.client.collections.exists(COLLECTION):
        setup.client.collections.delete(COLLECTION)
    setup.close()
    setup = _store(urls, ports)  # creates it: RF 3
    rep = setup.client.collections.get(COLLECTION).config.get().replication_config
    setup.close()
    ilog, qlog, stop = workdir / "ingest.jsonl", workdir / "query.jsonl", workdir / "stop"
    for f in (ilog, qlog, stop):
        f.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    common = ["--urls", urls, "--ports", ports, "--pause", str(pause)]
    ing = subprocess.Popen([sys.executable, __file__, "--role", "ingest", "--log", str(ilog), "--docs", str(docs), *common],
                           env=env)
    qry = subprocess.Popen([sys.executable, __file__, "--role", "query", "--log", str(qlog), "--stop", str(stop), *common],
                           env=env)
    t0 = time.time()
    # The fault starts once both load processes are connected, not after a fixed delay: on a busy
    # CI runner their imports alone took longer than the node stayed down, so no load met the fault.
    _wait_events(((ilog, '"ready"', 1), (qlog, '"ready"', 1)), (ing, qry), 180.0, "ready load processes")
    # Load before the fault, for the baseline latency: a few answered queries and an acknowledged
    # write, not a fixed second. On a busy machine the query process's first query took 34 s
    # (models loading), and a node killed one second after "ready" was back before any query ran.
    _wait_events(((qlog, '"ev": "q"', 3), (ilog, '"ev": "ack"', 1)), (ing, qry), 600.0, "load to fault")
    killed_at = time.time()
    cluster.kill(0)
    time.sleep(down_s)
    cluster.start_node(0)
    cluster.wait_ready(120)
    back_at = time.time()
    ingest_exit = ing.wait(timeout=900)
    stop.touch()
    query_exit = qry.wait(timeout=120)
    load_end = time.time()

    # catch-up: every node holds as many objects as the cluster should
    ievents = [json.loads(x) for x in ilog.read_text().splitlines()]
    acked = {e["doc"]: e for e in ievents if e["ev"] == "ack"}
    deleted = {e["doc"]: e["t"] for e in ievents if e["ev"] == "deleted"}
    expected_objects = 4 * len(set(acked) - set(deleted))
    t = time.time()
    counts = node_counts(cluster)
    while time.time() - t < catchup_timeout and not (len(counts) == len(cluster.nodes)
                                                      and set(counts.values()) == {expected_objects}):
        time.sleep(1.0)
        counts = node_counts(cluster)
    caught_up_s = time.time() - back_at if set(counts.values()) == {expected_objects} else None

    # what a client reads now (QUORUM) for every acknowledged document
    check = _store(urls, ports)
    missing, resurrected = [], []
    for doc in acked:
        n = len(check.document_chunks(_kb(int(doc[1:])), doc))
        if doc in deleted and n:
            resurrected.append(doc)
        elif doc not in deleted and n != 4:
            missing.append((doc, n))
    check.close()

    qevents = [json.loads(x) for x in qlog.read_text().splitlines()]
    queries = [e for e in qevents if e["ev"] == "q"]
    during = [e for e in queries if killed_at <= e["t"] <= back_at]
    deleted_returned = [(e["t"], d) for e in queries for d in e["docs"] if d in deleted and deleted[d] < e["t"] - 0.001]
    qdone = next(e for e in qevents if e["ev"] == "query_done")
    idone = next((e for e in ievents if e["ev"] == "ingest_done"), {})
    return {
        "replication_factor": rep.factor, "async_replication": rep.async_enabled,
        "deletion_strategy": rep.deletion_strategy.value, "write_consistency": "ALL (QUORUM when a copy is unreachable)",
        "read_consistency": "QUORUM",
        "ingest_exit": ingest_exit, "query_exit": query_exit, "docs": docs, "node_down_s": round(back_at - killed_at, 1), "load_s": round(load_end - t0, 1),
        "writes_acknowledged": len(acked),
        "writes_acknowledged_while_node_down": sum(killed_at <= e["t"] <= back_at for e in acked.values()),
        "write_errors": sum(e["ev"] == "write_error" for e in ievents),
        "deletes": len(deleted), "delete_errors": sum(e["ev"] == "delete_error" for e in ievents),
        "ingest_retries": idone.get("retries"), "writes_degraded_to_quorum": idone.get("degraded_writes"),
        "queries": qdone["queries"], "queries_while_node_down": len(during),
        "query_ms_p50_before_fault": _pct([e["ms"] for e in queries if e["t"] < killed_at], 50),
        "query_ms_max_while_node_down": max((e["ms"] for e in during), default=None),
        "query_ms_p50_after_restart": _pct([e["ms"] for e in queries if e["t"] > back_at], 50),
        "query_errors": qdone["errors"], "query_retries": qdone["retries"],
        "private_returned_to_bob": sum(len(e["private"]) for e in queries),
        "deleted_returned": len(deleted_returned),
        "acknowledged_missing_or_partial": missing[:10], "acknowledged_missing_count": len(missing),
        "deleted_resurrected": resurrected[:10],
        "objects_expected": expected_objects, "objects_per_node": counts,
        "catch_up_s_after_restart": round(caught_up_s, 1) if caught_up_s is not None else None,
        "write_error_samples": [e["error"] for e in ievents if e["ev"] == "write_error"][:3],
        "query_error_samples": [e["error"] for e in qevents if e["ev"] == "query_error"][:3],
    }


def open_while_down(cluster, collection: str = "OpenTest", rounds: int = 1) -> dict:
    """A process that starts while one node is down must open the store through another.
    For each node in turn: kill it, open a WeaviateStore with every node listed (the dead one
    first when it is node 0), time the opening and one search, then restart the node. Plus the
    case that broke a CI run: node 0 accepts the connection and dies before the first call."""
    from rag_core.stores.weaviate_store import WeaviateStore

    def store() -> WeaviateStore:
        return WeaviateStore(cluster.urls, grpc_port=[n.grpc for n in cluster.nodes], collection=collection,
                             replication_factor=3)

    s = store()
    chunks, vecs = _doc(1)
    s.add_chunks(chunks, vecs)
    s.close()
    out: dict = {"open_s": {}, "found": {}}

    def timed(tag: str) -> None:
        for _ in range(rounds):
            t = time.perf_counter()
            st = store()
            opened = time.perf_counter() - t
            try:
                found = len(st.document_chunks("kb", "d1"))
            finally:
                st.close()
            out["open_s"].setdefault(tag, []).append(round(opened, 3))
            out["found"].setdefault(tag, []).append(found)

    timed("all up")
    for i, node in enumerate(cluster.nodes):
        cluster.kill(i)
        try:
            timed(f"{node.name} down")
        finally:
            cluster.restart(i)
            cluster.wait_ready()
    # node 0 answers the connection, then is gone before the collection is checked
    real = WeaviateStore._connect

    def connect_then_lose(self, start):
        client = real(self, start)
        if self._node == 0 and cluster.nodes[0].alive:
            cluster.kill(0)
        return client

    WeaviateStore._connect = connect_then_lose
    try:
        timed("node 0 lost after connecting")
    finally:
        WeaviateStore._connect = real
        cluster.restart(0)
        cluster.wait_ready()
    s = store()
    s.client.collections.delete(collection)
    s.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", choices=["ingest", "query"])
    ap.add_argument("--urls")
    ap.add_argument("--ports")
    ap.add_argument("--log")
    ap.add_argument("--stop")
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--pause", type=float, default=0.02)
    ap.add_argument("--down-s", type=float, default=10.0)
    ap.add_argument("--open-while-down", type=int, metavar="ROUNDS",
                    help="instead: time opening the store with each node down, ROUNDS times each")
    args = ap.parse_args()
    if args.role == "ingest":
        return role_ingest(args)
    if args.role == "query":
        return role_query(args)
    from rag_core.stores.weaviate_local import start_cluster

    cluster = start_cluster(3)
    if args.open_while_down:
        try:
            res = open_while_down(cluster, rounds=args.open_while_down)
        finally:
            cluster.stop()
        print(json.dumps(res, indent=2))
        (ROOT / "benchmarks" / "results" / "cluster_open.json").write_text(json.dumps(res, indent=2) + "\n")
        return
    try:
        res = run_fault(cluster, Path(cluster.root) / "fault", docs=args.docs, down_s=args.down_s, pause=args.pause)
    finally:
        cluster.stop()
    print(json.dumps(res, indent=2))
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "cluster_fault.json").write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
