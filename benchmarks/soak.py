"""An hour of real use over the HTTP API (issue 51, part 3).

    python benchmarks/soak.py --minutes 60 --out benchmarks/results/soak_hour.json
    python benchmarks/soak.py --minutes 10 --cluster --out benchmarks/results/soak_cluster.json

A real `python -m rag_core serve` on loopback, over a data folder seeded with real PDFs, and
`--users` simulated people (default 8), each a thread with its own write key, doing what people
do, in random order with short pauses:
- ask (half with the answer cache off), in their own knowledge base plus the shared "team" one;
  some as a conversation with a follow-up in the same thread;
- rate an answer they got (up or down);
- upload a real PDF (now and then a password-protected or truncated one: it must be reported by
  name and leave nothing behind);
- re-ingest a changed file under the same name (the old version must never be cited again);
- delete one of their documents (it must never come back).
Each user keeps at most `--max-docs` uploaded documents (an upload beyond that deletes one first),
so the corpus stays about the same size for the whole run: memory that grows with the data is not
a leak, and a flat corpus lets the memory figure say which it is. Each window reports the live
documents the users hold.
An administrator flips user u1's access to the "board" knowledge base every `--flip-s` seconds.

Every answer is checked as it arrives (an *invariant violation* otherwise):
- no citation or closest passage from a document deleted (or replaced) before the question was
  sent, whether answered afresh or from the cache;
- no citation or passage from a knowledge base the caller could not see for the whole time the
  question was in flight (another user's, or "board" while u1's access was revoked).
After the run the server is stopped and the folder is opened directly: every document listed as
indexed has all its chunks in the store and nothing else is there; every acknowledged upload that
was not deleted is listed; no deleted document is listed; every acknowledged rating is stored.

Reported per window (`--window-s`, default 300): operations and errors by kind, p50/p95 latency
of questions (cache on / off) and of every operation, the server's memory (RSS, itself and with
its parse worker), its open file handles and open SQLite database files, and violations.

`--cluster`: the same against a local three-node Weaviate cluster (replication factor 3), with one
node killed at the midpoint and restarted `--down-s` later.

PDFs: the py-pdf sample files (../shared/data/pdfs-py-pdf-sample-files) and, with --manuals DIR,
R's manuals (see benchmarks/manual_questions.py for the pinned Debian package). Nothing is
copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTIONS = [
    "How do I fit a linear regression model?", "How do I quit R?", "How can I read data from a file?",
    "What is a data frame?", "How are missing values represented?", "What does this document describe?",
    "What is the title of the document?", "Which fonts are used?", "What is written on the first page?",
    "How do I install a package?", "What are the notes about?", "What is the code word?",
    "Wie beende ich R?", "¿Cómo leo datos de un archivo?", "データフレームとは何ですか？",
]
FOLLOW_UPS = ["And how do I do that in a script?", "Can you say more about that?", "Where is that described?"]


def pct(xs: list[float], p: float) -> float | None:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 3) if xs else None


# ---- the server's resources --------------------------------------------------------------------
def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kids = (task / "children").read_text().split()
            out += [int(k) for k in kids]
    except OSError:
        pass
    return out + [g for k in out for g in _children(k)]


def resources(pid: int) -> dict:
    """RSS of the server and of its process tree (the parse worker), its open file handles, and
    how many of them are SQLite database files (connections; -wal/-shm not counted)."""
    fds, dbs = 0, 0
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            fds += 1
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.endswith((".db", ".sqlite", ".sqlite3")):
                dbs += 1
    except OSError:
        pass
    return {"rss_mb": round(_rss_mb(pid), 1), "tree_rss_mb": round(_rss_mb(pid) + sum(map(_rss_mb, _children(pid))), 1),
            "fds": fds, "db_files": dbs}


# ---- what happened -----------------------------------------------------------------------------
@dataclass
class Log:
    """Everything the users saw, with times (seconds since the start)."""

    t0: float = field(default_factory=time.monotonic)
    ops: list[dict] = field(default_factory=list)          # {t, op, s, ok, cached?}
    errors: list[dict] = field(default_factory=list)       # {t, op, what}
    violations: list[dict] = field(default_factory=list)   # {t, what}
    samples: list[dict] = field(default_factory=list)      # {t, rss_mb, ...}
    deleted: dict[str, float] = field(default_factory=dict)  # doc_id -> when its delete/replacement was acknowledged
    uploaded: dict[str, str] = field(default_factory=dict)   # doc_id -> kb name (acknowledged, live)
    ratings: dict[str, int] = field(default_factory=dict)    # query_id -> rating acknowledged
    board: list[tuple[float, float, bool]] = field(default_factory=list)  # (sent, acknowledged, u1 may read)
    unreadable: int = 0  # unreadable uploads reported by name and reason
    lock: threading.Lock = field(default_factory=threading.Lock)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def op(self, op: str, s: float, ok: bool = True, **extra) -> None:
        with self.lock:
            self.ops.append({"t": self.now(), "op": op, "s": s, "ok": ok, **extra})

    def error(self, op: str, what: str) -> None:
        with self.lock:
            self.errors.append({"t": self.now(), "op": op, "what": what[:300]})

    def violation(self, what: str) -> None:
        with self.lock:
            self.violations.append({"t": self.now(), "what": what[:300]})

    def board_states(self, start: float, end: float) -> set[bool]:
        """Whether u1 could read "board", at the moments between `start` and `end`: {True},
        {False} or both. A change counts from the moment it was sent (it may take effect any time
        until acknowledged)."""
        with self.lock:
            changes = list(self.board)
        state = True  # u1 starts with access
        for sent, acked, granted in changes:
            if acked <= start:
                state = granted
        return {state} | {granted for sent, acked, granted in changes if sent <= end and acked > start}

    def board_may_read(self, start: float, end: float) -> bool:
        return True in self.board_states(start, end)


# ---- the simulated people ----------------------------------------------------------------------
class User(threading.Thread):
    def __init__(self, i: int, base: str, key: str, log: Log, pdfs: list[Path], bad: list[tuple[str, bytes]],
                 until: float, seed: int, max_docs: int = 3):
        super().__init__(name=f"u{i}", daemon=True)
        self.max_docs = max_docs
        self.i, self.name_, self.log, self.pdfs, self.bad, self.until = i, f"u{i}", log, pdfs, bad, until
        self.http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=300)
        self.rng = random.Random(seed * 1000 + i)
        self.kb = f"{self.name_}-docs"
        self.answers: list[str] = []  # query ids to rate
        self.mine: list[str] = []     # doc ids of my live documents
        self.notes_version = 0
        self.notes_doc: str | None = None
        self.n = 0

    # an operation that failed for a reason no user should see is an error
    def _call(self, op: str, method: str, url: str, expect: tuple[int, ...] = (200,), **kw):
        t = time.perf_counter()
        try:
            r = self.http.request(method, url, **kw)
        except httpx.HTTPError as exc:
            self.log.error(op, f"{type(exc).__name__}: {exc}")
            self.log.op(op, time.perf_counter() - t, ok=False)
            return None
        s = time.perf_counter() - t
        if r.status_code not in expect:
            self.log.error(op, f"HTTP {r.status_code}: {r.text[:200]}")
            self.log.op(op, s, ok=False)
            return None
        return r, s

    def run(self) -> None:
        actions = [(self.ask, 40), (self.conversation, 10), (self.rate, 15), (self.upload, 12),
                   (self.reingest, 8), (self.delete, 8), (self.browse, 7)]
        fns, weights = zip(*actions)
        while self.log.now() < self.until:
            self.rng.choices(fns, weights)[0]()
            time.sleep(self.rng.uniform(0.2, 2.0))  # a person reads before the next step

    def kbs(self) -> list[str]:
        return [self.kb, "team"] + (["board"] if self.i == 1 else [])

    def check_answer(self, body: dict, start: float, end: float) -> None:
        for c in body.get("citations", []) + body.get("closest", []):
            doc, src = c["doc_id"], c["source"]
            with self.log.lock:
                gone = self.log.deleted.get(doc)
            if gone is not None and gone < start:
                self.log.violation(f"{self.name_} got {src} ({doc}), deleted {start - gone:.1f} s before asking"
                                   f" (cached={body.get('cached')})")
            owner = src.split("-", 1)[0]
            if owner == "board":
                if self.i != 1 or not self.log.board_may_read(start, end):
                    self.log.violation(f"{self.name_} got board's {src} while it could not read board")
            elif owner not in (self.name_, "team"):
                self.log.violation(f"{self.name_} got {src} from another user's knowledge base")

    def _ask(self, question: str, kbs: list[str], thread: str | None = None, op: str = "ask") -> dict | None:
        no_cache = self.rng.random() < 0.5
        start = self.log.now()
        body = {"question": question, "knowledge_bases": kbs, "no_cache": no_cache}
        if thread:
            body["thread_id"] = thread
        # u1 asking "board" while revoked: a hidden knowledge base reads like a missing one (404)
        got = self._call(op, "POST", "/v1/query", expect=(200, 404), json=body)
        if got is None:
            return None
        r, s = got
        end = self.log.now()
        if r.status_code == 404:
            if "board" in kbs and False in self.log.board_states(start, end):  # revoked at some moment
                self.log.op(op, s, ok=True, hidden=True)
                return None
            self.log.error(op, f"HTTP 404: {r.text[:200]}")
            self.log.op(op, s, ok=False)
            return None
        a = r.json()
        self.check_answer(a, start, end)
        self.log.op(op, s, cached=bool(a.get("cached")), no_cache=no_cache, abstained=a["abstained"])
        if a.get("query_id"):
            self.answers.append(a["query_id"])
        return a

    def ask(self) -> None:
        self._ask(self.rng.choice(QUESTIONS), self.kbs())

    def conversation(self) -> None:
        got = self._call("thread", "POST", "/v1/threads", expect=(201,), json={"title": f"soak {self.n}"})
        if got is None:
            return
        tid = got[0].json()["thread_id"]
        self.log.op("thread", got[1])
        answered = 0
        if self._ask(self.rng.choice(QUESTIONS), self.kbs(), tid, op="conversation") is not None:
            answered = 1 + (self._ask(self.rng.choice(FOLLOW_UPS), self.kbs(), tid, op="follow-up") is not None)
        # (a question refused because u1's access to "board" was revoked meanwhile saves nothing)
        got = self._call("read-thread", "GET", f"/v1/threads/{tid}")
        if got is not None:
            msgs = got[0].json()["messages"]
            if len(msgs) != 2 * answered:  # each answered question and its answer, saved
                self.log.violation(f"{self.name_}'s thread {tid} holds {len(msgs)} messages after {answered} answers")
            self.log.op("read-thread", got[1])

    def rate(self) -> None:
        if not self.answers:
            return self.ask()
        qid = self.rng.choice(self.answers)
        rating = self.rng.choice([1, -1])
        got = self._call("rate", "POST", "/v1/feedback", json={"query_id": qid, "rating": rating})
        if got is not None:
            with self.log.lock:
                self.log.ratings[qid] = rating
            self.log.op("rate", got[1])

    def _wait_job(self, op: str, job_id: str, t: float) -> dict | None:
        while True:
            got = self._call(op, "GET", f"/v1/jobs/{job_id}")
            if got is None:
                return None
            job = got[0].json()
            if job["status"] not in ("queued", "running"):
                self.log.op(op, time.perf_counter() - t, ok=job["status"] == "done")
                if job["status"] != "done":
                    self.log.error(op, f"job {job['status']}: {job['summary']}")
                    return None
                return job
            time.sleep(0.5)

    def upload(self) -> None:
        if len([d for d in self.mine if d != self.notes_doc]) >= self.max_docs:
            self.delete()  # a steady corpus: see the module's docstring
        self.n += 1
        t = time.perf_counter()
        if self.rng.random() < 0.1:  # a file that cannot be read: reported by name, nothing kept
            name, data = self.rng.choice(self.bad)
            name = f"{self.name_}-{self.n}-{name}"
        else:
            pdf = self.rng.choice(self.pdfs)
            name = f"{self.name_}-{self.n}-{pdf.name}"
            # a byte comment after %%EOF: the same pages, a new file (no duplicate)
            data = pdf.read_bytes() + f"\n% soak {self.name_} {self.n}\n".encode()
        got = self._call("upload", "POST", f"/v1/knowledge-bases/{self.kb}/documents", expect=(202,),
                         files=[("files", (name, data, "application/pdf"))])
        if got is None:
            return
        job = self._wait_job("upload", got[0].json()["job_id"], t)
        if job is None:
            return
        for rep in job["reports"]:
            if rep["status"] == "ingested":
                with self.log.lock:
                    for d in rep["doc_ids"]:
                        self.log.uploaded[d] = self.kb
                self.mine += rep["doc_ids"]
            elif rep["status"] == "failed":
                if rep["file"] != name or not rep["reason"]:
                    self.log.violation(f"{name} failed without its name and reason: {rep}")
                with self.log.lock:
                    self.log.unreadable += 1
                self._none_left(name)

    def _none_left(self, name: str) -> None:
        got = self._call("browse", "GET", f"/v1/knowledge-bases/{self.kb}/documents")
        if got is not None and any(d["source"] == name and d["status"] in ("indexed", "searchable")
                                   for d in got[0].json()["data"]):
            self.log.violation(f"the unreadable {name} is listed as {self.kb}'s document")

    def reingest(self) -> None:
        """The same file name, new content: the old version is replaced."""
        self.notes_version += 1
        v = self.notes_version
        name = f"{self.name_}-notes.md"
        text = (f"# Notes of {self.name_}\n\nVersion {v} of these notes. The code word is "
                f"{self.name_}word{v}. The meeting moved to room {100 + v}.\n")
        t = time.perf_counter()
        old = self.notes_doc
        got = self._call("reingest", "POST", f"/v1/knowledge-bases/{self.kb}/documents", expect=(202,),
                         files=[("files", (name, text.encode(), "text/markdown"))])
        if got is None:
            return
        job = self._wait_job("reingest", got[0].json()["job_id"], t)
        if job is None:
            return
        rep = job["reports"][0]
        if rep["status"] != "ingested":
            self.log.error("reingest", f"{name}: {rep}")
            return
        acked = self.log.now()
        new = rep["doc_ids"][0]
        with self.log.lock:
            if old and old != new:
                self.log.deleted[old] = acked
                self.log.uploaded.pop(old, None)
            self.log.uploaded[new] = self.kb
        if old in self.mine:
            self.mine.remove(old)
        self.mine.append(new)
        self.notes_doc = new

    def delete(self) -> None:
        choices = [d for d in self.mine if d != self.notes_doc]
        if not choices:
            return self.upload()
        doc = self.rng.choice(choices)
        got = self._call("delete", "DELETE", f"/v1/knowledge-bases/{self.kb}/documents/{doc}", expect=(204,))
        if got is None:
            return
        with self.log.lock:
            self.log.deleted[doc] = self.log.now()
            self.log.uploaded.pop(doc, None)
        self.mine.remove(doc)
        self.log.op("delete", got[1])
        listed = self._call("browse", "GET", f"/v1/knowledge-bases/{self.kb}/documents")
        if listed is not None and any(d["doc_id"] == doc for d in listed[0].json()["data"]):
            self.log.violation(f"{self.name_}'s deleted {doc} still listed")

    def browse(self) -> None:
        got = self._call("browse", "GET", "/v1/knowledge-bases")
        if got is None:
            return
        self.log.op("browse", got[1])
        names = {k["name"] for k in got[0].json()["data"]}
        others = {n for n in names if n.endswith("-docs") and n != self.kb}
        if others:
            self.log.violation(f"{self.name_} lists other users' knowledge bases {sorted(others)}")


def admin_loop(base: str, key: str, log: Log, until: float, every: float) -> None:
    """Revoke and grant u1's access to "board", recording when each change was sent and acknowledged."""
    http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120)
    granted = True
    while log.now() + every < until:
        time.sleep(every)
        granted = not granted
        users = ["u0", "u1"] if granted else ["u0"]
        sent = log.now()
        t = time.perf_counter()
        try:
            r = http.patch("/v1/knowledge-bases/board", json={"allow_users": users})
            ok = r.status_code == 200
        except httpx.HTTPError as exc:
            ok, r = False, exc
        if not ok:
            log.error("admin", str(getattr(r, "text", r))[:200])
            granted = not granted
            continue
        with log.lock:
            log.board.append((sent, log.now(), granted))
        log.op("admin", time.perf_counter() - t)


