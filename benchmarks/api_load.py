"""Bounded load on the HTTP API over loopback: 1, 4 and 16 concurrent clients, each level
`--queries` extractive questions (default 500) through `POST /v1/query` against a real
`python -m rag_core serve` (one worker), on a ~1,400-chunk manuals knowledge base. Reports per
level: p50/p95/max latency, throughput, errors (target 0), and where the time goes (the answer
chain's own stage timings, p50 and p95, vs HTTP and queueing).

Every question is sent with `no_cache` (issue 52): repeated questions would otherwise measure
the answer cache, not answering (`--cache` to measure the cache on purpose).

`--fair`: a second user's single questions while a first user's batch (`--batch`, default 500,
over 8 connections) runs: the second user's p50/p95 alone first, then during the batch
(`--asks` questions each, default 20).

`--code DIR` runs the server from another checkout (a `git worktree` at the commit before a
change); `--kb NAME` uses a knowledge base already in `--data-dir` (benchmarks/first_words.py
builds "manuals3": R-intro, R-FAQ and gnuplot).

The knowledge base: gnuplot's and Bash's manuals from Debian's packages (see
benchmarks/manual_questions.py for the pinned `apt-get download` line; nothing is copied into
the repository). The questions are the v2 manual questions, cycled; they only drive load here.

    python benchmarks/api_load.py --pdfs /tmp/manuals/usr/share/doc/gnuplot/gnuplot.pdf \
        /tmp/manuals/usr/share/doc/bash/bashref.pdf --data-dir /tmp/gw-api-load \
        --out benchmarks/results/api_load.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KB = "manuals-load"
CODE = ROOT  # the checkout the server runs (--code)
NO_CACHE = True


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def build(data_dir: Path, pdfs: list[Path]) -> tuple[int, str, str]:
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(data_dir))
    op = Caller.operator()
    try:
        if KB not in {k.name for k in ws.list_kbs(caller=op)}:
            ws.create_kb(KB, caller=op)
            stats = ws.ingest(KB, pdfs, caller=op)
            print(f"ingested {stats.documents} documents, {stats.chunks} chunks in {stats.seconds_total:.0f} s",
                  flush=True)
        chunks = ws.kb_counts(KB, caller=op)[1]
        key = ws.api_keys.create("loadtest", "read", by=op, label="api_load benchmark").key
        other = ws.api_keys.create("other", "read", by=op, label="api_load benchmark: the second user").key
        return chunks, key, other
    finally:
        ws.close()


def start_server(data_dir: Path, port: int, workers: int = 1) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "serve", "--port", str(port), "--data-dir",
                             str(data_dir), "--log-level", "warning", "--workers", str(workers)], cwd=CODE,
                            env={**os.environ, "PYTHONPATH": str(CODE), "RAG_API_RATE_LIMIT": "1000000"})
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not start")


SERVER_PID = 0


def cpu_s(pid: int) -> float:
    """CPU seconds the server has used so far: its process and every live descendant (the
    worker processes of `serve --workers N`), all their threads, user + system."""
    if not pid:
        return 0.0
    stats = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(d.name)] = (int(f[1]), int(f[11]) + int(f[12]))  # parent, ticks
    tree, grew = {pid}, True
    while grew:
        more = {p for p, (parent, _) in stats.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return sum(stats[p][1] for p in tree if p in stats) / os.sysconf("SC_CLK_TCK")


def run_level(base: str, key: str, questions: list[str], clients: int, n: int, stop=None) -> dict:
    lat, chain_ms, errors, abstained, stages = [], [], [], 0, {}
    lock = threading.Lock()
    counter = iter(range(n))

    def worker():
        nonlocal abstained
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120) as c:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None or (stop is not None and stop.is_set()):
                    return
                t = time.perf_counter()
                try:
                    r = c.post("/v1/query", json={"question": questions[i % len(questions)], "knowledge_bases": [KB],
                                                  "no_cache": NO_CACHE})
                    dt = time.perf_counter() - t
                    with lock:
                        if r.status_code != 200:
                            errors.append(f"{r.status_code} {r.text[:100]}")
                        else:
                            a = r.json()
                            lat.append(dt)
                            chain_ms.append(a["timings_ms"].get("total", 0.0))
                            for stage, ms in a["timings_ms"].items():
                                if stage != "total" and isinstance(ms, (int, float)):
                                    stages.setdefault(stage, []).append(ms)
                            abstained += a["abstained"]
                except httpx.HTTPError as exc:
                    with lock:
                        errors.append(repr(exc))

    t0, c0 = time.perf_counter(), cpu_s(SERVER_PID)
    with ThreadPoolExecutor(clients) as pool:
        for _ in range(clients):
            pool.submit(worker)
    wall = time.perf_counter() - t0
    used = cpu_s(SERVER_PID) - c0
    return {"clients": clients, "queries": n, "ok": len(lat), "errors": len(errors), "error_examples": errors[:3],
            # how much of the machine the server used, and what one answer costs in CPU: the
            # ceiling no scheduling or worker processes can lift
            "server_cores_used": round(used / wall, 2) if SERVER_PID else None,
            "server_cpu_s_per_answer": round(used / len(lat), 3) if SERVER_PID and lat else None,
            "abstained": abstained, "wall_s": round(wall, 1), "throughput_qps": round(len(lat) / wall, 2),
            "p50_ms": round(pct(lat, 50) * 1000), "p95_ms": round(pct(lat, 95) * 1000),
            "max_ms": round(max(lat) * 1000) if lat else None,
            # The chain's own time per answer vs what the client waited: the rest is HTTP + queueing
            # behind the other clients (one worker; the reader and store serialise).
            "chain_p50_ms": round(pct(chain_ms, 50)), "chain_p95_ms": round(pct(chain_ms, 95)),
            "stage_ms": {k: {"p50": round(pct(v, 50), 1), "p95": round(pct(v, 95), 1), "n": len(v)}
                         for k, v in sorted(stages.items())}}


def fairness(base: str, key: str, other: str, questions: list[str], batch: int, asks: int = 20) -> dict:
    """The second user's questions, one at a time, alone and then during the first user's batch."""
    def single(n: int) -> list[float]:
        lat = []
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {other}"}, timeout=300) as c:
            for i in range(n):
                t = time.perf_counter()
                r = c.post("/v1/query", json={"question": questions[(7 * i + 3) % len(questions)],
                                              "knowledge_bases": [KB], "no_cache": True})
                if r.status_code == 200:
                    lat.append(time.perf_counter() - t)
                time.sleep(0.5)  # a person reads
        return lat

    alone = single(asks)
    done = threading.Event()
    got: dict = {}
    bg = threading.Thread(target=lambda: got.update(run_level(base, key, questions, 8, batch, stop=done)))
    bg.start()
    time.sleep(3)  # the batch is in full flow
    during = single(asks)
    done.set()
    bg.join()
    return {"batch_questions": batch, "batch_connections": 8, "batch_answered": got.get("ok"),
            "batch_throughput_qps": got.get("throughput_qps"),
            "single_alone_p50_ms": round(pct(alone, 50) * 1000), "single_alone_p95_ms": round(pct(alone, 95) * 1000),
            "single_during_p50_ms": round(pct(during, 50) * 1000),
            "single_during_p95_ms": round(pct(during, 95) * 1000),
            "p95_ratio": round(pct(during, 95) / pct(alone, 95), 2), "single_asked": [len(alone), len(during)]}


def main() -> None:
    global KB, CODE, NO_CACHE, SERVER_PID
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdfs", nargs="+", type=Path, default=[])
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--kb", default=KB)
    ap.add_argument("--code", type=Path, default=ROOT)
    ap.add_argument("--cache", action="store_true", help="let repeated questions hit the answer cache")
    ap.add_argument("--fair", action="store_true")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--workers", type=int, default=1, help="serve --workers N: worker processes")
    ap.add_argument("--asks", type=int, default=20, help="the second user's questions, alone and during the batch")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    KB, CODE, NO_CACHE = args.kb, args.code.resolve(), not args.cache

    chunks, key, other = build(args.data_dir, args.pdfs)
    qs = [json.loads(line)["question"] for line in (ROOT / "benchmarks/data/manual_questions_v2.jsonl").open()]
    random.Random(0).shuffle(qs)  # mixed: programs, answerable and not, in no order
    proc = start_server(args.data_dir, args.port, args.workers)
    SERVER_PID = proc.pid
    base = f"http://127.0.0.1:{args.port}"
    try:
        run_level(base, key, qs, 2, 10)  # warm up: models loaded, caches filled
        levels = []
        for clients in (int(x) for x in args.levels.split(",")):
            res = run_level(base, key, qs, clients, args.queries)
            print(json.dumps(res), flush=True)
            levels.append(res)
        fair = fairness(base, key, other, qs, args.batch, args.asks) if args.fair else None
        if fair:
            print(json.dumps(fair), flush=True)
    finally:
        proc.terminate()
        proc.wait(30)
    out = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
           "kb_chunks": chunks, "kb": KB, "code": str(CODE),
           "commit": os.popen(f"git -C {CODE} rev-parse --short HEAD").read().strip(), "no_cache": NO_CACHE,
           "workers": args.workers, "levels": levels, "fairness": fair, "command": " ".join(sys.argv),
           "load_at_end": round(os.getloadavg()[0], 2)}
    if len(levels) > 1 and levels[0]["clients"] == 1:
        out["throughput_vs_one_client"] = {l["clients"]: round(l["throughput_qps"] / levels[0]["throughput_qps"], 2)
                                           for l in levels}
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
