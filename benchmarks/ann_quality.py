"""Retrieval quality with the embedded store's HNSW segments against exact search, on BEIR
SciFact (test queries): the same knowledge base searched twice, once with every vector in
the exact tail (as a store under 20k chunks is) and once sealed into HNSW segments of
`--seal` rows (the path a store past 20k takes; SciFact's ~10k chunks would otherwise stay
exact). The issue's bar: nDCG@10 within 0.002.

    python benchmarks/ann_quality.py --data-dir DIR [--folder ../shared/data/beir-scifact] [--seal 1000]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import run_beir  # noqa: E402
from rag_core.stores import vector_index as vx  # noqa: E402
from rag_core.stores.embedded import EmbeddedStore  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402


def one(data_dir: Path, folder: Path, seal: int, mode: str) -> dict:
    vx.SEAL_ROWS = seal
    EmbeddedStore.snapshot_min = 10**12  # this run must not leave a snapshot in the data folder
    ws = Workspace(get_settings(data_dir))
    try:
        ws.store.wait_maintenance()
        ws.store.maintain()  # every graph built before the first query
        rep = run_beir(ws, folder, caller=Caller.operator(), mode=mode)
        return {"seal_rows": seal, "mode": mode, "vector_index": ws.store.vector_index_kind,
                "ndcg_at_10": round(rep.ndcg_at_10, 4), "recall_at_100": round(rep.recall_at_100, 4),
                "latency_ms_p50": round(rep.latency_ms_p50, 1), "queries": rep.queries}
    finally:
        ws.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--folder", default=str(ROOT.parent / "shared" / "data" / "beir-scifact"))
    ap.add_argument("--seal", type=int, default=1000)
    args = ap.parse_args()
    rows = []
    for mode in ("vector", "hybrid"):
        for seal in (10**9, args.seal):
            rows.append(one(Path(args.data_dir), Path(args.folder), seal, mode))
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