def sampler(pid: int, log: Log, stop: threading.Event, every: float = 5.0) -> None:
    while not stop.wait(every):
        with log.lock:
            log.samples.append({"t": log.now(), "live_docs": len(log.uploaded), **resources(pid)})


# ---- set-up, run, report -----------------------------------------------------------------------
def seed(data: Path, pdfs: list[Path], users: int, store_env: dict) -> dict[str, str]:
    """Knowledge bases, documents and keys, through the Workspace (not timed)."""
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    os.environ.update(store_env)
    ws = Workspace(get_settings(data))
    op, admin = Caller.operator(), Caller.of("root", admin=True)
    keys = {}
    try:
        ws.create_kb("team", caller=admin, acl_groups=["staff"])
        ws.create_kb("board", caller=admin, acl_users=["u0", "u1"])
        tmp = data.parent / "seed"
        tmp.mkdir(exist_ok=True)

        def put(kb: str, prefix: str, files: list[Path], who) -> None:
            paths = []
            for f in files:
                p = tmp / f"{prefix}-{f.name}"
                p.write_bytes(f.read_bytes())
                paths.append(p)
            ws.ingest(kb, paths, caller=who)

        put("team", "team", pdfs[: max(2, len(pdfs) // 2)], admin)
        put("board", "board", pdfs[-2:], admin)
        for i in range(users):
            who = Caller.of(f"u{i}", ["staff"])
            ws.create_kb(f"u{i}-docs", caller=who, acl_users=[f"u{i}"])
            put(f"u{i}-docs", f"u{i}-0", pdfs[i % len(pdfs): i % len(pdfs) + 1], who)
            keys[f"u{i}"] = ws.api_keys.create(f"u{i}", "write", groups=["staff"], by=op, label="soak").key
        keys["admin"] = ws.api_keys.create("root", "admin", by=op, label="soak").key
    finally:
        ws.close()
    return keys


def start_server(data: Path, port: int, env: dict) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "serve", "--port", str(port), "--data-dir", str(data),
                             "--log-level", "warning"], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "RAG_API_RATE_LIMIT": "1000000", **env})
    for _ in range(900):
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/ready", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not start")


