"""The embedded store: SQLite FTS5 (BM25) for keywords + an exact numpy vector index.

Chosen by measurement (DESIGN.md §9 and benchmarks/store_engines.py): SQLite gives ACID
per-document writes, incremental add/delete, filters in SQL and one file on disk, with no
server. Vectors are stored in the same rows (so a document's text, keywords and vectors
commit together) and mirrored in memory as a growable float32 matrix with a tombstone mask,
synced incrementally from the database: other processes' writes are picked up by
comparing a generation counter, and no index is ever rebuilt per query.

Complexity at n chunks: keyword search is FTS5's posting-list walk (cost grows with the
query terms' document frequency); vector search is one O(n·d) mat-vec (~15 ms at 100k × 384);
filters are numpy masks over per-row codes (kb, tenant, ACL signature), so a filter never
turns into a scan of Python objects.
"""

from __future__ import annotations

import json
import re
import threading

import numpy as np

from ..db import Database
from ..models import Chunk, ScoredChunk, SearchFilters

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
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(kb_id, doc_id);
CREATE INDEX IF NOT EXISTS chunks_kb ON chunks(kb_id);
-- porter stemming + unicode61 with diacritics folded: "running"/"runs" meet, "café" = "cafe".
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    content, tokenize = 'porter unicode61 remove_diacritics 2'
);
-- ACL signatures: the distinct (users, groups) pairs. Chunks point to one, so an ACL filter
-- is "signature in allowed set", computed once per query over a handful of rows.
CREATE TABLE IF NOT EXISTS acl_sigs (
    id INTEGER PRIMARY KEY,
    users TEXT NOT NULL,
    groups TEXT NOT NULL,
    UNIQUE(users, groups)
);
-- Deleted row ids, so other processes can drop them from their in-memory vector index.
CREATE TABLE IF NOT EXISTS tombstones (seq INTEGER PRIMARY KEY AUTOINCREMENT, row_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO store_meta VALUES ('generation', '0');
"""

_TOKEN = re.compile(r"\w+", re.UNICODE)
# Dropped from keyword queries only (never from the index): they carry no evidence and
# make FTS5 walk the longest posting lists. A question made only of these keeps them.
STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have
    having he her here hers him his how i if in into is it its itself me more most my no nor not of
    off on once only or other our ours out over own same she should so some such than that the their
    theirs them then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours about above after again against
    all am any because before below between both during each few further just s t don now""".split()
)

_CHUNK_COLS = ", ".join(
    f"c.{col}"
    for col in (
        "id chunk_id doc_id kb_id ordinal text title section source page_start page_end"
        " char_start char_end line_start line_end chunk_type tenant acl_sig"
    ).split()
)


def keyword_terms(query: str, limit: int = 64) -> list[str]:
    seen: dict[str, None] = {}
    for tok in _TOKEN.findall(query.lower()):
        seen.setdefault(tok, None)
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS]
    return (content or terms)[:limit]


