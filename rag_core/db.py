"""One SQLite database file per data folder: app state and the embedded store's tables.

WAL lets readers in other processes (a second app session, the CLI) read while one
writes; `busy_timeout` turns a concurrent writer into a short wait instead of an error.
Writes go through one connection guarded by a lock: Streamlit runs sessions on threads, and a
single connection keeps every write in one ordered stream. Reads (`query`, `query_one`) take
a connection from a small pool instead, so sessions read in parallel and never wait behind a
write (WAL: a reader sees the last commit); a thread inside its own `transaction` reads
through the write connection, so it sees what it has written.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from . import faults


READ_POOL = 8  # read connections kept per process (more concurrent readers open and close extra ones)


class Database:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
        self.conn.row_factory = sqlite3.Row
        self.lock = threading.RLock()
        self._writer: int | None = None  # the thread inside `transaction`, which reads its own writes
        self._readers: queue.SimpleQueue = queue.SimpleQueue()
        self._pooled = 0
        self._pool_lock = threading.Lock()
        self._closed = False
        with self.lock:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoint; WAL keeps it consistent
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute("PRAGMA busy_timeout=30000")
            self.conn.execute("PRAGMA cache_size=-65536")  # 64 MB page cache

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE takes the write lock up front, so two writers wait for each
        other instead of failing half-way with SQLITE_BUSY on upgrade."""
        with self.lock:
            outer = self._writer
            self._writer = threading.get_ident()
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
            finally:
                self._writer = outer

    def _reader(self) -> sqlite3.Connection:
        try:
            conn = self._readers.get_nowait()
            with self._pool_lock:
                self._pooled -= 1
            return conn
        except queue.Empty:
            conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30.0)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA query_only=ON")
            conn.execute("PRAGMA cache_size=-16384")
            return conn

    def _release(self, conn: sqlite3.Connection) -> None:
        with self._pool_lock:
            keep = not self._closed and self._pooled < READ_POOL
            if keep:
                self._pooled += 1
        if keep:
            self._readers.put(conn)
        else:
            conn.close()

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection to read with: a pooled read-only one (under WAL it never waits for a
        writer), or the write connection inside this thread's own transaction."""
        if self._writer == threading.get_ident():  # inside this thread's transaction
            with self.lock:
                yield self.conn
            return
        conn = self._reader()
        try:
            yield conn
        finally:
            if conn.in_transaction:  # an unfinished read (a generator abandoned): never keep a snapshot
                conn.rollback()
            self._release(conn)

    def query(self, sql: str, params: tuple | list = ()) -> list[sqlite3.Row]:
        with self.reading() as conn:
            return conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: tuple | list = ()) -> sqlite3.Row | None:
        with self.reading() as conn:
            return conn.execute(sql, params).fetchone()

    def executescript(self, sql: str) -> None:
        with self.lock:
            self.conn.executescript(sql)

    def columns(self, table: str) -> set[str]:
        """The table's column names (empty when it does not exist)."""
        return {r[1] for r in self.query(f"PRAGMA table_info({table})")}

    def add_columns(self, table: str, columns: dict[str, str]) -> None:
        """Columns a newer version added ({name: type}): added to an older data folder's table,
        NULL ("not recorded") in its existing rows. Another process adding one first is fine."""
        have = self.columns(table)
        for name, kind in columns.items():
            if name in have:
                continue
            try:
                with self.transaction() as c:
                    c.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                faults.reach("migrate.column")
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):
                    raise

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
        while True:
            try:
                self._readers.get_nowait().close()
            except queue.Empty:
                break
        with self.lock:
            self.conn.close()