def final_check(data: Path, log: Log, store_env: dict) -> tuple[list[str], float]:
    """Open the folder directly after the server stopped: (violations, seconds to open)."""
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    os.environ.update(store_env)
    t = time.perf_counter()
    ws = Workspace(get_settings(data))
    open_s = time.perf_counter() - t
    bad = []
    try:
        op = Caller.operator()
        listed = {}
        for kb in ws.list_kbs(caller=op):
            docs = {d.doc_id: d for d in ws.appdb.list_documents(kb.kb_id, status=None)}
            listed.update({k: kb.name for k in docs})
            held = 0
            for d in docs.values():
                n = len(ws.store.document_chunks(kb.kb_id, d.doc_id))
                held += n
                if d.status in ("indexed", "searchable") and n != d.chunks:
                    bad.append(f"half document {kb.name}/{d.source}: {n} of {d.chunks} chunks")
                elif d.status not in ("indexed", "searchable") and n:
                    bad.append(f"{kb.name}/{d.source} is {d.status} with {n} chunks in the store")
            if ws.store.count(kb.kb_id) != held:
                bad.append(f"{kb.name}: the store holds {ws.store.count(kb.kb_id)} chunks, its documents {held}")
        with log.lock:
            uploaded, deleted, ratings = dict(log.uploaded), dict(log.deleted), dict(log.ratings)
        bad += [f"acknowledged upload {d} ({kb}) is gone" for d, kb in uploaded.items() if d not in listed]
        bad += [f"deleted {d} is listed again" for d in deleted if d in listed]
        for qid, rating in ratings.items():
            r = ws.db.query_one("SELECT rating FROM feedback WHERE query_id=?", (qid,))
            if r is None or r[0] != rating:
                bad.append(f"acknowledged rating of {qid} is {r[0] if r else 'missing'}, not {rating}")
    finally:
        ws.close()
    return bad, open_s


