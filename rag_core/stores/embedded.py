"""The embedded store: SQLite for durability, in-memory BM25 + exact vectors for speed.

Chosen by measurement (benchmarks/store_latency.py, results in benchmarks/results/): SQLite
gives ACID per-document writes, incremental add/delete and one file on disk with no server.
Each chunk row holds its text, its vector and its analysed terms, so a document's keywords
and vectors commit together or not at all. On open, `MemIndex` is built from those rows;
afterwards it is synced incrementally (a generation counter tells when another process
wrote), so no index is rebuilt per query.

Other processes learn of deletes and late vectors from two logs, `tombstones` and
`vector_updates`, replayed by sequence number. Each open store records in `store_readers`
how far it has replayed them; once `prune_after` rows have gathered, the writer deletes the
rows every live reader has applied (readers not heard of for `reader_ttl_s` do not hold
it back). A reader that finds rows it had not applied already pruned (`store_meta`
'pruned_tomb' / 'pruned_vec') reloads its index from the chunk rows, which are the truth;
the logs only make syncing incremental.

Why not SQLite FTS5 for keywords (the first version): at 100k chunks its BM25 took 87 ms
p50 and 225 ms with a knowledge-base filter (FTS5 scores every match before the join can
filter), and its k1/b are fixed. rank-bm25 scores every document in Python (609 ms) and
must be rebuilt on change. The postings index here answers in a few ms, filters with the
same numpy masks as the vector side, and takes adds and deletes in place.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
import uuid

import numpy as np

from ..db import Database
from ..models import Chunk, ScoredChunk, SearchFilters
from ..process import trim_heap
from ..text.fusion import fuse_ranked
from ..text.analysis import chunk_terms, query_terms
from . import snapshot
from .memindex import MemIndex, encode_terms
from .rwlock import RWLock
from .vector_index import Cancelled, SEAL_ROWS, VectorIndex

SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL,
    kb_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    title TEXT NOT NULL,
    section TEXT NOT NULL,
    source TEXT NOT NULL,
    page_start INTEGER, page_end INTEGER,
    char_start INTEGER, char_end INTEGER,
    line_start INTEGER, line_end INTEGER,
    chunk_type TEXT NOT NULL,
    tenant TEXT,
    acl_sig INTEGER NOT NULL,
    vector BLOB NOT NULL,
    terms BLOB NOT NULL,
    doc_day INTEGER NOT NULL DEFAULT 0,
    language TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(kb_id, doc_id);
CREATE TABLE IF NOT EXISTS vocab (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
-- The distinct (users, groups) stamps chunks were ingested with (returned with a chunk; no
-- search filters on them: access is per knowledge base, rag_core/access.py).
CREATE TABLE IF NOT EXISTS acl_sigs (
    id INTEGER PRIMARY KEY,
    users TEXT NOT NULL,
    groups TEXT NOT NULL,
    UNIQUE(users, groups)
);
-- Deleted row ids, so other processes can drop them from their in-memory index.
CREATE TABLE IF NOT EXISTS tombstones (seq INTEGER PRIMARY KEY AUTOINCREMENT, row_id INTEGER NOT NULL);
-- Rows whose vector arrived after the row (searchable by keyword first): other processes
-- reload those vectors on their next sync.
CREATE TABLE IF NOT EXISTS vector_updates (seq INTEGER PRIMARY KEY AUTOINCREMENT, row_id INTEGER NOT NULL);
-- How far each open store has replayed the two logs above (pruning keeps what one still needs).
CREATE TABLE IF NOT EXISTS store_readers (
    reader TEXT PRIMARY KEY,
    tomb INTEGER NOT NULL,
    vec INTEGER NOT NULL,
    seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO store_meta VALUES ('generation', '0');
INSERT OR IGNORE INTO store_meta VALUES ('pruned_tomb', '0');
INSERT OR IGNORE INTO store_meta VALUES ('pruned_vec', '0');
-- Bumped when a document's date changes: other processes then re-read the date column.
INSERT OR IGNORE INTO store_meta VALUES ('dates', '0');
"""

_CHUNK_COLS = ", ".join(
    f"c.{col}"
    for col in (
        "id chunk_id doc_id kb_id ordinal text title section source page_start page_end"
        " char_start char_end line_start line_end chunk_type tenant acl_sig doc_day language"
    ).split()
)


def _lap(since: float) -> float:
    return (time.perf_counter() - since) * 1000


