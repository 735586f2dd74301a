"""App state in SQLite: knowledge bases, the document registry and the embedding cache.

The registry is the source of truth for what a knowledge base contains, whatever store
holds the chunks (embedded or Weaviate).
"""

from __future__ import annotations

import json
import time
import os
import re
import uuid
from dataclasses import asdict

import numpy as np

from .db import Database
from .errors import InputError, NotFound
from .models import Document, KnowledgeBase, RetrievalSettings

SCHEMA = """
CREATE TABLE IF NOT EXISTS kbs (
    kb_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    description TEXT NOT NULL DEFAULT '',
    instructions TEXT NOT NULL DEFAULT '',
    grounded_only INTEGER NOT NULL DEFAULT 0,
    retrieval TEXT NOT NULL DEFAULT '{}',
    tenant TEXT,
    acl_users TEXT NOT NULL DEFAULT '[]',
    acl_groups TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL
);
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
    owner_pid INTEGER,
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
    )


class AppDB:
    def __init__(self, db: Database):
        self.db = db
        db.executescript(SCHEMA)

    # ---- knowledge bases -------------------------------------------------------------
    def _valid_name(self, name: str, kb_id: str | None = None) -> str:
        name = (name or "").strip()
        if not _NAME_RE.match(name):
            raise InputError("a knowledge base name must be 1–80 characters: letters, digits, spaces, . - _ ( ) & '")
        other = self.find_kb(name)
        if other and other.kb_id != kb_id:
            raise InputError(f"a knowledge base named '{name}' already exists")
        return name

    def create_kb(
        self,
        name: str,
        description: str = "",
        instructions: str = "",
        grounded_only: bool = False,
        retrieval: RetrievalSettings | None = None,
        tenant: str | None = None,
        acl_users: list[str] | None = None,
        acl_groups: list[str] | None = None,
    ) -> KnowledgeBase:
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
        )
        with self.db.transaction() as c:
            c.execute(
                "INSERT INTO kbs VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    kb.kb_id,
                    kb.name,
                    kb.description,
                    kb.instructions,
                    int(kb.grounded_only),
                    json.dumps(asdict(kb.retrieval)),
                    kb.tenant,
                    json.dumps(kb.acl_users),
                    json.dumps(kb.acl_groups),
                    kb.created_at,
                ),
            )
        return kb

    def update_kb(self, kb: KnowledgeBase) -> None:
        name = self._valid_name(kb.name, kb.kb_id)
        with self.db.transaction() as c:
            c.execute(
                "UPDATE kbs SET name=?, description=?, instructions=?, grounded_only=?, retrieval=?,"
                " tenant=?, acl_users=?, acl_groups=? WHERE kb_id=?",
                (
                    name,
                    kb.description,
                    kb.instructions,
                    int(kb.grounded_only),
                    json.dumps(asdict(kb.retrieval)),
                    kb.tenant,
                    json.dumps(sorted(set(kb.acl_users))),
                    json.dumps(sorted(set(kb.acl_groups))),
                    kb.kb_id,
                ),
            )

    def list_kbs(self) -> list[KnowledgeBase]:
        return [_kb_from_row(r) for r in self.db.query("SELECT * FROM kbs ORDER BY name")]

    def find_kb(self, name_or_id: str) -> KnowledgeBase | None:
        r = self.db.query_one("SELECT * FROM kbs WHERE kb_id=? OR name=? COLLATE NOCASE", (name_or_id, name_or_id))
        return _kb_from_row(r) if r else None

    def get_kb(self, name_or_id: str) -> KnowledgeBase:
        kb = self.find_kb(name_or_id)
        if kb is None:
            names = ", ".join(k.name for k in self.list_kbs()) or "none yet"
            raise NotFound(f"no knowledge base named '{name_or_id}' (existing: {names})")
        return kb

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
        """Register a document as 'indexing' before its chunks are written: if the process
        dies now, `stale_documents` finds it and the pipeline removes what was written."""
        with self.db.transaction() as c:
            c.execute("DELETE FROM documents WHERE kb_id=? AND doc_id=?", (doc.kb_id, doc.doc_id))
            c.execute(
                "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    doc.doc_id,
                    doc.kb_id,
                    doc.source,
                    doc.title,
                    doc.mime,
                    doc.sha256,
                    doc.pages,
                    doc.chunks,
                    "indexing",
                    "",
                    doc.created_at,
                    doc.tenant,
                    json.dumps(doc.acl_users),
                    json.dumps(doc.acl_groups),
                    doc.stored_path,
                    os.getpid(),
                ),
            )

    def finish_document(self, kb_id: str, doc_id: str, chunks: int) -> None:
        with self.db.transaction() as c:
            c.execute(
                "UPDATE documents SET status='indexed', chunks=?, owner_pid=NULL WHERE kb_id=? AND doc_id=?",
                (chunks, kb_id, doc_id),
            )

    def mark_searchable(self, kb_id: str, doc_id: str, chunks: int) -> None:
        """Keyword index written: the document can be found and cited; its vectors are
        computed next, by whichever process claims it (`claim_for_vectors`)."""
        with self.db.transaction() as c:
            c.execute(
                "UPDATE documents SET status='searchable', chunks=?, owner_pid=NULL WHERE kb_id=? AND doc_id=?",
                (chunks, kb_id, doc_id),
            )

    def waiting_for_vectors(self, kb_id: str | None = None) -> list[Document]:
        q = "SELECT * FROM documents WHERE status='searchable'" + (" AND kb_id=?" if kb_id else "")
        return [_doc_from_row(r) for r in self.db.query(q + " ORDER BY created_at, doc_id", (kb_id,) if kb_id else ())]

    def claim_for_vectors(self, kb_id: str, doc_id: str) -> bool:
        """One process embeds a document: claimed unless a live other process holds it."""
        r = self.db.query_one("SELECT owner_pid FROM documents WHERE kb_id=? AND doc_id=? AND status='searchable'",
                              (kb_id, doc_id))
        if r is None:
            return False
        pid = r["owner_pid"]
        if pid and pid != os.getpid() and not owner_gone(pid):
            return False
        with self.db.transaction() as c:
            c.execute("UPDATE documents SET owner_pid=? WHERE kb_id=? AND doc_id=? AND status='searchable'",
                      (os.getpid(), kb_id, doc_id))
        return True

    def vector_progress(self, kb_ids: list[str]) -> tuple[int, int]:
        """(chunks still without vectors, chunks searchable) over these knowledge bases."""
        if not kb_ids:
            return 0, 0
        marks = ",".join("?" * len(kb_ids))
        r = self.db.query_one(
            f"SELECT COALESCE(SUM(CASE WHEN status='searchable' THEN chunks ELSE 0 END),0), COALESCE(SUM(chunks),0) "
            f"FROM documents WHERE kb_id IN ({marks}) AND status IN ('indexed','searchable')", list(kb_ids))
        return int(r[0]), int(r[1])

    def remove_document(self, kb_id: str, doc_id: str) -> None:
        with self.db.transaction() as c:
            c.execute("DELETE FROM documents WHERE kb_id=? AND doc_id=?", (kb_id, doc_id))

    def stale_documents(self) -> list[Document]:
        """'indexing' rows whose writer process is gone: interrupted ingests."""
        out = []
        for r in self.db.query("SELECT * FROM documents WHERE status='indexing'"):
            if owner_gone(r["owner_pid"]):
                out.append(_doc_from_row(r))
        return out

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

    # ---- meta ------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        r = self.db.query_one("SELECT value FROM meta WHERE key=?", (key,))
        return r["value"] if r else None

    def set_meta(self, key: str, value: str) -> None:
        with self.db.transaction() as c:
            c.execute("INSERT OR REPLACE INTO meta VALUES (?,?)", (key, value))

    # ---- migration progress -----------------------------------------------------------
    def migrated(self, target: str) -> set[tuple[str, str]]:
        rows = self.db.conn.execute("SELECT kb_id, doc_id FROM migrated WHERE target = ?", (target,)).fetchall()
        return {(r["kb_id"], r["doc_id"]) for r in rows}

    def mark_migrated(self, target: str, kb_id: str, doc_id: str, chunks: int) -> None:
        with self.db.transaction() as c:
            c.execute("INSERT OR REPLACE INTO migrated VALUES (?, ?, ?, ?, ?)", (target, kb_id, doc_id, chunks, time.time()))

    def forget_migration(self, target: str) -> None:
        with self.db.transaction() as c:
            c.execute("DELETE FROM migrated WHERE target = ?", (target,))


def owner_gone(pid: int | None) -> bool:
    """A row's writer is gone: no owner, or another process that no longer runs (this
    process's own rows are never orphans)."""
    if pid == os.getpid():
        return False
    return not pid or not _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