def report(log: Log, window: float, minutes: float) -> list[dict]:
    rows = []
    n = max(1, int(round(minutes * 60 / window)))
    for w in range(n):
        a, b = w * window, (w + 1) * window
        ops = [o for o in log.ops if a <= o["t"] < b]
        q = [o for o in ops if o["op"] in ("ask", "conversation", "follow-up") and o["ok"] and not o.get("hidden")]
        samp = [s for s in log.samples if a <= s["t"] < b]
        by_op = {}
        for o in ops:
            by_op.setdefault(o["op"], []).append(o["s"])
        rows.append({
            "window": f"{a / 60:g}-{b / 60:g} min",
            "operations": len(ops),
            "by_op": {k: {"n": len(v), "p50_s": pct(v, 50), "p95_s": pct(v, 95)} for k, v in sorted(by_op.items())},
            "questions": len(q),
            "question_p50_s": pct([o["s"] for o in q], 50), "question_p95_s": pct([o["s"] for o in q], 95),
            "fresh_p95_s": pct([o["s"] for o in q if not o.get("cached")], 95),
            "cached_p95_s": pct([o["s"] for o in q if o.get("cached")], 95),
            "cache_hits": sum(bool(o.get("cached")) for o in q),
            "all_p50_s": pct([o["s"] for o in ops], 50), "all_p95_s": pct([o["s"] for o in ops], 95),
            "errors": sum(a <= e["t"] < b for e in log.errors),
            "violations": sum(a <= v["t"] < b for v in log.violations),
            "rss_mb_max": max((s["rss_mb"] for s in samp), default=None),
            "tree_rss_mb_max": max((s["tree_rss_mb"] for s in samp), default=None),
            "live_docs_max": max((s["live_docs"] for s in samp), default=None),
            "fds_max": max((s["fds"] for s in samp), default=None),
            "db_files_max": max((s["db_files"] for s in samp), default=None),
        })
    return rows


