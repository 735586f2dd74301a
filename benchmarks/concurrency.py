"""Many users at once on one machine: throughput and p95 with 1, 2, 4, 8 concurrent sessions
issuing searches and answers on a 100k-chunk knowledge base, and the same with an ingest
running. Sessions are threads of one process sharing one Workspace, as Streamlit's sessions
and the API's requests are; the shipped thread settings in every run.

    python benchmarks/concurrency.py --chunks 100000 [--seconds 40] [--data-dir DIR] [--json]

The knowledge base: real SciFact text (store_latency.passages, repeated and varied to size)
written through the product's store; stored vectors are random unit vectors (latency does not
depend on what they mean; the keyword side and the reader see real text). Each session
alternates an answer (`Workspace.ask`: retrieval, reader, verification) and a search
(`Workspace.search`, reranked), over SciFact's claims. `--data-dir` keeps the built folder
for a rerun.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.store_latency import passages, pct, queries  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.models import Chunk, Document  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OP = Caller.operator()
KB = "load"


def build(ws: Workspace, n: int) -> None:
    if ws.appdb.find_kbs(KB):
        return
    kb = ws.create_kb(KB, caller=OP)
    rng = np.random.default_rng(0)
    texts = passages(n)
    t = time.perf_counter()
    for d in range(0, n, 10):
        part = texts[d : d + 10]
        doc_id = f"d{d}"
        ws.appdb.begin_document(Document(doc_id=doc_id, kb_id=kb.kb_id, source=f"{doc_id}.txt", title=f"doc {d}",
                                         mime="text/plain", sha256=doc_id, pages=1, chunks=len(part)))
        chunks = [Chunk(chunk_id=f"{kb.kb_id}/{doc_id}#{i}", doc_id=doc_id, kb_id=kb.kb_id, text=x, title=f"doc {d}",
                        source=f"{doc_id}.txt", ordinal=i) for i, x in enumerate(part)]
        v = rng.normal(size=(len(part), 384)).astype(np.float32)
        ws.store.add_chunks(chunks, v / np.linalg.norm(v, axis=1, keepdims=True))
        ws.appdb.finish_document(kb.kb_id, doc_id, len(part))
    print(json.dumps({"built_chunks": n, "seconds": round(time.perf_counter() - t, 1)}), file=sys.stderr)


def run(ws: Workspace, sessions: int, seconds: float, qs: list[str], ingest: bool, tmp: Path) -> dict:
    lat: dict[str, list[float]] = {"answer": [], "search": []}
    errors: list[str] = []
    stop = time.perf_counter() + seconds
    lock = threading.Lock()

    def session(k: int) -> None:
        i = k * 37
        while time.perf_counter() < stop:
            q = qs[i % len(qs)]
            kind = "answer" if i % 2 == 0 else "search"
            t = time.perf_counter()
            try:
                if kind == "answer":
                    ws.ask([KB], q, caller=OP)
                else:
                    ws.search([KB], q, caller=OP)
            except Exception as exc:  # noqa: BLE001 - counted, not fatal
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
            else:
                with lock:
                    lat[kind].append((time.perf_counter() - t) * 1000)
            i += 1

    ingested = [0]

    def ingester() -> None:
        n = 0
        while time.perf_counter() < stop:
            f = tmp / f"ingest-{sessions}-{n}.txt"
            f.write_text(" ".join(passages(30, seed=1000 + n)))
            ws.ingest(KB, [f], caller=OP)
            n += 1
        ingested[0] = n

    threads = [threading.Thread(target=session, args=(k,)) for k in range(sessions)]
    if ingest:
        threads.append(threading.Thread(target=ingester))
    t0, c0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    done = len(lat["answer"]) + len(lat["search"])
    # cores_used: the process's CPU time over the wall time (every thread, onnxruntime's
    # pools included); os.cpu_count() is the ceiling.
    out = {"sessions": sessions, "ingest_running": ingest, "wall_s": round(wall, 1), "operations": done,
           "errors": len(errors), "throughput_ops_s": round(done / wall, 3),
           "cores_used": round((time.process_time() - c0) / wall, 2)}
    for kind, xs in lat.items():
        if xs:
            out[f"{kind}s"] = len(xs)
            out[f"{kind}_p50_ms"] = round(pct(xs, 50), 1)
            out[f"{kind}_p95_ms"] = round(pct(xs, 95), 1)
    if ingest:
        out["documents_ingested"] = ingested[0]
    if errors:
        out["error_examples"] = errors[:3]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--sessions", default="1,2,4,8")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    data = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="gw-conc-"))
    ws = Workspace(get_settings(data, llm_crag=False))
    try:
        build(ws, args.chunks)
        # A freshly built (or reopened) store builds its HNSW graphs and snapshot on the
        # maintenance thread, on every core: measured sessions must not share the machine with it.
        ws.store.wait_maintenance()
        qs = queries()
        ws.ask([KB], qs[0], caller=OP)  # models loaded before timing
        tmp = Path(tempfile.mkdtemp(prefix="gw-conc-files-"))
        levels = [run(ws, s, args.seconds, qs, False, tmp) for s in map(int, args.sessions.split(","))]
        with_ingest = run(ws, 4, args.seconds, qs, True, tmp)
    finally:
        ws.close()
    one = levels[0]["throughput_ops_s"]
    rec = {"machine": f"{os.uname().machine}, {os.cpu_count()} cores", "chunks": args.chunks, "levels": levels,
           "four_with_ingest": with_ingest,
           "speedup_vs_one": {lv["sessions"]: round(lv["throughput_ops_s"] / one, 2) for lv in levels}}
    out = Path(__file__).resolve().parent / "results" / "concurrency.json"
    out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps(rec) if args.json else json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