def fts_query(query: str) -> str | None:
    """An FTS5 MATCH expression that cannot be a syntax error: every term quoted, OR-ed."""
    terms = keyword_terms(query)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class _VectorIndex:
    """In-memory mirror of the chunks' vectors plus per-row filter codes."""

    def __init__(self) -> None:
        self.dim = 0
        self.n = 0
        self.mat = np.zeros((0, 0), dtype=np.float32)
        self.row_ids = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.kb = np.zeros(0, dtype=np.int32)
        self.tenant = np.zeros(0, dtype=np.int32)
        self.sig = np.zeros(0, dtype=np.int32)
        self.pos: dict[int, int] = {}
        self.codes: dict[str | None, int] = {None: 0}
        self.max_row = 0
        self.last_tomb = 0
        self.dead = 0

    def code(self, value: str | None) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.codes)
        return c

    def _grow(self, need: int) -> None:
        cap = self.mat.shape[0]
        if need <= cap:
            return
        new_cap = max(need, cap * 2, 1024)
        for name in ("row_ids", "alive", "kb", "tenant", "sig"):
            old = getattr(self, name)
            arr = np.zeros(new_cap, dtype=old.dtype)
            arr[: self.n] = old[: self.n]
            setattr(self, name, arr)
        mat = np.zeros((new_cap, self.dim), dtype=np.float32)
        mat[: self.n] = self.mat[: self.n]
        self.mat = mat

    def append(self, rows: list[tuple[int, str, str | None, int, bytes]]) -> None:
        if not rows:
            return
        if self.dim == 0:
            self.dim = len(rows[0][4]) // 4
            self.mat = np.zeros((0, self.dim), dtype=np.float32)
        self._grow(self.n + len(rows))
        vecs = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(len(rows), self.dim)
        s = slice(self.n, self.n + len(rows))
        self.mat[s] = vecs
        self.row_ids[s] = [r[0] for r in rows]
        self.kb[s] = [self.code(r[1]) for r in rows]
        self.tenant[s] = [self.code(r[2]) for r in rows]
        self.sig[s] = [r[3] for r in rows]
        self.alive[s] = True
        for i, r in enumerate(rows):
            self.pos[r[0]] = self.n + i
        self.n += len(rows)
        self.max_row = max(self.max_row, rows[-1][0])

    def kill(self, row_ids: list[int]) -> None:
        for rid in row_ids:
            p = self.pos.pop(rid, None)
            if p is not None and self.alive[p]:
                self.alive[p] = False
                self.dead += 1
        # Compact when a third is tombstones, so deletes never make search slower for long.
        if self.dead > 1000 and self.dead * 3 > self.n:
            keep = np.flatnonzero(self.alive[: self.n])
            for name in ("row_ids", "alive", "kb", "tenant", "sig"):
                arr = getattr(self, name)
                setattr(self, name, arr[keep].copy())
            self.mat = self.mat[keep].copy()
            self.n = len(keep)
            self.pos = {int(r): i for i, r in enumerate(self.row_ids[: self.n])}
            self.dead = 0