def run(minutes: float, users: int, pdfs: list[Path], bad: list[tuple[str, bytes]], root: Path, *,
        window_s: float = 300, flip_s: float = 20, seed_n: int = 0, cluster: bool = False, down_s: float = 20,
        max_docs: int = 3,
        progress=print) -> dict:
    from rag_core.generation.local_server import free_port

    store_env, clus = {}, None
    if cluster:
        from rag_core.stores.weaviate_local import start_cluster

        clus = start_cluster(3, root / "cluster")
        store_env = {"RAG_STORE": "weaviate", "WEAVIATE_URL": clus.urls,
                     "WEAVIATE_GRPC_PORT": ",".join(str(n.grpc) for n in clus.nodes),
                     "RAG_WEAVIATE_REPLICATION_FACTOR": "3"}
    data = root / "data"
    try:
        t = time.perf_counter()
        keys = seed(data, pdfs, users, store_env)
        progress(f"seeded in {time.perf_counter() - t:.0f} s")
        port = free_port()
        server = start_server(data, port, store_env)
        base = f"http://127.0.0.1:{port}"
        log = Log()
        until = minutes * 60
        stop = threading.Event()
        threads = [User(i, base, keys[f"u{i}"], log, pdfs, bad, until, seed_n, max_docs) for i in range(users)]
        threads.append(threading.Thread(target=admin_loop, args=(base, keys["admin"], log, until, flip_s), daemon=True))
        threads.append(threading.Thread(target=sampler, args=(server.pid, log, stop), daemon=True))
        for th in threads:
            th.start()
        fault = {}
        if clus is not None:
            time.sleep(until / 2)
            clus.kill(1)
            fault["killed_at_s"] = round(log.now(), 1)
            time.sleep(down_s)
            clus.restart(1)
            fault["restarted_at_s"] = round(log.now(), 1)
        last = 0.0
        while any(th.is_alive() for th in threads[:users]):
            time.sleep(5)
            if log.now() - last >= window_s:
                last = log.now()
                progress(json.dumps({"t_min": round(last / 60, 1), "ops": len(log.ops), "errors": len(log.errors),
                                     "violations": len(log.violations), **(log.samples[-1] if log.samples else {})}))
        for th in threads[:users + 1]:
            th.join(timeout=600)
        stop.set()
        end_res = resources(server.pid)
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            log.error("server", "did not stop within 60 s of SIGTERM")
        bad_after, open_s = final_check(data, log, store_env)
        for v in bad_after:
            log.violation(v)
        warm = [s for s in log.samples if s["t"] >= min(window_s, until / 2)]
        return {
            "minutes": minutes, "users": users, "store": "weaviate cluster (3 nodes, factor 3)" if cluster else "embedded",
            "operations": len(log.ops), "errors": len(log.errors), "violations": len(log.violations),
            "error_samples": log.errors[:20], "violation_samples": log.violations[:20],
            "board_flips": len(log.board), "acknowledged_deletes": len(log.deleted), "ratings": len(log.ratings),
            "unreadable_files_reported": log.unreadable,
            "rss_mb_after_warmup": [min((s["rss_mb"] for s in warm), default=None),
                                    max((s["rss_mb"] for s in warm), default=None)],
            "tree_rss_mb_after_warmup": [min((s["tree_rss_mb"] for s in warm), default=None),
                                         max((s["tree_rss_mb"] for s in warm), default=None)],
            "fds_start_end": [log.samples[0]["fds"] if log.samples else None, end_res["fds"]],
            "reopen_s": round(open_s, 2), "fault": fault,
            "windows": report(log, window_s, minutes),
        }
    finally:
        if clus is not None:
            clus.stop()


