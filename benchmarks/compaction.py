"""Deletes at scale: what deleting a third of a large embedded store does to searches.

    python benchmarks/compaction.py --folder DIR [--kbs 34] [--json]

DIR is a folder kept by `python benchmarks/scale.py --chunks 1000000 --keep DIR` (100
knowledge bases of 1% each). It is copied to a temporary folder first (the original is not
changed). The copy is opened cold (from its snapshot); a thread runs hybrid searches with real
questions the whole time, while `--kbs` knowledge bases are deleted one after another through
the store (`delete_kb`: rows out of SQLite, tombstones, the index synced). Past a third of the
rows dead, the store compacts; this reports how long that took and what searches saw:

- delete_s: the deletes themselves; longest_write_hold_ms: the longest any write (a delete's
  sync, the compaction's install) held searches off;
- compaction_build_ms (off the lock, graphs included) and seconds from the last delete to the
  compacted layout being installed;
- search p50/p95/max before the deletes, from the first delete to the install, and for
  `--after` seconds after it;
- peak RSS of the process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folder", type=Path, required=True)
    ap.add_argument("--kbs", type=int, default=34)
    ap.add_argument("--baseline", type=float, default=15.0, help="seconds of searches before the deletes")
    ap.add_argument("--after", type=float, default=20.0, help="seconds of searches after the install")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from scale import peak_rss_mb, question_texts

    from rag_core.config import get_settings
    from rag_core.db import Database
    from rag_core.embeddings import get_embedder
    from rag_core.models import SearchFilters
    from rag_core.stores.embedded import EmbeddedStore

    tmp = Path(tempfile.mkdtemp(prefix="gw-compaction-"))
    try:
        t = time.perf_counter()
        for name in ("groundwork.db", "groundwork.db-index"):
            src = args.folder / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / name)
        copy_s = time.perf_counter() - t
        emb = get_embedder(get_settings(tmp))
        qs = question_texts(50)
        vecs = emb.embed_array(qs)
        t = time.perf_counter()
        store = EmbeddedStore(Database(tmp / "groundwork.db"))
        cold_s = time.perf_counter() - t
        mi0 = store._mi
        rows_before = int(mi0.alive_count)

        holds: dict[str, float] = {}  # longest write-lock hold by thread: deletes' syncs vs the install
        write = store._sync_lock.write

        @contextlib.contextmanager
        def timed_write():
            with write():
                s = time.perf_counter()
                try:
                    yield
                finally:
                    name = "install" if threading.current_thread().name == "gw-index-maintenance" else "delete_sync"
                    holds[name] = max(holds.get(name, 0.0), (time.perf_counter() - s) * 1000)

        store._sync_lock.write = timed_write
        lat: list[tuple[float, float]] = []  # (finished at, ms)
        stop = threading.Event()

        def searcher() -> None:
            i = 0
            while not stop.is_set():
                s = time.perf_counter()
                store.hybrid_search(qs[i % 50], vecs[i % 50], 10, SearchFilters())
                e = time.perf_counter()
                lat.append((e, (e - s) * 1000))
                i += 1

        th = threading.Thread(target=searcher)
        th.start()
        time.sleep(args.baseline)
        store._sync_lock.longest_write_ms = 0.0
        t_del = time.perf_counter()
        deleted = 0
        per_delete = []
        for k in range(args.kbs):
            s = time.perf_counter()
            deleted += store.delete_kb(f"kb{k}")
            per_delete.append(time.perf_counter() - s)
        t_last = time.perf_counter()
        while store._mi.compactions == 0 and time.perf_counter() - t_last < 600:
            time.sleep(0.05)
        t_inst = time.perf_counter()
        time.sleep(args.after)
        stop.set()
        th.join()
        mi = store._mi
        out = {
            "rows_before": rows_before,
            "deleted": deleted,
            "copy_s": round(copy_s, 1),
            "cold_start_s": round(cold_s, 2),
            "delete_s": round(t_last - t_del, 2),
            "slowest_delete_s": round(max(per_delete), 2),
            "compactions": mi.compactions,
            "compaction_build_ms": round(store.longest_compaction_build_ms),
            "installed_after_last_delete_s": round(t_inst - t_last, 2),
            "longest_write_hold_ms": round(store._sync_lock.longest_write_ms, 1),
            "longest_hold_by_kind_ms": {k: round(v, 1) for k, v in holds.items()},
            "rows_after": int(mi.n),
            "dead_after": int(mi.dead),
            "graphs_pending_after": sum(seg.graph is None for seg in mi.vecs.segments),
            "peak_rss_mb": round(peak_rss_mb()),
        }
        phases = {
            "before": [ms for at, ms in lat if at < t_del],
            "deleting_and_compacting": [ms for at, ms in lat if t_del <= at < t_inst],
            "after_install": [ms for at, ms in lat if at >= t_inst],
        }
        for name, xs in phases.items():
            out[f"search_{name}"] = {"n": len(xs), "p50_ms": pct(xs, 50), "p95_ms": pct(xs, 95),
                                     "max_ms": round(max(xs), 1) if xs else None}
        print(json.dumps(out, indent=None if args.json else 2))
        sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os._exit(0)  # no snapshot written for the temporary copy


if __name__ == "__main__":
    main()