class EmbeddedStore:
    name = "embedded"

    def __init__(self, db: Database):
        self.db = db
        db.executescript(SCHEMA)
        self._vi = _VectorIndex()
        self._generation = -1
        self._sync_lock = threading.Lock()
        self._sigs: dict[int, tuple[frozenset[str], frozenset[str]]] = {}
        self._sync()

    # ---- sync of the in-memory vector index -----------------------------------------
    def _read_generation(self) -> int:
        return int(self.db.query_one("SELECT value FROM store_meta WHERE key='generation'")[0])

    def _sync(self) -> None:
        """Bring the in-memory index up to date with the database (cheap when unchanged:
        one primary-key read)."""
        gen = self._read_generation()
        if gen == self._generation:
            return
        with self._sync_lock:
            with self.db.lock:
                gen = self._read_generation()
                if gen == self._generation:
                    return
                vi = self._vi
                tomb = self.db.query(
                    "SELECT seq, row_id FROM tombstones WHERE seq > ? ORDER BY seq", (vi.last_tomb,)
                )
                if tomb:
                    vi.kill([t["row_id"] for t in tomb])
                    vi.last_tomb = tomb[-1]["seq"]
                cur = self.db.conn.execute(
                    "SELECT id, kb_id, tenant, acl_sig, vector FROM chunks WHERE id > ? ORDER BY id", (vi.max_row,)
                )
                while True:
                    batch = cur.fetchmany(5000)
                    if not batch:
                        break
                    vi.append([tuple(r) for r in batch])
                for r in self.db.query("SELECT id, users, groups FROM acl_sigs"):
                    self._sigs[r["id"]] = (frozenset(json.loads(r["users"])), frozenset(json.loads(r["groups"])))
                self._generation = gen

    @staticmethod
    def _bump(c) -> None:
        c.execute("UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")

    # ---- writes ----------------------------------------------------------------------
    def _acl_sig(self, c, users: list[str], groups: list[str]) -> int:
        u, g = json.dumps(sorted(set(users))), json.dumps(sorted(set(groups)))
        c.execute("INSERT OR IGNORE INTO acl_sigs(users, groups) VALUES (?,?)", (u, g))
        return c.execute("SELECT id FROM acl_sigs WHERE users=? AND groups=?", (u, g)).fetchone()[0]

    def add_chunks(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        if not chunks:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape[0] != len(chunks):
            raise ValueError("one vector per chunk")
        if self._vi.dim and vectors.shape[1] != self._vi.dim:
            raise ValueError(
                f"vector size {vectors.shape[1]} does not match this store's {self._vi.dim}: "
                "the data folder was indexed with another embedding model"
            )
        with self.db.transaction() as c:
            sig_cache: dict[tuple, int] = {}
            for ch, vec in zip(chunks, vectors):
                key = (tuple(ch.acl_users), tuple(ch.acl_groups))
                if key not in sig_cache:
                    sig_cache[key] = self._acl_sig(c, ch.acl_users, ch.acl_groups)
                cur = c.execute(
                    "INSERT INTO chunks (chunk_id, doc_id, kb_id, ordinal, text, title, section, source,"
                    " page_start, page_end, char_start, char_end, line_start, line_end, chunk_type, tenant,"
                    " acl_sig, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        ch.chunk_id, ch.doc_id, ch.kb_id, ch.ordinal, ch.text, ch.title, ch.section, ch.source,
                        ch.page_start, ch.page_end, ch.char_start, ch.char_end, ch.line_start, ch.line_end,
                        ch.chunk_type, ch.tenant, sig_cache[key], vec.tobytes(),
                    ),
                )
                c.execute(
                    "INSERT INTO chunks_fts(rowid, content) VALUES (?, ?)",
                    (cur.lastrowid, f"{ch.source}\n{ch.index_text()}"),
                )
            self._bump(c)
        self._sync()

    def _delete_where(self, where: str, params: tuple) -> int:
        with self.db.transaction() as c:
            ids = [r[0] for r in c.execute(f"SELECT id FROM chunks WHERE {where}", params)]
            if ids:
                for start in range(0, len(ids), 500):
                    part = ids[start : start + 500]
                    marks = ",".join("?" * len(part))
                    c.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({marks})", part)
                    c.execute(f"DELETE FROM chunks WHERE id IN ({marks})", part)
                c.executemany("INSERT INTO tombstones(row_id) VALUES (?)", [(i,) for i in ids])
                self._bump(c)
        self._sync()
        return len(ids)

    def delete_document(self, kb_id: str, doc_id: str) -> int:
        return self._delete_where("kb_id = ? AND doc_id = ?", (kb_id, doc_id))

    def delete_kb(self, kb_id: str) -> int:
        return self._delete_where("kb_id = ?", (kb_id,))

    # ---- filters ---------------------------------------------------------------------
    def _allowed_sigs(self, f: SearchFilters) -> list[int] | None:
        if not f.enforce_acl:
            return None
        groups = set(f.groups)
        return [
            sid
            for sid, (users, grps) in self._sigs.items()
            if (not users and not grps) or (f.user is not None and f.user in users) or (groups & grps)
        ]

    def _sql_filter(self, f: SearchFilters) -> tuple[str, list]:
        clauses, params = [], []
        if f.kb_ids is not None:
            clauses.append(f"c.kb_id IN ({','.join('?' * len(f.kb_ids))})")
            params += list(f.kb_ids)
        if f.tenant is not None:
            clauses.append("c.tenant = ?")
            params.append(f.tenant)
        if f.doc_ids is not None:
            clauses.append(f"c.doc_id IN ({','.join('?' * len(f.doc_ids))})")
            params += list(f.doc_ids)
        sigs = self._allowed_sigs(f)
        if sigs is not None:
            clauses.append(f"c.acl_sig IN ({','.join('?' * len(sigs))})" if sigs else "0")
            params += sigs
        return (" AND " + " AND ".join(clauses)) if clauses else "", params

    def _mask(self, f: SearchFilters) -> np.ndarray:
        vi = self._vi
        m = vi.alive[: vi.n].copy()
        if f.kb_ids is not None:
            m &= np.isin(vi.kb[: vi.n], [vi.codes.get(k, -1) for k in f.kb_ids])
        if f.tenant is not None:
            m &= vi.tenant[: vi.n] == vi.codes.get(f.tenant, -1)
        sigs = self._allowed_sigs(f)
        if sigs is not None:
            m &= np.isin(vi.sig[: vi.n], sigs)
        if f.doc_ids is not None:
            rows = self.db.query(
                f"SELECT id FROM chunks WHERE doc_id IN ({','.join('?' * len(f.doc_ids))})", list(f.doc_ids)
            )
            allowed = np.zeros(vi.n, dtype=bool)
            idx = [vi.pos[r[0]] for r in rows if r[0] in vi.pos]
            allowed[idx] = True
            m &= allowed
        return m

    # ---- reads -----------------------------------------------------------------------
    @staticmethod
    def _row_to_chunk(r) -> Chunk:
        return Chunk(
            chunk_id=r["chunk_id"], doc_id=r["doc_id"], kb_id=r["kb_id"], text=r["text"], title=r["title"],
            section=r["section"], source=r["source"], ordinal=r["ordinal"], page_start=r["page_start"],
            page_end=r["page_end"], char_start=r["char_start"], char_end=r["char_end"],
            line_start=r["line_start"], line_end=r["line_end"], chunk_type=r["chunk_type"], tenant=r["tenant"],
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
        match = fts_query(query)
        if match is None or k <= 0:
            return []
        where, params = self._sql_filter(filters)
        rows = self.db.query(
            "SELECT chunks_fts.rowid AS id, -bm25(chunks_fts) AS s FROM chunks_fts"
            + (" JOIN chunks c ON c.id = chunks_fts.rowid" if where else "")
            + f" WHERE chunks_fts MATCH ?{where} ORDER BY bm25(chunks_fts) LIMIT ?",
            [match, *params, k],
        )
        chunks = self._chunks_by_rowid([r["id"] for r in rows])
        return [
            ScoredChunk(chunks[r["id"]], float(r["s"]), {"keyword": float(r["s"])}) for r in rows if r["id"] in chunks
        ]

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        self._sync()
        vi = self._vi
        if vi.n == 0 or k <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != vi.dim:
            raise ValueError(f"query vector size {q.shape[0]} does not match the store's {vi.dim}")
        scores = vi.mat[: vi.n] @ q
        mask = self._mask(filters)
        scores = np.where(mask, scores, -np.inf)
        valid = int(mask.sum())
        k = min(k, valid)
        if k == 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        row_ids = [int(vi.row_ids[i]) for i in top]
        chunks = self._chunks_by_rowid(row_ids)
        return [
            ScoredChunk(chunks[rid], float(scores[i]), {"vector": float(scores[i])})
            for rid, i in zip(row_ids, top)
            if rid in chunks
        ]

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
        vi = self._vi
        out = np.zeros((len(chunk_ids), vi.dim), dtype=np.float32)
        for i, cid in enumerate(chunk_ids):
            p = vi.pos.get(rid.get(cid, -1))
            if p is not None:
                out[i] = vi.mat[p]
        return out

    def count(self, kb_id: str | None = None) -> int:
        if kb_id is None:
            return int(self.db.query_one("SELECT COUNT(*) FROM chunks")[0])
        return int(self.db.query_one("SELECT COUNT(*) FROM chunks WHERE kb_id=?", (kb_id,))[0])

    def health(self) -> dict:
        self._sync()
        fts_rows = int(self.db.query_one("SELECT COUNT(*) FROM chunks_fts")[0])
        rows = self.count()
        live_vectors = int(self._vi.alive[: self._vi.n].sum())
        return {
            "store": self.name,
            "ok": fts_rows == rows == live_vectors,
            "chunks": rows,
            "keyword_rows": fts_rows,
            "vectors": live_vectors,
            "dim": self._vi.dim,
        }

    def close(self) -> None:
        pass