def bad_files(sample_dir: Path | None) -> list[tuple[str, bytes]]:
    """Files that cannot be read: a truncated PDF, and the password-protected sample when present."""
    out = [("truncated.pdf", b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n" + b"x" * 500)]
    locked = sample_dir / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf" if sample_dir else None
    if locked is not None and locked.exists():
        out.append(("locked.pdf", locked.read_bytes()))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--window-s", type=float, default=300)
    ap.add_argument("--flip-s", type=float, default=20)
    ap.add_argument("--samples", type=Path, default=ROOT.parent / "shared/data/pdfs-py-pdf-sample-files")
    ap.add_argument("--manuals", type=Path, help="a folder of R's manuals (R-intro.pdf, R-data.pdf, R-FAQ.pdf)")
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--down-s", type=float, default=20)
    ap.add_argument("--root", type=Path, help="work folder (default: a new temporary one)")
    ap.add_argument("--max-docs", type=int, default=3, help="uploaded documents a user keeps at most")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    import tempfile

    pdfs = sorted(p for p in a.samples.rglob("*.pdf") if "password" not in p.parent.name)
    if a.manuals:
        pdfs += [a.manuals / n for n in ("R-intro.pdf", "R-data.pdf", "R-FAQ.pdf") if (a.manuals / n).exists()]
    if not pdfs:
        raise SystemExit(f"no PDFs under {a.samples}")
    root = a.root or Path(tempfile.mkdtemp(prefix="soak-"))
    res = run(a.minutes, a.users, pdfs, bad_files(a.samples), root, window_s=a.window_s, flip_s=a.flip_s,
              cluster=a.cluster, down_s=a.down_s, max_docs=a.max_docs)
    res["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    res["pdfs"] = len(pdfs)
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    return 1 if res["errors"] or res["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
