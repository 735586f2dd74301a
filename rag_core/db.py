"""One SQLite database file per data folder: app state and the embedded store's tables.

WAL lets readers in other processes (a second app session, the CLI) read while one
writes; `busy_timeout` turns a concurrent writer into a short wait instead of an error.
One connection per process guarded by a lock: Streamlit runs sessions on threads, and a
single connection keeps every write in one ordered stream.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class Database:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30.0)
        self.conn.row_factory = sqlite3.Row
        self.lock = threading.RLock()
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
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")

    def query(self, sql: str, params: tuple | list = ()) -> list[sqlite3.Row]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: tuple | list = ()) -> sqlite3.Row | None:
        with self.lock:
            return self.conn.execute(sql, params).fetchone()

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
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):
                    raise

    def close(self) -> None:
        with self.lock:
            self.conn.close()
