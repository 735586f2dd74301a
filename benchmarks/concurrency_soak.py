"""Two processes share one data folder and run mixed operations at the same time: ingest a
small document, search, delete one of their own documents. Every search result is checked:
a document is either fully visible (all its chunks) or not at all, and a deleted document
never comes back. Prints operations, errors and violations (both must be 0).

    python benchmarks/concurrency_soak.py --ops 1000 [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import sys
import tempfile
import time
from pathlib import Path
from rag_core.access import Caller

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def half_documents(ws) -> list[str]:
    """In one consistent snapshot of the database: every document present in the store has
    all the chunks its registry row says (a delete removes chunks before the row, so a
    document mid-delete has 0 chunks; an add commits all chunks at once)."""
    c = ws.db.conn
    with ws.db.lock:
        c.execute("BEGIN")  # a read transaction: both queries see the same state
        try:
            stored = dict(c.execute("SELECT doc_id, COUNT(*) FROM chunks GROUP BY kb_id, doc_id").fetchall())
            registry = {r[0]: (r[1], r[2]) for r in c.execute("SELECT doc_id, chunks, status FROM documents")}
        finally:
            c.execute("COMMIT")
    bad = []
    for doc, n in stored.items():
        if doc in registry and registry[doc][1] == "indexed" and registry[doc][0] != n:
            bad.append(f"half document {doc}: {n}/{registry[doc][0]} chunks")
    return bad


def worker(data_dir: str, wid: int, ops: int, out) -> None:
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(data_dir, ingest_timeout_s=0))  # in-process parsing: text files only
    rng = random.Random(wid)
    tmp = Path(tempfile.mkdtemp(prefix=f"soak{wid}-"))
    mine: list[str] = []
    deleted: set[str] = set()
    errors, violations, counts = [], [], {"ingest": 0, "search": 0, "delete": 0}
    for i in range(ops):
        op = rng.choices(["ingest", "search", "delete"], [0.3, 0.5, 0.2])[0]
        try:
            if op == "ingest" or not mine:
                f = tmp / f"w{wid}-doc{i}.md"
                paras = "\n\n".join(f"Paragraph {p} of worker {wid} document {i} about soakterm{i % 7}. " * 6
                                    for p in range(rng.randint(1, 6)))
                f.write_text(f"# Doc {i}\n\n{paras}\n")
                rep = ws.ingest("soak", [f], caller=Caller.operator()).reports[0]
                if rep.status != "ingested":
                    errors.append(f"ingest {f.name}: {rep.status} {rep.reason}")
                else:
                    mine.append(rep.doc_ids[0])
                counts["ingest"] += 1
            elif op == "delete":
                doc = mine.pop(rng.randrange(len(mine)))
                ws.delete_document("soak", doc, caller=Caller.operator())
                deleted.add(doc)
                counts["delete"] += 1
            else:
                res = ws.search(["soak"], f"soakterm{rng.randrange(7)} worker document", k=50, mode="keyword", caller=Caller.operator()).results
                for r in res:
                    if r.chunk.doc_id in deleted:
                        violations.append(f"deleted {r.chunk.doc_id} returned")
                violations += half_documents(ws)
                counts["search"] += 1
        except Exception as exc:  # noqa: BLE001 - counted, that is the point
            errors.append(f"{op}: {type(exc).__name__}: {exc}")
    out.put({"worker": wid, "counts": counts, "errors": errors[:5], "n_errors": len(errors),
             "violations": violations[:5], "n_violations": len(violations)})


def run(ops: int, workers: int = 2) -> dict:
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    data = tempfile.mkdtemp(prefix="gw-soak-")
    ws = Workspace(get_settings(data))
    ws.create_kb("soak", caller=Caller.operator())
    _ = ws.embedder  # records the model, as a first app start would
    ws.close()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    t = time.perf_counter()
    procs = [ctx.Process(target=worker, args=(data, w, ops // workers, q)) for w in range(workers)]
    for p in procs:
        p.start()
    results = [q.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
    return {
        "ops": sum(sum(r["counts"].values()) for r in results), "workers": workers,
        "seconds": round(time.perf_counter() - t, 1),
        "errors": sum(r["n_errors"] for r in results), "violations": sum(r["n_violations"] for r in results),
        "per_worker": results,
    }


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    print(json.dumps(run(a.ops, a.workers)))
