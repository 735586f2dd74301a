"""App state in SQLite: knowledge bases, the document registry and the embedding cache.

The registry is the source of truth for what a knowledge base contains, whatever store
holds the chunks (embedded or Weaviate).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import asdict

import numpy as np

from . import faults
from .db import Database
from .errors import InputError, NotFound
from .leases import Leases
from .models import Document, KnowledgeBase, RetrievalSettings, upload_day

_KBS_TABLE = """CREATE TABLE IF NOT EXISTS {name} (
    kb_id TEXT PRIMARY KEY,
    name TEXT NOT NULL COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    instructions TEXT NOT NULL DEFAULT '',
    grounded_only INTEGER NOT NULL DEFAULT 0,
    retrieval TEXT NOT NULL DEFAULT '{}',
    tenant TEXT,
    acl_users TEXT NOT NULL DEFAULT '[]',
    acl_groups TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL,
    owners TEXT NOT NULL DEFAULT '[]'
);
"""

SCHEMA = """
-- Names are not unique across the table: one unique name per tenant would tell a caller that
-- a hidden knowledge base exists ("already exists"). A name is unique among the knowledge
-- bases its creator can see (appdb.create_kb), and a lookup by name is resolved among the ones
-- the caller can see (workspace.py).
{kbs_table}
CREATE INDEX IF NOT EXISTS kbs_name ON kbs(name COLLATE NOCASE);
-- (kb_id, doc_id): a JSONL record keeps its own id as doc_id, and the same corpus may be
-- imported into two knowledge bases.
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT NOT NULL,
    kb_id TEXT NOT NULL REFERENCES kbs(kb_id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    mime TEXT NOT NULL DEFAULT '',
    sha256 TEXT NOT NULL,
    pages INTEGER NOT NULL DEFAULT 0,
    chunks INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    tenant TEXT,
    acl_users TEXT NOT NULL DEFAULT '[]',
    acl_groups TEXT NOT NULL DEFAULT '[]',
    stored_path TEXT,
    owner_pid INTEGER,             -- unused since leases (rag_core/leases.py); kept for old folders
    lease_owner TEXT,
    lease_until REAL,
    PRIMARY KEY (kb_id, doc_id)
);
CREATE INDEX IF NOT EXISTS documents_kb ON documents(kb_id, status);
CREATE INDEX IF NOT EXISTS documents_sha ON documents(kb_id, sha256);
CREATE TABLE IF NOT EXISTS embed_cache (
    key TEXT PRIMARY KEY,
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- Documents copied by `migrate --to` into another store: what a resumed copy skips.
CREATE TABLE IF NOT EXISTS migrated (
    target TEXT NOT NULL,
    kb_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (target, kb_id, doc_id)
);
""".replace("{kbs_table}", _KBS_TABLE.replace("{name}", "kbs"))

# A knowledge base's content version: bumped by the database itself on every write to its
# documents that changes what can be found or shown (a row added or removed; its state, content,
# date, language, name or access changed), whichever code path made it. The answer cache keys on
# it (rag_core/answer_cache.py), and the planner's catalogue is rebuilt when it moves.
CONTENT_VERSIONS = """
CREATE TABLE IF NOT EXISTS kb_content (kb_id TEXT PRIMARY KEY, version INTEGER NOT NULL DEFAULT 0);
CREATE TRIGGER IF NOT EXISTS documents_content_insert AFTER INSERT ON documents BEGIN
    INSERT INTO kb_content (kb_id, version) VALUES (NEW.kb_id, 1)
    ON CONFLICT(kb_id) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER IF NOT EXISTS documents_content_delete AFTER DELETE ON documents BEGIN
    INSERT INTO kb_content (kb_id, version) VALUES (OLD.kb_id, 1)
    ON CONFLICT(kb_id) DO UPDATE SET version = version + 1;
END;
DROP TRIGGER IF EXISTS documents_content_update;
CREATE TRIGGER IF NOT EXISTS documents_content_change AFTER UPDATE OF status, sha256, chunks, doc_date, language, title,
    source, tenant, acl_users, acl_groups, kb_id, trust ON documents BEGIN
    INSERT INTO kb_content (kb_id, version) VALUES (NEW.kb_id, 1)
    ON CONFLICT(kb_id) DO UPDATE SET version = version + 1;
END;
"""

_NAME_RE = re.compile(r"^[\w][\w .\-()&']{0,79}$", re.UNICODE)


def _kb_from_row(r) -> KnowledgeBase:
    retrieval = RetrievalSettings(**{k: v for k, v in json.loads(r["retrieval"]).items() if k in RetrievalSettings.__dataclass_fields__})
    return KnowledgeBase(
        kb_id=r["kb_id"],
        name=r["name"],
        description=r["description"],
        instructions=r["instructions"],
        grounded_only=bool(r["grounded_only"]),
        retrieval=retrieval,
        tenant=r["tenant"],
        acl_users=json.loads(r["acl_users"]),
        acl_groups=json.loads(r["acl_groups"]),
        created_at=r["created_at"],
        owners=json.loads(r["owners"]),
        retention_days=int(r["retention_days"] or 0),
        query_log=r["query_log"] or "",
    )


def _doc_from_row(r) -> Document:
    return Document(
        doc_id=r["doc_id"],
        kb_id=r["kb_id"],
        source=r["source"],
        title=r["title"],
        mime=r["mime"],
        sha256=r["sha256"],
        pages=r["pages"],
        chunks=r["chunks"],
        status=r["status"],
        reason=r["reason"],
        created_at=r["created_at"],
        tenant=r["tenant"],
        acl_users=json.loads(r["acl_users"]),
        acl_groups=json.loads(r["acl_groups"]),
        stored_path=r["stored_path"],
        # folders from before document dates: the upload day, as the dates issue specifies
        date=r["doc_date"] or upload_day(r["created_at"]),
        date_source=r["date_source"] or "upload",
        language=r["language"] or "",
        language_source=r["language_source"] or "detected",
        trust=r["trust"] or "normal",
        description=r["description"] or "",
    )


class AppDB:
    def __init__(self, db: Database, lease_seconds: float | None = None):
        self.db = db
        _migrate_kbs(db)
        db.executescript(SCHEMA)
        db.add_columns("kbs", {"retention_days": "INTEGER NOT NULL DEFAULT 0", "query_log": "TEXT NOT NULL DEFAULT ''"})
        db.add_columns("documents", {"lease_owner": "TEXT", "lease_until": "REAL", "doc_date": "TEXT",
                                     "date_source": "TEXT", "language": "TEXT", "language_source": "TEXT", "trust": "TEXT",
                                     "description": "TEXT"})
        db.executescript(CONTENT_VERSIONS)
        self.leases = Leases.of(db, lease_seconds)

    def content_versions(self, kb_ids: list[str]) -> dict[str, int]:
        """Each knowledge base's content version (CONTENT_VERSIONS; 0: no document written yet)."""
        if not kb_ids:
            return {}
        rows = self.db.query(f"SELECT kb_id, version FROM kb_content WHERE kb_id IN ({','.join('?' * len(kb_ids))})",
                             list(kb_ids))
        got = {r["kb_id"]: int(r["version"]) for r in rows}
        return {k: got.get(k, 0) for k in kb_ids}

    # ---- knowledge bases -------------------------------------------------------------
    @staticmethod
    def _valid_name(name: str) -> str:
        name = (name or "").strip()
        if not _NAME_RE.match(name):
            raise InputError("a knowledge base name must be 1–80 characters: letters, digits, spaces, . - _ ( ) & '")
        return name

    def _check_free(self, name: str, visible_to, kb_id: str | None = None) -> None:
        """A name is taken only if the caller can see a knowledge base with it (`visible_to`:
        the policy's can_see for that caller): names of hidden ones are never revealed."""
        for other in self.find_kbs(name):
            if other.kb_id != kb_id and visible_to(other):
                raise InputError(f"a knowledge base named '{name}' already exists")

    def create_kb(
        self,
        name: str,
        visible_to,
        description: str = "",
        instructions: str = "",
        grounded_only: bool = False,
        retrieval: RetrievalSettings | None = None,
        tenant: str | None = None,
        acl_users: list[str] | None = None,
        acl_groups: list[str] | None = None,
        owners: list[str] | None = None,
    ) -> KnowledgeBase:
        """Called by Workspace.create_kb, which decides owners and tenant from the caller."""
        name = self._valid_name(name)
        kb = KnowledgeBase(
            kb_id=uuid.uuid4().hex[:12],
            name=name,
            description=description,
            instructions=instructions,
            grounded_only=grounded_only,
            retrieval=retrieval or RetrievalSettings(),
            tenant=tenant or None,
            acl_users=sorted(set(acl_users or [])),
            acl_groups=sorted(set(acl_groups or [])),
            owners=sorted(set(owners or [])),
        )
        with self.db.transaction() as c:  # the name check and the insert in one write lock
            self._check_free(name, visible_to)
            c.execute(
                "INSERT INTO kbs (kb_id, name, description, instructions, grounded_only, retrieval, tenant, "
                "acl_users, acl_groups, created_at, owners, retention_days, query_log) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (kb.kb_id, kb.name, kb.description, kb.instructions, int(kb.grounded_only),
                 json.dumps(asdict(kb.retrieval)), kb.tenant, json.dumps(kb.acl_users), json.dumps(kb.acl_groups),
                 kb.created_at, json.dumps(kb.owners), int(kb.retention_days), kb.query_log),
            )
        return kb

    def update_kb(self, kb: KnowledgeBase, visible_to) -> None:
        name = self._valid_name(kb.name)
        old = self.find_kb(kb.kb_id)
        with self.db.transaction() as c:
            if old is None or old.name.casefold() != name.casefold():  # a rename: the new name must be free
                self._check_free(name, visible_to, kb.kb_id)
            c.execute(
                "UPDATE kbs SET name=?, description=?, instructions=?, grounded_only=?, retrieval=?,"
                " tenant=?, acl_users=?, acl_groups=?, owners=?, retention_days=?, query_log=? WHERE kb_id=?",
                (
                    name,
                    kb.description,
                    kb.instructions,
                    int(kb.grounded_only),
                    json.dumps(asdict(kb.retrieval)),
                    kb.tenant,
                    json.dumps(sorted(set(kb.acl_users))),
                    json.dumps(sorted(set(kb.acl_groups))),
                    json.dumps(sorted(set(kb.owners))),
                    int(kb.retention_days),
                    kb.query_log,
                    kb.kb_id,
                ),
            )

    def list_kbs(self) -> list[KnowledgeBase]:
        return [_kb_from_row(r) for r in self.db.query("SELECT * FROM kbs ORDER BY name, created_at")]

    def find_kb(self, kb_id: str) -> KnowledgeBase | None:
        """By id only: names are resolved per caller (Workspace), never here."""
        r = self.db.query_one("SELECT * FROM kbs WHERE kb_id=?", (kb_id,))
        return _kb_from_row(r) if r else None

    def get_kb(self, kb_id: str) -> KnowledgeBase:
        """By id, for internal callers (the ingestion worker); edges resolve through Workspace."""
        kb = self.find_kb(kb_id)
        if kb is None:
            raise NotFound("no such knowledge base")
        return kb

    def find_kbs(self, name_or_id: str) -> list[KnowledgeBase]:
        """Every knowledge base with this id or (case-insensitive) name: the caller's policy
        picks among them."""
        rows = self.db.query("SELECT * FROM kbs WHERE kb_id=? OR name=? COLLATE NOCASE ORDER BY created_at",
                             (name_or_id, (name_or_id or "").strip()))
        return [_kb_from_row(r) for r in rows]

    def delete_kb_row(self, kb_id: str) -> None:
        with self.db.transaction() as c:
            c.execute("DELETE FROM kbs WHERE kb_id=?", (kb_id,))

    # ---- document registry -----------------------------------------------------------
    def find_duplicate(self, kb_id: str, sha256: str) -> Document | None:
        r = self.db.query_one(
            "SELECT * FROM documents WHERE kb_id=? AND sha256=? AND status IN ('indexed','searchable')", (kb_id, sha256)
        )
        return _doc_from_row(r) if r else None

    def get_document(self, kb_id: str, doc_id: str) -> Document | None:
        r = self.db.query_one("SELECT * FROM documents WHERE kb_id=? AND doc_id=?", (kb_id, doc_id))
        return _doc_from_row(r) if r else None

    def list_documents(self, kb_id: str, status: str | None = "visible") -> list[Document]:
        """"visible": what people can search and open ('indexed', and 'searchable' = keyword
        index written, vectors still being computed); a status name; None: every row."""
        if status == "visible":
            rows = self.db.query(
                "SELECT * FROM documents WHERE kb_id=? AND status IN ('indexed', 'searchable') "
                "ORDER BY created_at, doc_id", (kb_id,)
            )
        elif status:
            rows = self.db.query(
                "SELECT * FROM documents WHERE kb_id=? AND status=? ORDER BY created_at, doc_id", (kb_id, status)
            )
        else:
            rows = self.db.query("SELECT * FROM documents WHERE kb_id=? ORDER BY created_at, doc_id", (kb_id,))
        return [_doc_from_row(r) for r in rows]

    def begin_document(self, doc: Document) -> None:
        """Register a document as 'indexing' before its chunks are written, under this process's
        lease: if the process dies now, the lease runs out, `stale_documents` finds the row and
        the pipeline removes what was written."""
        with self.db.transaction() as c:
            c.execute("DELETE FROM documents WHERE kb_id=? AND doc_id=?", (doc.kb_id, doc.doc_id))
            c.execute(
                "INSERT INTO documents (doc_id, kb_id, source, title, mime, sha256, pages, chunks, status, reason, "
                "created_at, tenant, acl_users, acl_groups, stored_path, lease_owner, lease_until, doc_date, "
                "date_source, language, language_source, description) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (doc.doc_id, doc.kb_id, doc.source, doc.title, doc.mime, doc.sha256, doc.pages, doc.chunks,
                 "indexing", "", doc.created_at, doc.tenant, json.dumps(doc.acl_users), json.dumps(doc.acl_groups),
                 doc.stored_path, self.leases.owner, self.leases.until(), doc.date or upload_day(doc.created_at),
                 doc.date_source, doc.language, doc.language_source, doc.description),
            )
        self.leases.started()

    def set_document_date(self, kb_id: str, doc_id: str, date: str, source: str = "set") -> None:
        with self.db.transaction() as c:
            c.execute("UPDATE documents SET doc_date=?, date_source=? WHERE kb_id=? AND doc_id=?",
                      (date, source, kb_id, doc_id))

    def set_document_language(self, kb_id: str, doc_id: str, language: str, source: str = "set") -> None:
        with self.db.transaction() as c:
            c.execute("UPDATE documents SET language=?, language_source=? WHERE kb_id=? AND doc_id=?",
                      (language, source, kb_id, doc_id))

    def set_document_trust(self, kb_id: str, doc_id: str, trust: str) -> None:
        with self.db.transaction() as c:
            c.execute("UPDATE documents SET trust=? WHERE kb_id=? AND doc_id=?", (trust, kb_id, doc_id))

    def trust_marks(self, kb_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
        """{"trusted": [(kb_id, doc_id), ...], "draft": [...]} for these knowledge bases' documents."""
        out: dict[str, list[tuple[str, str]]] = {"trusted": [], "draft": []}
        if kb_ids:
            for r in self.db.query(f"SELECT kb_id, doc_id, trust FROM documents WHERE kb_id IN "
                                   f"({','.join('?' * len(kb_ids))}) AND trust IN ('trusted', 'draft')", list(kb_ids)):
                out[r["trust"]].append((r["kb_id"], r["doc_id"]))
        return out

    def languages(self, kb_ids: list[str]) -> tuple[str, ...]:
        """The languages of these knowledge bases' documents, most documents first ("" for
        documents from before languages: English, as their index was built)."""
        if not kb_ids:
            return ()
        rows = self.db.query(
            f"SELECT COALESCE(language, '') AS lang, COUNT(*) AS n FROM documents WHERE kb_id IN "
            f"({','.join('?' * len(kb_ids))}) AND status IN ('indexed', 'searchable') GROUP BY lang "
            "ORDER BY n DESC, lang", list(kb_ids))
        return tuple(dict.fromkeys((r["lang"] or "en") for r in rows))

    def documents_without_language(self) -> list[Document]:
        rows = self.db.query("SELECT * FROM documents WHERE language IS NULL AND status IN ('indexed', 'searchable')")
        return [_doc_from_row(r) for r in rows]

    def finish_document(self, kb_id: str, doc_id: str, chunks: int) -> None:
        with self.db.transaction() as c:
            c.execute(
                "UPDATE documents SET status='indexed', chunks=?, lease_owner=NULL, lease_until=NULL "
                "WHERE kb_id=? AND doc_id=?",
                (chunks, kb_id, doc_id),
            )

    def mark_searchable(self, kb_id: str, doc_id: str, chunks: int) -> None:
        """Keyword index written: the document can be found and cited; its vectors are
        computed next, by whichever process claims it (`claim_for_vectors`)."""
        with self.db.transaction() as c:
            c.execute(
                "UPDATE documents SET status='searchable', chunks=?, lease_owner=NULL, lease_until=NULL "
                "WHERE kb_id=? AND doc_id=?",
                (chunks, kb_id, doc_id),
            )

    def waiting_for_vectors(self, kb_id: str | None = None) -> list[Document]:
        q = "SELECT * FROM documents WHERE status='searchable'" + (" AND kb_id=?" if kb_id else "")
        return [_doc_from_row(r) for r in self.db.query(q + " ORDER BY created_at, doc_id", (kb_id,) if kb_id else ())]

    def claim_for_vectors(self, kb_id: str, doc_id: str) -> bool:
        """One process embeds a document: one conditional UPDATE takes the row if nobody holds
        it, this process already does, or the holder's lease ran out (a read-then-write let two
        processes both claim it)."""
        r = self.db.query_one("SELECT lease_owner FROM documents WHERE kb_id=? AND doc_id=?", (kb_id, doc_id))
        dead = r["lease_owner"] if r is not None and self.leases.dead_local(r["lease_owner"]) else None
        with self.db.transaction() as c:  # compare-and-set: a dead holder is replaced only if still it
            cur = c.execute(
                "UPDATE documents SET lease_owner=?, lease_until=? WHERE kb_id=? AND doc_id=? AND status='searchable' "
                f"AND (lease_owner=? OR lease_owner IS ? OR {self.leases.free_sql()})",
                (self.leases.owner, self.leases.until(), kb_id, doc_id, self.leases.owner, dead, time.time()),
            )
            won = cur.rowcount == 1
        if won:
            self.leases.started()
        return won

    def vector_progress(self, kb_ids: list[str]) -> tuple[int, int]:
        """(chunks still without vectors, chunks searchable) over these knowledge bases."""
        if not kb_ids:
            return 0, 0
        marks = ",".join("?" * len(kb_ids))
        r = self.db.query_one(
            f"SELECT COALESCE(SUM(CASE WHEN status='searchable' THEN chunks ELSE 0 END),0), COALESCE(SUM(chunks),0) "
            f"FROM documents WHERE kb_id IN ({marks}) AND status IN ('indexed','searchable')", list(kb_ids))
        return int(r[0]), int(r[1])

    def mark_deleting(self, kb_id: str, doc_id: str) -> None:
        """The first step of a delete: the row leaves every listing ('deleting' is neither
        indexed nor searchable) and says what is left to finish if the process dies
        (`deleting_documents`)."""
        with self.db.transaction() as c:
            c.execute("UPDATE documents SET status='deleting' WHERE kb_id=? AND doc_id=?", (kb_id, doc_id))

    def deleting_documents(self) -> list[Document]:
        """Deletes begun and not finished (the process died between the store and the registry)."""
        return [_doc_from_row(r) for r in self.db.query("SELECT * FROM documents WHERE status='deleting'")]

    def remove_document(self, kb_id: str, doc_id: str) -> None:
        with self.db.transaction() as c:
            c.execute("DELETE FROM documents WHERE kb_id=? AND doc_id=?", (kb_id, doc_id))

    def stale_documents(self) -> list[Document]:
        """'indexing' rows whose writer's lease ran out: interrupted ingests."""
        rows = self.db.query("SELECT * FROM documents WHERE status='indexing'")
        return [_doc_from_row(r) for r in rows
                if r["lease_owner"] != self.leases.owner and self.leases.is_free(r["lease_owner"], r["lease_until"])]

    def counts(self, kb_id: str) -> tuple[int, int]:
        r = self.db.query_one(
            "SELECT COUNT(*), COALESCE(SUM(chunks),0) FROM documents WHERE kb_id=? AND status IN ('indexed','searchable')",
            (kb_id,),
        )
        return int(r[0]), int(r[1])

    # ---- embedding cache -------------------------------------------------------------
    def cached_vectors(self, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self.db.query(
                f"SELECT key, vector FROM embed_cache WHERE key IN ({','.join('?' * len(part))})", part
            )
            for r in rows:
                out[r["key"]] = np.frombuffer(r["vector"], dtype=np.float32)
        return out

    def cache_vectors(self, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        with self.db.transaction() as c:
            c.executemany(
                "INSERT OR IGNORE INTO embed_cache VALUES (?,?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
            )

    def prune_embed_cache(self, floor: int = 20_000) -> int:
        """Keep the cache bounded (run once per embedding pass, not per batch: it counts both
        tables): at most max(floor, 2 × the chunks indexed) vectors, the
        oldest dropped first (rowid order = insertion order). It exists so that re-uploading an
        edited file re-embeds only what changed; a vector older than twice the collection is
        unlikely to be asked for again, and a miss only costs one embedding."""
        total = self.db.query_one("SELECT COALESCE(SUM(chunks),0) FROM documents")[0]
        cap = max(int(floor), 2 * int(total))
        n = self.db.query_one("SELECT COUNT(*) FROM embed_cache")[0]
        if n <= cap:
            return 0
        with self.db.transaction() as c:
            c.execute("DELETE FROM embed_cache WHERE rowid IN (SELECT rowid FROM embed_cache ORDER BY rowid LIMIT ?)",
                      (n - cap,))
        return n - cap

    # ---- meta ------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        r = self.db.query_one("SELECT value FROM meta WHERE key=?", (key,))
        return r["value"] if r else None

    def set_meta(self, key: str, value: str) -> None:
        with self.db.transaction() as c:
            c.execute("INSERT OR REPLACE INTO meta VALUES (?,?)", (key, value))

    def delete_meta(self, key: str) -> None:
        with self.db.transaction() as c:
            c.execute("DELETE FROM meta WHERE key=?", (key,))

    # ---- migration progress -----------------------------------------------------------
    def migrated(self, target: str) -> set[tuple[str, str]]:
        rows = self.db.query("SELECT kb_id, doc_id FROM migrated WHERE target = ?", (target,))  # under the lock
        return {(r["kb_id"], r["doc_id"]) for r in rows}

    def mark_migrated(self, target: str, kb_id: str, doc_id: str, chunks: int) -> None:
        with self.db.transaction() as c:
            c.execute("INSERT OR REPLACE INTO migrated VALUES (?, ?, ?, ?, ?)", (target, kb_id, doc_id, chunks, time.time()))

    def forget_migration(self, target: str) -> None:
        with self.db.transaction() as c:
            c.execute("DELETE FROM migrated WHERE target = ?", (target,))


def _migrate_kbs(db: Database) -> None:
    """Data folders from before owners: rebuild `kbs` without the table-wide UNIQUE name (SQLite
    cannot drop a constraint in place) and make the users named on a knowledge base its owners,
    which is who the settings page let change it then. Foreign keys are off while the table is
    swapped, so the documents that reference it are kept."""
    have = db.columns("kbs")
    if not have or "owners" in have:
        return
    with db.lock:
        db.conn.execute("PRAGMA foreign_keys=OFF")
        try:
            db.conn.execute("BEGIN IMMEDIATE")
            try:
                # SQLite's documented way to change a table's constraints: new table, copy, drop,
                # rename (renaming the old one away would drag the documents' references with it).
                db.conn.execute(_KBS_TABLE.replace("{name}", "kbs_new"))
                db.conn.execute(
                    "INSERT INTO kbs_new (kb_id, name, description, instructions, grounded_only, retrieval, tenant, "
                    "acl_users, acl_groups, created_at, owners) SELECT kb_id, name, description, instructions, "
                    "grounded_only, retrieval, tenant, acl_users, acl_groups, created_at, acl_users FROM kbs")
                faults.reach("migrate.kbs.copied")
                db.conn.execute("DROP TABLE kbs")
                db.conn.execute("ALTER TABLE kbs_new RENAME TO kbs")
                faults.reach("migrate.kbs.renamed")
                db.conn.execute("COMMIT")
            except BaseException:
                db.conn.execute("ROLLBACK")
                raise
        finally:
            db.conn.execute("PRAGMA foreign_keys=ON")