class EmbeddedStore:
    name = "embedded"
    prune_after = 2000  # log rows gathered before the writer prunes what every reader applied
    reader_ttl_s = 600.0  # a reader silent this long no longer holds pruning back
    # Below this many rows the index loads from SQLite in well under a second (10k: 0.15 s):
    # no snapshot is written (benchmarks/results/scale_*.json).
    snapshot_min = SEAL_ROWS

    def __init__(self, db: Database):
        self.db = db
        db.executescript(SCHEMA)
        # stores from before dates, and before languages ("": English, as they were indexed)
        db.add_columns("chunks", {"doc_day": "INTEGER NOT NULL DEFAULT 0", "language": "TEXT NOT NULL DEFAULT ''"})
        with db.transaction() as c:  # a snapshot belongs to this database, not a recreated one
            c.execute("INSERT OR IGNORE INTO store_meta VALUES ('store_id', ?)", (uuid.uuid4().hex,))
        self._store_id = db.query_one("SELECT value FROM store_meta WHERE key='store_id'")[0]
        self._snap_dir = db.path.with_name(db.path.name + "-index")
        self._dates = -1
        self._mi = MemIndex()
        self._vocab: dict[str, int] = {}  # filled on demand (a million-term vocabulary is not loaded)
        self._generation = -1
        # searches share the index (read); a sync that changes or swaps it is exclusive (write)
        self._sync_lock = RWLock()
        self._reader = uuid.uuid4().hex
        self.reloads = 0  # full reloads after falling behind the pruned logs (tests read it)
        self.snapshot_loaded = False  # the last (re)load came from a snapshot (tests read it)
        # graph builds and snapshot writes run on one background thread, never under the lock
        self._maint_lock = threading.Lock()
        self._maint_thread: threading.Thread | None = None
        self._maint_again = False
        self._saved: tuple[int, int, int] | None = None  # (index identity, main rows, compactions) last written
        self._saved_at = 0.0  # monotonic time the last snapshot was finished
        self._save_cost = 0.0  # seconds it took
        self._closed = False
        self._closing = False  # close() has begun: a compaction being built gives up
        self.longest_merge_build_ms = 0.0  # benchmarks read it
        self.longest_compaction_build_ms = 0.0
        self._sync()

    # ---- sync of the in-memory index ------------------------------------------------
    def _read_generation(self) -> int:
        return int(self.db.query_one("SELECT value FROM store_meta WHERE key='generation'")[0])

    def _meta(self, key: str) -> int:
        return int(self.db.query_one("SELECT value FROM store_meta WHERE key=?", (key,))[0])

    def _sync(self) -> None:
        """Bring the in-memory index up to date with the database (cheap when unchanged:
        one primary-key read)."""
        if self._read_generation() == self._generation:
            return
        # Reads go through a pooled read connection, not the write connection: waiting here
        # for another thread's write transaction (db.lock) while holding the index's write
        # lock held every search off for as long as that transaction ran (a 10k-chunk delete
        # at 1M rows: ~630 ms; benchmarks/compaction.py).
        with self._sync_lock.write(), self.db.reading() as conn:
            gen = self._read_generation()
            if gen == self._generation:
                return
            mi = self._mi
            pruned_tomb, pruned_vec = self._meta("pruned_tomb"), self._meta("pruned_vec")
            if mi.n and (mi.last_tomb < pruned_tomb or mi.last_vec < pruned_vec):
                # rows this index had not applied are gone from the logs: reopen (snapshot + catch-up)
                self._mi = mi = MemIndex()
                self.reloads += 1
            if mi.n == 0 and mi.max_row == 0:
                self._mi = mi = self._open_index(conn, pruned_tomb, pruned_vec)
            tomb = self.db.query("SELECT seq, row_id FROM tombstones WHERE seq > ? ORDER BY seq", (mi.last_tomb,))
            if tomb:
                mi.kill([t["row_id"] for t in tomb])
                mi.last_tomb = tomb[-1]["seq"]
            upd = self.db.query("SELECT seq, row_id FROM vector_updates WHERE seq > ? ORDER BY seq", (mi.last_vec,))
            if upd:
                self._load_vectors(mi, [u["row_id"] for u in upd if mi.position(u["row_id"]) is not None])
                mi.last_vec = upd[-1]["seq"]
            dates = self._meta("dates")
            if dates != self._dates and mi.n:
                # A date edit is rare and touches whole documents: re-read the one column.
                rows = self.db.query("SELECT id, doc_day FROM chunks WHERE id <= ?", (mi.max_row,))
                mi.set_days([r[0] for r in rows], [r[1] for r in rows])
            self._dates = dates
            cur = conn.execute(
                "SELECT id, kb_id, tenant, acl_sig, vector, terms, doc_day FROM chunks WHERE id > ? ORDER BY id",
                (mi.max_row,),
            )
            while batch := cur.fetchmany(5000):
                mi.append([tuple(r) for r in batch])
            self._generation = gen
        self._report_progress(mi)
        self._kick()

    def _load_vectors(self, mi: MemIndex, row_ids: list[int]) -> None:
        """Vectors stored after their rows were indexed (or not in a snapshot), by row id."""
        for start in range(0, len(row_ids), 500):
            part = row_ids[start : start + 500]
            rows = self.db.query(f"SELECT id, vector FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)
            have = [r for r in rows if len(r[1])]
            if have:
                mi.set_vectors([r[0] for r in have], np.stack([np.frombuffer(r[1], dtype=np.float32) for r in have]))
            if len(have) < len(rows):  # vectors cleared for re-embedding (clear_vectors)
                mi.clear_vectors([r[0] for r in rows if not len(r[1])])

    def _open_index(self, conn, pruned_tomb: int, pruned_vec: int) -> MemIndex:
        """The index at open: the snapshot and what happened since, or (no usable snapshot)
        every chunk row, streamed in batches. Called under the write lock."""
        snap = snapshot.load(self._snap_dir)
        if snap is not None and snap[1].get("store_id") == self._store_id:
            mi, m = snap
            mi.background = True
            self.snapshot_loaded = True
            self._saved = (id(mi), mi.main_n, mi.compactions)
            if m["saved_end"] < mi.n:  # vectors after the last persisted segment
                lo = int(mi.row_ids[m["saved_end"]])
                cur = conn.execute(
                    "SELECT id, vector FROM chunks WHERE id >= ? AND id <= ? ORDER BY id", (lo, m["max_row"]))
                block = np.zeros((mi.n - m["saved_end"], mi.dim), dtype=np.float32)
                while batch := cur.fetchmany(20000):
                    pos = mi.positions([r[0] for r in batch]) - m["saved_end"]
                    for p, r in zip(pos.tolist(), batch):
                        if p >= 0 and r[1]:
                            block[p] = np.frombuffer(r[1], dtype=np.float32)
                mi.vecs.append_block(block) if mi.dim else mi.vecs.append([None] * len(block))
            mi.last_tomb, mi.last_vec = m["last_tomb"], m["last_vec"]
            if mi.last_tomb < pruned_tomb:
                # deletes since the snapshot are no longer in the log: the live ids say which
                live = np.fromiter((r[0] for r in conn.execute(
                    "SELECT id FROM chunks WHERE id <= ?", (m["max_row"],))), dtype=np.int64)
                mine = mi.row_ids[: mi.n][mi.alive[: mi.n]]
                mi.kill(mine[~np.isin(mine, live)].tolist())
                mi.last_tomb = pruned_tomb
            if mi.last_vec < pruned_vec:
                waiting = mi.row_ids[: mi.n][mi.alive[: mi.n] & ~mi.has_vec[: mi.n]]
                self._load_vectors(mi, waiting.tolist())
                mi.last_vec = pruned_vec
            self._dates = m["dates"]
            return mi
        mi = MemIndex()
        mi.background = True
        self.snapshot_loaded = False
        mi.last_tomb, mi.last_vec = pruned_tomb, pruned_vec  # the rows read below reflect everything pruned
        self._dates = self._meta("dates")
        cur = conn.execute(
            "SELECT id, kb_id, tenant, acl_sig, vector, terms, doc_day FROM chunks ORDER BY id")
        mi.bulk_load(iter(lambda: [tuple(r) for r in cur.fetchmany(20000)], []))
        return mi

    # ---- maintenance: graphs and snapshots, off the request path ---------------------
    def _kick(self) -> None:
        """Start the maintenance thread when there is work (a graph to build, a snapshot to write)."""
        if self._closed or not self._has_work():
            return
        with self._maint_lock:
            if self._maint_thread is not None:
                self._maint_again = True
                return
            self._maint_thread = threading.Thread(target=self._maintain_loop, name="gw-index-maintenance", daemon=True)
            self._maint_thread.start()

    def _has_work(self) -> bool:
        mi = self._mi
        return mi.compact_wanted or mi.merge_wanted or mi.vecs.next_job() is not None or self._snapshot_due(mi)

    def _snapshot_due(self, mi: MemIndex, final: bool = False) -> bool:
        """A snapshot is rewritten (≈2 GB at 1M chunks, ~1 GB of it the keyword arrays that
        change with every merge) once the main segment has grown 10% past the last one, or
        was compacted — and, during a long ingest, no sooner than ten times the last write's
        duration after it, so writing snapshots costs an ingest at most ~10% of its time
        (measured at 1M: the bulk ingest took 355 s with a rewrite at every 10% of growth,
        333 s with this spacing). Rows after the
        snapshot cost a cold start their replay from SQLite. Closing writes whatever changed."""
        if mi.main_n < self.snapshot_min:
            return False
        if self._saved is None:
            return True
        ident, rows, compactions = self._saved
        if ident != id(mi) or compactions != mi.compactions:
            return True
        if final:
            return mi.main_n != rows
        return mi.main_n >= rows * 1.1 and time.monotonic() - self._saved_at >= 10 * self._save_cost

    def _maintain_loop(self) -> None:
        while True:
            try:
                self.maintain()
                trim_heap()
            except Exception:  # noqa: BLE001 - the index still serves (exactly); the next write retries
                import logging

                logging.getLogger(__name__).exception("index maintenance failed")
            with self._maint_lock:
                if not self._maint_again or self._closed:
                    self._maint_thread = None
                    return
                self._maint_again = False

    def maintain(self, final: bool = False) -> None:
        """Compact (a third of the rows dead) or merge the keyword delta, build pending HNSW
        graphs — each computed outside the lock and swapped in under it — then write a
        snapshot when the main segment has changed. Runs on the maintenance thread; tests and
        benchmarks may call it directly."""
        for _ in range(3):  # a plan goes stale only when an inline merge lands meanwhile
            with self._sync_lock.read():
                mi = self._mi
                plan = mi.compaction_plan() if mi.compact_wanted and not self._closing else None
            if plan is None:
                break
            clock = time.perf_counter()
            try:  # minutes at 1M chunks (graphs): searches and writes go on
                built = MemIndex.build_compaction(plan, cancelled=lambda: self._closing)
            except Cancelled:
                mi.abandon_compaction()
                break  # closing: the snapshot keeps the tombstones; the next open compacts
            except BaseException:
                mi.abandon_compaction()
                raise
            self.longest_compaction_build_ms = max(self.longest_compaction_build_ms, _lap(clock))
            with self._sync_lock.write():
                if self._mi is mi and mi.install_compaction(plan, built):
                    break
        with self._sync_lock.read():
            mi = self._mi
            plan = mi.merge_plan() if mi.merge_wanted else None
        if plan is not None:
            clock = time.perf_counter()
            built = MemIndex.build_merge(plan)  # seconds at 1M chunks: searches and writes go on
            self.longest_merge_build_ms = max(self.longest_merge_build_ms, _lap(clock))
            with self._sync_lock.write():
                if self._mi is mi:
                    mi.install_merge(plan, built)
        while True:
            with self._sync_lock.read():
                mi = self._mi
                job = mi.vecs.next_job()
            if job is None:
                break
            VectorIndex.run(job)
            with self._sync_lock.write():
                if self._mi is mi:
                    mi.vecs.install(job)
        with self._sync_lock.read():
            mi = self._mi
            if not self._snapshot_due(mi, final) or mi.vecs.next_job() is not None:
                return
            key = (id(mi), mi.main_n, mi.compactions)
            view = snapshot.capture(mi, {"last_tomb": mi.last_tomb, "last_vec": mi.last_vec, "dates": self._dates,
                                         "store_id": self._store_id})
        t0 = time.monotonic()
        snapshot.write(view, self._snap_dir)
        self._saved_at = time.monotonic()
        self._save_cost = self._saved_at - t0
        self._saved = key

    def wait_maintenance(self, timeout: float | None = None) -> None:
        """Wait until the maintenance thread is idle."""
        while (t := self._maint_thread) is not None:
            t.join(timeout)
            if timeout is not None:
                return

    def _report_progress(self, mi: MemIndex) -> None:
        """Record how far this store has replayed the logs (what pruning must keep). Never
        waits: while another thread or process holds the write lock the report is skipped,
        which only makes pruning keep more (the next sync reports again)."""
        if not self.db.lock.acquire(blocking=False):
            return
        try:
            conn = self.db.conn
            if conn.in_transaction:
                return
            conn.execute("PRAGMA busy_timeout=0")
            try:
                conn.execute(
                    "INSERT INTO store_readers(reader, tomb, vec, seen) VALUES (?,?,?,?) ON CONFLICT(reader)"
                    " DO UPDATE SET tomb=excluded.tomb, vec=excluded.vec, seen=excluded.seen",
                    (self._reader, mi.last_tomb, mi.last_vec, time.time()),
                )
            except sqlite3.OperationalError:  # busy or locked
                pass
            finally:
                conn.execute("PRAGMA busy_timeout=30000")
        finally:
            self.db.lock.release()

    def _prune_logs(self) -> None:
        """Delete log rows every live reader has applied, once `prune_after` have gathered.
        Runs after this store's own sync, so its row is current."""
        with self.db.lock:
            newest = self.db.query_one(
                "SELECT (SELECT COALESCE(MAX(seq), 0) FROM tombstones), (SELECT COALESCE(MAX(seq), 0) FROM vector_updates)")
            pruned_t, pruned_v = self._meta("pruned_tomb"), self._meta("pruned_vec")
            if newest[0] - pruned_t + newest[1] - pruned_v < self.prune_after:
                return
            with self.db.transaction() as c:
                c.execute("DELETE FROM store_readers WHERE seen < ?", (time.time() - self.reader_ttl_s,))
                tomb, vec = c.execute("SELECT MIN(tomb), MIN(vec) FROM store_readers").fetchone()
                tomb, vec = min(tomb or 0, newest[0]), min(vec or 0, newest[1])
                if tomb > pruned_t:
                    c.execute("DELETE FROM tombstones WHERE seq <= ?", (tomb,))
                    c.execute("UPDATE store_meta SET value=? WHERE key='pruned_tomb'", (str(tomb),))
                if vec > pruned_v:
                    c.execute("DELETE FROM vector_updates WHERE seq <= ?", (vec,))
                    c.execute("UPDATE store_meta SET value=? WHERE key='pruned_vec'", (str(vec),))

    @staticmethod
    def _bump(c) -> None:
        c.execute("UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")

    # ---- writes ----------------------------------------------------------------------
    def _acl_sig(self, c, users: list[str], groups: list[str]) -> int:
        u, g = json.dumps(sorted(set(users))), json.dumps(sorted(set(groups)))
        c.execute("INSERT OR IGNORE INTO acl_sigs(users, groups) VALUES (?,?)", (u, g))
        return c.execute("SELECT id FROM acl_sigs WHERE users=? AND groups=?", (u, g)).fetchone()[0]

    def _term_ids(self, c, terms: set[str]) -> dict[str, int]:
        """Vocabulary ids, creating new ones inside the caller's write transaction."""
        missing = [t for t in terms if t not in self._vocab]
        if missing:
            c.executemany("INSERT OR IGNORE INTO vocab(term) VALUES (?)", [(t,) for t in missing])
            for start in range(0, len(missing), 500):
                part = missing[start : start + 500]
                for r in c.execute(f"SELECT id, term FROM vocab WHERE term IN ({','.join('?' * len(part))})", part):
                    self._vocab[r[1]] = r[0]
        return self._vocab

    def _lookup_terms(self, terms: list[str]) -> dict[str, int]:
        """Vocabulary ids of these terms (cached; the misses in one indexed read). Terms no
        chunk contains are left out."""
        missing = [t for t in set(terms) if t not in self._vocab]
        for start in range(0, len(missing), 500):
            part = missing[start : start + 500]
            for r in self.db.query(f"SELECT id, term FROM vocab WHERE term IN ({','.join('?' * len(part))})", part):
                self._vocab[r[1]] = r[0]
        return {t: self._vocab[t] for t in terms if t in self._vocab}

    def _known_terms(self, terms: list[str]) -> list[int]:
        ids = self._lookup_terms(terms)
        return [ids[t] for t in terms if t in ids]

    def _check_vectors(self, vectors: np.ndarray, n: int) -> np.ndarray:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != n:
            raise ValueError("one vector per chunk")
        if self._mi.dim and vectors.shape[1] != self._mi.dim:
            raise ValueError(
                f"vector size {vectors.shape[1]} does not match this store's {self._mi.dim}: "
                "the data folder was indexed with another embedding model"
            )
        return vectors

    def add_chunks(self, chunks: list[Chunk], vectors: np.ndarray | None) -> None:
        """All chunks of a document in one transaction. `vectors=None`: keyword-searchable now,
        vectors later through `set_vectors` (vector search skips them until then)."""
        if not chunks:
            return
        if vectors is not None:
            vectors = self._check_vectors(vectors, len(chunks))
            blobs = [v.tobytes() for v in vectors]
        else:
            blobs = [b""] * len(chunks)
        self._write_rows(chunks, blobs)

    def reanalyse_document(self, kb_id: str, doc_id: str, language: str) -> int:
        """Re-index a document's chunks as `language` (an owner's override; the upgrade of a
        folder from before languages). Old rows out and new rows in within one transaction,
        vectors kept as stored, so the document is never missing nor half re-indexed, and
        every process's index picks the change up from the usual logs."""
        rows = self.db.query("SELECT id, vector FROM chunks WHERE kb_id=? AND doc_id=? ORDER BY ordinal", (kb_id, doc_id))
        if not rows:
            return 0
        by_row = self._chunks_by_rowid([r["id"] for r in rows])
        chunks = [by_row[r["id"]] for r in rows]
        for ch in chunks:
            ch.language = language
        self._write_rows(chunks, [bytes(r["vector"]) for r in rows], replace=(kb_id, doc_id))
        return len(chunks)

    def _write_rows(self, chunks: list[Chunk], blobs: list[bytes], replace: tuple[str, str] | None = None) -> None:
        counts = []
        for ch in chunks:
            tc: dict[str, int] = {}
            for t in chunk_terms(ch):
                tc[t] = tc.get(t, 0) + 1
            counts.append(tc)
        try:
            with self.db.transaction() as c:
                if replace is not None:
                    old = [r[0] for r in c.execute("SELECT id FROM chunks WHERE kb_id=? AND doc_id=?", replace)]
                    c.executemany("DELETE FROM chunks WHERE id=?", [(i,) for i in old])
                    c.executemany("INSERT INTO tombstones(row_id) VALUES (?)", [(i,) for i in old])
                ids = self._term_ids(c, {t for tc in counts for t in tc})
                sig_cache: dict[tuple, int] = {}
                for ch, blob, tc in zip(chunks, blobs, counts):
                    key = (tuple(ch.acl_users), tuple(ch.acl_groups))
                    if key not in sig_cache:
                        sig_cache[key] = self._acl_sig(c, ch.acl_users, ch.acl_groups)
                    c.execute(
                        "INSERT INTO chunks (chunk_id, doc_id, kb_id, ordinal, text, title, section, source,"
                        " page_start, page_end, char_start, char_end, line_start, line_end, chunk_type, tenant,"
                        " acl_sig, vector, terms, doc_day, language) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (
                            ch.chunk_id, ch.doc_id, ch.kb_id, ch.ordinal, ch.text, ch.title, ch.section, ch.source,
                            ch.page_start, ch.page_end, ch.char_start, ch.char_end, ch.line_start, ch.line_end,
                            ch.chunk_type, ch.tenant, sig_cache[key], blob,
                            encode_terms([ids[t] for t in tc], list(tc.values())), int(ch.doc_day), ch.language or "",
                        ),
                    )
                self._bump(c)
        except BaseException:
            # Ids handed out inside the rolled-back transaction do not exist: forget them all
            # and reload the vocabulary on the next sync.
            self._vocab.clear()
            self._generation = -1
            raise
        self._sync()
        if replace is not None:
            self._prune_logs()

    def set_vectors(self, chunk_ids: list[str], vectors: np.ndarray) -> int:
        """Give keyword-only chunks their vectors (one transaction); returns how many were set.
        Chunks deleted meanwhile are skipped."""
        if not chunk_ids:
            return 0
        vectors = self._check_vectors(vectors, len(chunk_ids))
        with self.db.transaction() as c:
            row_of: dict[str, int] = {}
            for start in range(0, len(chunk_ids), 500):
                part = chunk_ids[start : start + 500]
                row_of.update((cid, rid) for rid, cid in c.execute(
                    f"SELECT id, chunk_id FROM chunks WHERE chunk_id IN ({','.join('?' * len(part))})", part))
            updates = [(vec.tobytes(), row_of[cid]) for cid, vec in zip(chunk_ids, vectors) if cid in row_of]
            c.executemany("UPDATE chunks SET vector=? WHERE id=?", updates)
            done = [rid for _, rid in updates]
            c.executemany("INSERT INTO vector_updates(row_id) VALUES (?)", [(r,) for r in done])
            self._bump(c)
        self._sync()
        self._prune_logs()
        return len(done)

    def clear_vectors(self, kb_id: str, doc_id: str) -> int:
        """A document's vectors dropped (re-embedding with another model): it stays found by
        its keywords until `set_vectors` gives it new ones. Other processes follow through
        the vector-updates log."""
        with self.db.transaction() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM chunks WHERE kb_id=? AND doc_id=?", (kb_id, doc_id))]
            if not ids:
                return 0
            c.execute("UPDATE chunks SET vector=x'' WHERE kb_id=? AND doc_id=?", (kb_id, doc_id))
            c.executemany("INSERT INTO vector_updates(row_id) VALUES (?)", [(i,) for i in ids])
            self._bump(c)
        self._sync()
        self._prune_logs()
        return len(ids)

    def vector_dim(self) -> int:
        """Size of the stored vectors (0: none stored yet)."""
        self._sync()
        return int(self._mi.dim or 0)

    def set_document_date(self, kb_id: str, doc_id: str, day: int) -> int:
        """A document's date changed (an owner edited it): every chunk of it takes the new day."""
        with self.db.transaction() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM chunks WHERE kb_id=? AND doc_id=?", (kb_id, doc_id))]
            if not ids:
                return 0
            c.execute("UPDATE chunks SET doc_day=? WHERE kb_id=? AND doc_id=?", (int(day), kb_id, doc_id))
            before = int(c.execute("SELECT value FROM store_meta WHERE key='dates'").fetchone()[0])
            c.execute("UPDATE store_meta SET value=? WHERE key='dates'", (str(before + 1),))
            self._bump(c)
        with self._sync_lock.write():
            # Our own edit applied here directly: when this index was current up to it, no
            # re-read of the whole date column (a backfill edits every document in turn).
            if self._dates == before:
                self._mi.set_days(ids, [int(day)] * len(ids))
                self._dates = before + 1
        self._sync()
        return len(ids)

    def _delete_where(self, where: str, params: tuple) -> int:
        with self.db.transaction() as c:
            ids = [r[0] for r in c.execute(f"SELECT id FROM chunks WHERE {where}", params)]
            if ids:
                for start in range(0, len(ids), 500):
                    part = ids[start : start + 500]
                    c.execute(f"DELETE FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)
                c.executemany("INSERT INTO tombstones(row_id) VALUES (?)", [(i,) for i in ids])
                self._bump(c)
        self._sync()
        if ids:
            self._prune_logs()
        return len(ids)

    def delete_document(self, kb_id: str, doc_id: str) -> int:
        return self._delete_where("kb_id = ? AND doc_id = ?", (kb_id, doc_id))

    def delete_kb(self, kb_id: str) -> int:
        return self._delete_where("kb_id = ?", (kb_id,))

    # ---- filters ---------------------------------------------------------------------
    def _mask(self, mi: MemIndex, f: SearchFilters) -> np.ndarray:
        """kb / tenant / document filters (the ones the access policy relies on) as a mask."""
        m = mi.alive[: mi.n].copy()
        if f.kb_ids is not None:
            m &= np.isin(mi.kb[: mi.n], [mi.codes.get(k, -1) for k in f.kb_ids])
        if f.tenant is not None:
            m &= mi.tenant[: mi.n] == mi.codes.get(f.tenant, -1)
        if f.doc_ids is not None:
            rows = self.db.query(
                f"SELECT id FROM chunks WHERE doc_id IN ({','.join('?' * len(f.doc_ids))})", list(f.doc_ids)
            ) if f.doc_ids else []
            allowed = np.zeros(mi.n, dtype=bool)
            pos = mi.positions([r[0] for r in rows])
            allowed[pos[pos >= 0]] = True
            m &= allowed
        if f.exclude_docs:  # drafts: few, each found by the (kb_id, doc_id) index
            rows = [r[0] for kb, doc in f.exclude_docs
                    for r in self.db.query("SELECT id FROM chunks WHERE kb_id=? AND doc_id=?", (kb, doc))]
            pos = mi.positions(rows)
            m[pos[pos >= 0]] = False
        days = f.day_range()
        if days is not None:
            d = mi.day[: mi.n]
            m &= (d >= days[0]) & (d <= days[1])
        return m

    @staticmethod
    def _top_positions(mi: MemIndex, scores: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
        scores = np.where(mask, scores, -np.inf)
        k = min(k, int(np.isfinite(scores).sum()))
        if k <= 0:
            return np.zeros(0, dtype=np.int64)
        top = np.argpartition(-scores, k - 1)[:k]
        return top[np.lexsort((mi.row_ids[top], -scores[top]))]  # ties: older row first

    def _materialise(self, row_ids: list[int], score_of: dict[int, dict[str, float]], main: str) -> list[ScoredChunk]:
        """Chunks for row ids (in order), scores keyed by row id."""
        chunks = self._chunks_by_rowid(row_ids)
        return [ScoredChunk(chunks[rid], score_of[rid][main], score_of[rid]) for rid in row_ids if rid in chunks]

    def _top(self, mi: MemIndex, scores: np.ndarray, mask: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top k as (row id, score) pairs, taken while the caller holds the sync lock."""
        top = self._top_positions(mi, scores, mask, k)
        return [(int(mi.row_ids[p]), float(scores[p])) for p in top]

    def hybrid_search(
        self,
        query: str,
        vector: np.ndarray,
        k: int,
        filters: SearchFilters,
        *,
        alpha: float = 0.5,
        fusion: str = "relative_score",
        overfetch: int = 4,
        timings: dict[str, float] | None = None,
    ) -> list[ScoredChunk]:
        """Native hybrid: both signals scored over every row in one pass, the top
        `overfetch × k` of each fused; every result carries both raw scores (as Weaviate's
        explain_score does), which the reranker uses."""
        self._sync()
        if k <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        terms = self._known_terms(query_terms(query, filters.languages))
        n = max(k * overfetch, k)
        t = {} if timings is None else timings
        clock = time.perf_counter()
        with self._sync_lock.read():  # one index throughout (a reload swaps it); searches run in parallel
            mi = self._mi
            if mi.n == 0:
                return []
            mask = self._mask(mi, filters)
            t["filter"] = _lap(clock)
            clock = time.perf_counter()
            kw = mi.bm25(terms) if terms else np.zeros(mi.n, dtype=np.float32)
            kw_top = self._top_positions(mi, kw, mask & (kw > 0), n) if alpha < 1 else np.zeros(0, dtype=np.int64)
            t["keyword"] = _lap(clock)
            clock = time.perf_counter()
            # alpha 0 ranks by keywords alone: no mat-vec (the results still carry each one's
            # cosine, computed for those few rows only)
            vec: dict[int, float] = {}
            if alpha > 0 and mi.dim:
                # a chunk without its vector yet takes part on the keyword side only
                vec_top, vec_scores = mi.vecs.search(q, n, mask & mi.has_vec[: mi.n])
                vec.update(zip(vec_top.tolist(), vec_scores.tolist()))
            else:
                vec_top = np.zeros(0, dtype=np.int64)
            # each keyword hit's cosine too (alpha 0: for those few rows only, no search)
            missing = [int(p) for p in kw_top if int(p) not in vec]
            if mi.dim and missing:
                vec.update(zip(missing, mi.vecs.dot(missing, q).tolist()))
            t["vector"] = _lap(clock)
            clock = time.perf_counter()
            fused = fuse_ranked(
                [(int(p), float(kw[p])) for p in kw_top], [(int(p), vec[int(p)]) for p in vec_top], alpha, fusion
            )[:k]
            score_of = {int(mi.row_ids[p]): {"keyword": float(kw[p]), "vector": float(vec.get(p, 0.0)), "fused": s}
                        for p, s in fused}
            rows = [int(mi.row_ids[p]) for p, _ in fused]
        t["fusion"] = _lap(clock)
        clock = time.perf_counter()
        out = self._materialise(rows, score_of, "fused")
        t["fetch"] = _lap(clock)
        return out

    # ---- reads -----------------------------------------------------------------------
    @staticmethod
    def _row_to_chunk(r) -> Chunk:
        return Chunk(
            chunk_id=r["chunk_id"], doc_id=r["doc_id"], kb_id=r["kb_id"], text=r["text"], title=r["title"],
            section=r["section"], source=r["source"], ordinal=r["ordinal"], page_start=r["page_start"],
            page_end=r["page_end"], char_start=r["char_start"], char_end=r["char_end"],
            line_start=r["line_start"], line_end=r["line_end"], chunk_type=r["chunk_type"], tenant=r["tenant"],
            doc_day=r["doc_day"], language=r["language"] or "",
        )

    def _chunks_by_rowid(self, row_ids: list[int]) -> dict[int, Chunk]:
        if not row_ids:
            return {}
        rows = self.db.query(
            f"SELECT {_CHUNK_COLS}, s.users AS acl_users, s.groups AS acl_groups FROM chunks"
            f" c JOIN acl_sigs s ON s.id = c.acl_sig WHERE c.id IN ({','.join('?' * len(row_ids))})",
            row_ids,
        )
        out = {}
        for r in rows:
            ch = self._row_to_chunk(r)
            ch.acl_users = json.loads(r["acl_users"])
            ch.acl_groups = json.loads(r["acl_groups"])
            out[r["id"]] = ch
        return out

    def keyword_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        self._sync()
        terms = self._known_terms(query_terms(query, filters.languages))
        if not terms or k <= 0:
            return []
        with self._sync_lock.read():  # a merge or reload on another thread must not swap arrays mid-query
            mi = self._mi
            scores = mi.bm25(terms)
            top = self._top(mi, scores, self._mask(mi, filters) & (scores > 0), k)
        return self._materialise([r for r, _ in top], {r: {"keyword": s} for r, s in top}, "keyword")

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        self._sync()
        if k <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._sync_lock.read():
            mi = self._mi
            if mi.n == 0 or not mi.dim:  # nothing embedded yet
                return []
            if q.shape[0] != mi.dim:
                raise ValueError(f"query vector size {q.shape[0]} does not match the store's {mi.dim}")
            pos, scores = mi.vecs.search(q, k, self._mask(mi, filters) & mi.has_vec[: mi.n])
            # ties: older row first, as the exact path orders them
            order = np.lexsort((mi.row_ids[pos], -scores))
            top = [(int(mi.row_ids[pos[i]]), float(scores[i])) for i in order]
        return self._materialise([r for r, _ in top], {r: {"vector": s} for r, s in top}, "vector")

    def idf(self, terms) -> dict[str, float]:
        """BM25 idf of analysed terms over the live rows (for the reranker's coverage feature)."""
        self._sync()
        mi = self._mi
        n = max(mi.alive_count, 1)
        out = {}
        ids = self._lookup_terms(list(terms))
        for t in terms:
            tid = ids.get(t)
            df = int(mi.df[tid]) if tid is not None and tid < len(mi.df) else 0
            out[t] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return out

    def get_chunks(self, chunk_ids: list[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        rows = self.db.query(
            f"SELECT id FROM chunks WHERE chunk_id IN ({','.join('?' * len(chunk_ids))})", list(chunk_ids)
        )
        by_row = self._chunks_by_rowid([r[0] for r in rows])
        by_id = {c.chunk_id: c for c in by_row.values()}
        return [by_id[c] for c in chunk_ids if c in by_id]

    def document_chunks(self, kb_id: str, doc_id: str) -> list[Chunk]:
        rows = self.db.query("SELECT id FROM chunks WHERE kb_id=? AND doc_id=? ORDER BY ordinal", (kb_id, doc_id))
        by_row = self._chunks_by_rowid([r[0] for r in rows])
        return [by_row[r[0]] for r in rows if r[0] in by_row]

    def vectors_for(self, chunk_ids: list[str]) -> np.ndarray:
        """Stored vectors (for MMR and for migrating to another store without re-embedding)."""
        self._sync()
        rows = self.db.query(
            f"SELECT chunk_id, id FROM chunks WHERE chunk_id IN ({','.join('?' * len(chunk_ids))})", list(chunk_ids)
        ) if chunk_ids else []
        rid = {r["chunk_id"]: r["id"] for r in rows}
        with self._sync_lock.read():
            mi = self._mi
            out = np.zeros((len(chunk_ids), mi.dim), dtype=np.float32)
            pos = mi.positions([rid.get(cid, -1) for cid in chunk_ids])
            have = np.flatnonzero(pos >= 0)
            if len(have) and mi.dim:
                out[have] = mi.vecs.get(pos[have])
        return out

    def count(self, kb_id: str | None = None) -> int:
        if kb_id is None:
            return int(self.db.query_one("SELECT COUNT(*) FROM chunks")[0])
        return int(self.db.query_one("SELECT COUNT(*) FROM chunks WHERE kb_id=?", (kb_id,))[0])

    def health(self) -> dict:
        """Database rows, in-memory vectors and keyword rows agree (a consistency check the
        tests and the settings page use)."""
        self._sync()
        rows = self.count()
        mi = self._mi
        live = int(mi.alive[: mi.n].sum())
        return {
            "store": self.name,
            "ok": rows == live == mi.alive_count,
            "chunks": rows,
            "vectors": live,
            "keyword_rows": mi.alive_count,
            "dim": mi.dim,
            "vector_index": self.vector_index_kind,
        }

    @property
    def vector_index_kind(self) -> str:
        segs = self._mi.vecs.segments
        if not segs:
            return "exact fp32 mat-vec"
        graphs = sum(s.graph is not None for s in segs)
        return f"{graphs} HNSW-SQ8 segment(s) over {segs[-1].end} rows + exact fp32 tail"

    def close(self) -> None:
        """Finish pending graphs and write the snapshot (the next open maps it), then stop
        holding log pruning back (the database itself belongs to the caller). A compaction
        being built gives up at its next segment: the snapshot keeps the tombstones and the
        next open compacts."""
        self._closing = True
        try:
            self.wait_maintenance()
            if self._mi.n >= self.snapshot_min:
                with self._sync_lock.write():
                    self._mi.merge()  # the snapshot holds the main segment: fold the delta in
            self.maintain(final=True)
        except Exception:  # noqa: BLE001 - a snapshot is a cache: the next open reads SQLite
            import logging

            logging.getLogger(__name__).exception("index snapshot at close failed")
        self._closed = True
        try:
            with self.db.lock:
                self.db.conn.execute("DELETE FROM store_readers WHERE reader=?", (self._reader,))
        except Exception:  # noqa: BLE001 - the database may be closed already
            pass
