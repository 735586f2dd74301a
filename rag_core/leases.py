"""Who is working on a row (a document being indexed or embedded, an ingestion job running):
a lease held by one process and renewed by a heartbeat thread.

PIDs were used before; they break on PID reuse (a new process with the old number keeps a dead
writer's row alive forever) and across hosts sharing a data folder (another host's PID means
nothing here). A lease is a random owner token and an expiry time: a holder that dies, hangs or
loses the disk stops renewing, and once the lease has run out anyone may take the row over. A
claim is one conditional UPDATE, so two processes can never both win it.
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
import time
import uuid

from .db import Database

log = logging.getLogger(__name__)

# Tables whose rows carry (lease_owner, lease_until).
TABLES = ("documents", "ingest_jobs")


class Leases:
    def __init__(self, db: Database, seconds: float = 30.0):
        self.db = db
        self.seconds = float(seconds)
        self._token: tuple[int, str] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, db: Database, seconds: float | None = None) -> Leases:
        """One lease keeper per database connection (AppDB and JobQueue share it)."""
        keeper = getattr(db, "leases", None)
        if keeper is None:
            keeper = db.leases = cls(db, seconds if seconds is not None else 30.0)
        elif seconds is not None:
            keeper.seconds = float(seconds)
        return keeper

    @property
    def owner(self) -> str:
        # A new token after a fork: a child must not renew its parent's leases.
        pid = os.getpid()
        if self._token is None or self._token[0] != pid:
            self._token = (pid, f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:12]}")
        return self._token[1]

    def until(self) -> float:
        return time.time() + self.seconds

    @staticmethod
    def free_sql() -> str:
        """SQL true for a row nobody holds: no owner, or the owner's lease ran out. Takes the
        current time as its one parameter."""
        return "(lease_owner IS NULL OR lease_until < ?)"

    def is_free(self, lease_owner: str | None, lease_until: float | None) -> bool:
        """Nobody holds the row: no owner, an expired lease, or an owner that is provably dead
        (a process of this host that no longer runs: taken over at once instead of waiting for
        the lease to run out). A reused PID only delays the takeover until the lease expires."""
        return not lease_owner or (lease_until or 0) < time.time() or self.dead_local(lease_owner)

    def dead_local(self, lease_owner: str | None) -> bool:
        try:
            host, pid_s, _ = (lease_owner or "").split(":", 2)
            pid = int(pid_s)
        except ValueError:
            return False
        if host != socket.gethostname() or pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def started(self) -> None:
        """Called after taking a lease: make sure the heartbeat runs."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._beat, name="groundwork-leases", daemon=True)
            self._thread.start()

    def renew(self) -> None:
        self._set_own_expiry(self.until())

    def _set_own_expiry(self, until: float) -> None:
        for table in TABLES:
            try:
                with self.db.transaction() as c:
                    c.execute(f"UPDATE {table} SET lease_until=? WHERE lease_owner=?", (until, self.owner))
            except sqlite3.OperationalError as exc:  # table not created in this data folder (yet)
                if "no such" not in str(exc):
                    raise

    def _beat(self) -> None:
        while not self._stop.wait(max(self.seconds / 3, 0.2)):
            try:
                self.renew()
            except sqlite3.ProgrammingError:  # the database was closed: nothing left to hold
                return
            except Exception:  # noqa: BLE001 - a missed beat is retried; a lease lost is taken over safely
                log.exception("lease heartbeat failed")

    def stop(self) -> None:
        """Stop renewing and give up every row this process holds (its lease expires now), so
        the next holder — another process, or a new workspace in this one — need not wait out
        the lease for work this one has stopped doing."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=2)
        self._set_own_expiry(0.0)
