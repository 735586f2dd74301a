"""Crash anywhere, lose nothing (issue 51): each write path runs in a child process that is killed
with SIGKILL at a random moment; the data folder is reopened and its invariants checked.

Paths (embedded store): ingest, delete (two thirds of the documents), re-ingest of a changed file, re-embedding after a
model change, feedback (log + rating), conversation writes, API-key writes, and answer-cache
writes followed by a delete; and two paths killed at named fault points
(rag_core/faults.py, RAG_FAULT) as well as at random moments: `migrate`, opening a data folder
made with an older schema (the knowledge-base table rebuilt for owners, columns added), and
`compact`, deletes that make the store compact and rewrite its on-disk snapshot. The child
writes an acknowledgement line (flushed and fsynced) after each operation returns: what was
acknowledged must survive the kill.

Invariants after reopening (a violation is counted for each breach):
- no half document: every document the registry lists has exactly its chunks in the store, and
  no chunk belongs to a document the registry does not know;
- what search shows is whole: a hit's document is listed, searchable or indexed, with all its chunks;
- an acknowledged ingest is searchable by its code word; an acknowledged delete is never found
  again; an acknowledged re-ingest shows the new version only (no chunk of the old);
- an acknowledged rating, conversation message and API key are there (the key authenticates);
- the answer cache never serves an answer citing a document deleted after it was cached;
- an old folder opens with every knowledge base, owner, document and rating it had;
- a snapshot the store points at (CURRENT) always loads;
- running the operation again completes (exit 0) and the invariants still hold.

    python benchmarks/crash_anywhere.py --runs 10            # every path, 10 kills each
    python benchmarks/crash_anywhere.py --paths ingest,delete --runs 3
    CRASH_STORE=weaviate WEAVIATE_URL=http://127.0.0.1:8080 WEAVIATE_GRPC_PORT=50051 \
        python benchmarks/crash_anywhere.py --paths ingest,delete,reingest --runs 5   # a real Weaviate server
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PATHS = ("ingest", "delete", "reingest", "reembed", "feedback", "conversation", "api_key", "cache", "migrate",
         "compact")
# Runs of these paths cycle through named fault points (None: a random moment instead).
FAULTS = {"migrate": ["migrate.kbs.copied", "migrate.kbs.renamed", "migrate.column", "migrate.column:4", None],
          "compact": ["snapshot.files", "snapshot.manifest", "snapshot.current", "snapshot.files:2", None]}
# The compact path writes snapshots from 20 rows on and compacts past 20 dead rows (the defaults,
# 20,000 and 1,000, would need thousands of chunks per run): the same code, reached sooner.
SNAPSHOT_MIN, COMPACT_MIN_DEAD = 20, 20
# operations per child: enough that a kill within the first seconds lands mid-run
# (the fast paths never finish on their own: the kill always lands mid-run)
OPS = {"feedback": 10**6, "conversation": 10**6, "api_key": 10**6,
       "delete": 40, "compact": 40}  # 40 of 60 documents: past a third of the rows dead (compact: it compacts)
DOCS = {"delete": 60, "reembed": 60, "compact": 60}  # documents prepared: deleting a dozen takes under a second
DELAY = {"delete": 0.8, "reembed": 1.0, "compact": 0.8, "migrate": 0.3}  # the longest wait before the kill where the whole run is short
KB = "k"


def doc_text(i: int, version: int = 1) -> str:
    word = f"zq{i}v{version}x"  # a code word only this version of this document holds
    paras = [f"Section {j} of document {i} version {version} mentions {word} and topic {i % 7}." * 3 for j in range(6)]
    return f"# Document {i}\n\n" + "\n\n".join(paras) + "\n"


def code_word(i: int, version: int = 1) -> str:
    return f"zq{i}v{version}x"


# ----------------------------------------------------------------------------- the child

def _store_settings() -> dict:
    """The store the run uses: embedded unless CRASH_STORE=weaviate (WEAVIATE_URL and
    WEAVIATE_GRPC_PORT name the server, as for the app)."""
    if os.environ.get("CRASH_STORE") == "weaviate":
        return {"store": "weaviate", "weaviate_url": os.environ["WEAVIATE_URL"],
                "weaviate_grpc_port": os.environ.get("WEAVIATE_GRPC_PORT", "50051")}
    return {}


def child(role: str, data: Path, docs: Path, log_path: Path, count: int) -> None:
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.models import Answer
    from rag_core.workspace import Workspace

    op = Caller.operator()
    log = open(log_path, "a", buffering=1)

    def ack(**event) -> None:
        log.write(json.dumps(event) + "\n")
        log.flush()
        os.fsync(log.fileno())

    if role == "migrate":  # the write is the opening itself
        ack(ev="ready")
    if role == "compact":
        from rag_core.stores.embedded import EmbeddedStore
        from rag_core.stores.memindex import MemIndex

        EmbeddedStore.snapshot_min, MemIndex.compact_min_dead = SNAPSHOT_MIN, COMPACT_MIN_DEAD
    ws = Workspace(get_settings(data, answer_cache=(role == "cache"), **_store_settings()))
    if role == "migrate":
        ack(ev="opened")
        count = 0
    else:
        ack(ev="ready")
    docs_by_source = {d.source: d for d in ws.list_documents(KB, caller=op, status=None)}
    for i in range(count):
        if role == "ingest":
            f = docs / f"new{i}.md"
            f.write_text(doc_text(1000 + i))
            ws.ingest(KB, [f], caller=op)
            ack(ev="ingest", i=1000 + i)
        elif role in ("delete", "compact"):
            d = docs_by_source.get(f"d{i}.md")
            if d is not None:
                ws.delete_document(KB, d.doc_id, caller=op)
                ack(ev="delete", i=i)
        elif role == "reingest":
            f = docs / f"d{i}.md"
            f.write_text(doc_text(i, version=2))
            ws.ingest(KB, [f], caller=op)
            ack(ev="reingest", i=i)
        elif role == "reembed":  # after an embedding model change (prepare records another one)
            ws.reembed(caller=op)
            ack(ev="reembed_done")
            break
        elif role == "feedback":
            fb = ws.feedback_for(caller=op)
            qid = fb.log_answer(Answer(question=f"question {i}", text=f"answer {i}"), [ws.get_kb(KB, caller=op).kb_id])
            fb.rate(qid, 1 if i % 2 else -1, comment=f"comment {i}")
            ack(ev="feedback", qid=qid, rating=1 if i % 2 else -1)
        elif role == "conversation":
            convs = ws.conversations(caller=op)
            tid = convs.create(f"chat {i}")
            for n in range(3):
                convs.add(tid, "user" if n % 2 == 0 else "assistant", f"message {i}.{n}")
                ack(ev="message", thread=tid, n=n, content=f"message {i}.{n}")
        elif role == "api_key":
            key = ws.api_keys.create(f"user{i}", "read", by=op).key
            ack(ev="api_key", key=key)
        elif role == "cache":
            q = f"Which document mentions {code_word(i)}?"
            d = docs_by_source.get(f"d{i}.md")
            if d is None or ws.appdb.get_document(d.kb_id, d.doc_id) is None:
                continue  # deleted before (a re-run completes what is left)
            a = ws.ask([KB], q, caller=op)  # computed and cached
            if not a.abstained:
                ws.delete_document(KB, d.doc_id, caller=op)
                ack(ev="cache_delete", i=i, question=q)
    if role == "compact":
        ws.store.maintain()  # the compaction and its snapshot, if the background has not done them yet
    ack(ev="done")
    log.close()
    ws.close()


# ----------------------------------------------------------------------------- the parent

def prepare(root: Path, role: str, n_docs: int) -> tuple[Path, Path]:
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    data, docs = root / "data", root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    from rag_core.stores.embedded import EmbeddedStore

    saved_min = EmbeddedStore.snapshot_min
    if role == "compact":  # an on-disk snapshot to begin with
        EmbeddedStore.snapshot_min = SNAPSHOT_MIN
    ws = Workspace(get_settings(data, **_store_settings()))
    try:
        ws.create_kb(KB, caller=Caller.operator(), **({"acl_users": ["ann"]} if role == "migrate" else {}))
        if role in ("delete", "reingest", "cache", "ingest", "reembed", "migrate", "compact"):
            files = []
            for i in range(n_docs):
                f = docs / f"d{i}.md"
                f.write_text(doc_text(i))
                files.append(f)
            ws.ingest(KB, files, caller=Caller.operator())
        if role == "reembed":
            ws.appdb.set_meta("embedding_model", "an-earlier-model")  # as after RAG_EMBED_MODEL changed
        if role == "migrate":
            fb = ws.feedback_for(caller=Caller.operator())
            for i in range(3):
                from rag_core.models import Answer

                qid = fb.log_answer(Answer(question=f"q{i}", text=f"a{i}"), [ws.get_kb(KB, caller=Caller.operator()).kb_id])
                fb.rate(qid, 1, comment=f"old rating {i}")
    finally:
        ws.close()
        EmbeddedStore.snapshot_min = saved_min
    if role == "migrate":
        age(data)
    return data, docs


# The schema of a data folder from before owners, retention, document leases, dates and
# languages, and thumbs-down reasons (what `age` turns a new folder back into).
OLD_KBS = """CREATE TABLE kbs (kb_id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE,
  description TEXT NOT NULL DEFAULT '', instructions TEXT NOT NULL DEFAULT '', grounded_only INTEGER NOT NULL DEFAULT 0,
  retrieval TEXT NOT NULL DEFAULT '{}', tenant TEXT, acl_users TEXT NOT NULL DEFAULT '[]',
  acl_groups TEXT NOT NULL DEFAULT '[]', created_at REAL NOT NULL)"""
NEWER_COLUMNS = {"documents": ("lease_owner", "lease_until", "doc_date", "date_source", "language", "language_source"),
                 "feedback": ("reason",)}


def age(data: Path) -> None:
    """Turn a folder written by this version into one written before those migrations."""
    import sqlite3

    from rag_core.config import get_settings

    c = sqlite3.connect(get_settings(data).db_path, isolation_level=None)
    try:
        c.execute("PRAGMA foreign_keys=OFF")
        c.execute("BEGIN")
        c.execute(OLD_KBS.replace("CREATE TABLE kbs", "CREATE TABLE kbs_old"))
        c.execute("INSERT INTO kbs_old SELECT kb_id, name, description, instructions, grounded_only, retrieval, tenant, "
                  "acl_users, acl_groups, created_at FROM kbs")
        c.execute("DROP TABLE kbs")
        c.execute("ALTER TABLE kbs_old RENAME TO kbs")
        for table, cols in NEWER_COLUMNS.items():
            for col in cols:
                c.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
        c.execute("COMMIT")
    finally:
        c.close()


def check(role: str, data: Path, acks: list[dict], n_docs: int) -> tuple[list[str], float]:
    """(violations, seconds to reopen the data folder)."""
    from rag_core.access import Caller
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    op = Caller.operator()
    t = time.perf_counter()
    ws = Workspace(get_settings(data, answer_cache=True, **_store_settings()))
    reopen_s = time.perf_counter() - t
    bad: list[str] = []
    try:
        kb = ws.get_kb(KB, caller=op)
        listed = {d.doc_id: d for d in ws.appdb.list_documents(kb.kb_id, status=None)}
        for d in listed.values():
            have = len(ws.store.document_chunks(kb.kb_id, d.doc_id))
            if d.status in ("indexed", "searchable") and have != d.chunks:
                bad.append(f"half document {d.source}: {have} of {d.chunks} chunks")
        if ws.store.name == "embedded":
            rows = ws.db.query("SELECT DISTINCT doc_id FROM chunks WHERE kb_id=?", (kb.kb_id,))
            bad += [f"orphan chunks of {r[0]}" for r in rows if r[0] not in listed]
        else:  # Weaviate: every chunk it holds for this knowledge base belongs to a listed document
            held = sum(len(ws.store.document_chunks(kb.kb_id, d)) for d in listed)
            if ws.store.count(kb.kb_id) != held:
                bad.append(f"orphan chunks: the store holds {ws.store.count(kb.kb_id)}, listed documents {held}")

        def hits(word: str):
            return ws.search([KB], word, k=10, mode="keyword", caller=op).results

        def whole(res) -> None:
            for h in res:
                d = listed.get(h.chunk.doc_id)
                if d is None or d.status not in ("indexed", "searchable"):
                    bad.append(f"search showed {h.chunk.doc_id} whose registry status is {d.status if d else 'absent'}")
                elif len(ws.store.document_chunks(kb.kb_id, d.doc_id)) != d.chunks:
                    bad.append(f"search showed half of {d.source}")

        events = [a for a in acks if a.get("ev") not in ("ready", "done")]
        if role == "ingest":
            for a in events:
                res = hits(code_word(a["i"]))
                whole(res)
                if not res:
                    bad.append(f"acknowledged ingest of document {a['i']} not found")
        elif role in ("delete", "compact"):
            for a in events:
                res = [h for h in hits(code_word(a["i"])) if h.chunk.source == f"d{a['i']}.md"]
                if res:
                    bad.append(f"deleted d{a['i']}.md found again")
        elif role == "reingest":
            for a in events:
                new = [h for h in hits(code_word(a["i"], 2)) if h.chunk.source == f"d{a['i']}.md"]
                old = [h for h in hits(code_word(a["i"], 1)) if h.chunk.source == f"d{a['i']}.md"]
                whole(new)
                if not new or old:
                    bad.append(f"re-ingest of d{a['i']}.md: new version found {bool(new)}, old found {bool(old)}")
        elif role == "reembed" and ws.appdb.get_meta("embedding_model") == "an-earlier-model":
            pass  # killed before the re-embedding began: the folder is as the model change left it
        elif role == "reembed":
            for i in range(n_docs):  # every document stays findable by its keywords meanwhile
                if not hits(code_word(i)):
                    bad.append(f"d{i}.md not findable during the re-embedding")
            if events:  # finished: every document indexed again, with vectors
                for d in listed.values():
                    if d.status != "indexed":
                        bad.append(f"{d.source} is {d.status} after the re-embedding finished")
                ids = [c.chunk_id for d in listed.values() for c in ws.store.document_chunks(kb.kb_id, d.doc_id)]
                if ids and not (abs(ws.store.vectors_for(ids)).sum(axis=1) > 0).all():
                    bad.append("chunks without vectors after the re-embedding finished")
        elif role == "feedback":
            for a in events:
                r = ws.db.query_one("SELECT rating FROM feedback WHERE query_id=?", (a["qid"],))
                if r is None or r[0] != a["rating"]:
                    bad.append(f"acknowledged rating of {a['qid']} missing")
        elif role == "conversation":
            convs = ws.conversations(caller=op)
            for a in events:
                msgs = convs.messages(a["thread"])
                if len(msgs) <= a["n"] or msgs[a["n"]]["content"] != a["content"]:
                    bad.append(f"acknowledged message {a['content']} missing")
        elif role == "api_key":
            for a in events:
                if ws.api_keys.authenticate(a["key"]) is None:
                    bad.append("acknowledged API key does not authenticate")
        elif role == "cache":
            for a in events:
                ans = ws.ask([KB], a["question"], caller=op)
                if any(c.source == f"d{a['i']}.md" for c in ans.citations):
                    bad.append(f"answer citing deleted d{a['i']}.md served (cached={ans.cached})")
        elif role == "migrate":
            if kb.owners != ["ann"]:
                bad.append(f"the old folder's knowledge base has owners {kb.owners}, not its users ['ann']")
            if len(listed) != n_docs or any(d.status != "indexed" for d in listed.values()):
                bad.append(f"{len(listed)} of {n_docs} documents listed after the migration")
            for i in range(n_docs):
                if not hits(code_word(i)):
                    bad.append(f"d{i}.md not found after the migration")
            rated = ws.db.query_one("SELECT COUNT(*) FROM feedback WHERE comment LIKE 'old rating %'")[0]
            if rated != 3:
                bad.append(f"{rated} of the old folder's 3 ratings after the migration")
            for table, cols in NEWER_COLUMNS.items():
                if missing := set(cols) - ws.db.columns(table):
                    bad.append(f"{table} lacks {sorted(missing)} after the migration")
        if ws.store.name == "embedded" and (ws.store._snap_dir / "CURRENT").exists():
            from rag_core.stores import snapshot

            if snapshot.load(ws.store._snap_dir) is None:
                bad.append("the snapshot CURRENT names does not load")
        if not (role == "reembed" and ws.appdb.get_meta("embedding_model") == "an-earlier-model"):
            for i in range(n_docs):  # whatever search shows is whole
                whole(hits(code_word(i)))
    finally:
        ws.close()
    return bad, reopen_s


def run_path(role: str, runs: int, root: Path, seed: int = 0, n_docs: int = 12, max_delay: float = 3.0) -> dict:
    rng = random.Random(f"{seed}-{role}")
    out = {"path": role, "runs": 0, "killed_mid_run": 0, "violations": [], "reopen_s": [], "rerun_ok": 0}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for r in range(runs):
        work = root / f"{role}-{r}"
        n_docs = DOCS.get(role, n_docs)
        data, docs = prepare(work, role, n_docs)
        log = work / "acks.jsonl"
        count = OPS.get(role, n_docs)
        points = FAULTS.get(role)
        fault = points[r % len(points)] if points else None
        proc = subprocess.Popen([sys.executable, __file__, "--child", role, "--data", str(data), "--docs", str(docs),
                                 "--log", str(log), "--count", str(count)], env={**env, "RAG_FAULT": fault or ""},
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while not (log.exists() and '"ready"' in log.read_text()) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        if fault:  # it kills itself there (or finishes, if the point is never reached)
            proc.wait(timeout=300)
            if proc.returncode == -signal.SIGKILL:
                out["killed_mid_run"] += 1
                out.setdefault("fault_points_hit", []).append(fault)
        else:
            time.sleep(rng.uniform(0.0, DELAY.get(role, max_delay)))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                out["killed_mid_run"] += 1
        proc.wait()
        acks = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        bad, reopen_s = check(role, data, acks, n_docs)
        # running the operation again completes, and the folder still holds
        again = subprocess.run([sys.executable, __file__, "--child", role, "--data", str(data), "--docs", str(docs),
                                "--log", str(work / "again.jsonl"), "--count", str(min(count, 50))], env=env, cwd=ROOT,
                               capture_output=True, text=True, timeout=600)
        if again.returncode == 0:
            out["rerun_ok"] += 1
            again_acks = [json.loads(x) for x in (work / "again.jsonl").read_text().splitlines() if x.strip()]
            more, _ = check(role, data, again_acks, n_docs)
            bad += [f"after re-run: {b}" for b in more]
        else:
            bad.append(f"re-run failed: {again.stderr.strip().splitlines()[-1:]}")
        out["runs"] += 1
        out["violations"] += [f"run {r} ({len(acks) - 1} acknowledged): {b}" for b in bad]
        out["reopen_s"].append(round(reopen_s, 2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--data")
    ap.add_argument("--docs")
    ap.add_argument("--log")
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "crash_anywhere.json"))
    args = ap.parse_args()
    if args.child:
        child(args.child, Path(args.data), Path(args.docs), Path(args.log), args.count)
        return 0
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="crash-anywhere-"))
    results = [run_path(p, args.runs, root) for p in args.paths.split(",")]
    summary = {r["path"]: {"runs": r["runs"], "killed_mid_run": r["killed_mid_run"], "violations": len(r["violations"]),
                           "reopen_s_max": max(r["reopen_s"]), "rerun_ok": r["rerun_ok"]} for r in results}
    print(json.dumps(summary, indent=1))
    Path(args.out).write_text(json.dumps({"summary": summary, "paths": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
