"""Ingestion jobs: uploads are queued in the app database and run by a background worker,
so the page that submitted them returns at once, a closed tab loses nothing, and a restarted
app resumes what was running.

A job holds its files (copied under the data folder, so they outlive the upload request),
its progress, and the per-file reports as they are made. One worker thread per process
claims queued jobs one at a time; a job whose worker process died is queued again on the
next start and skips the files it had already reported. Cancelling stops at the next file
or embedding group: fully indexed documents stay, the job's documents still waiting for
vectors are removed (nothing half-done remains).
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..leases import Leases
from ..process import trim_heap
from ..db import Database
from ..errors import InputError, NotFound
from ..models import FileReport
from .pipeline import Cancelled, Ingestor, delete_document

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS ingest_jobs (
    job_id TEXT PRIMARY KEY,
    kb_id TEXT NOT NULL,
    user TEXT,
    status TEXT NOT NULL,          -- queued, running, done, failed, cancelled
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    files TEXT NOT NULL,           -- [[stored path, display name], ...]
    reports TEXT NOT NULL,         -- [FileReport dict, ...] in file order, as they are made
    progress TEXT NOT NULL,        -- {"phase", "files_done", "files_total", "file", "chunks_done", "chunks_total", "eta_s"}
    error TEXT NOT NULL DEFAULT '',
    cancel INTEGER NOT NULL DEFAULT 0,
    owner_pid INTEGER,             -- unused since leases (rag_core/leases.py); kept for old folders
    lease_owner TEXT,
    lease_until REAL
);
CREATE INDEX IF NOT EXISTS ingest_jobs_status ON ingest_jobs(status, created);
"""
ACTIVE = ("queued", "running")


@dataclass
class Job:
    job_id: str
    kb_id: str
    user: str | None
    status: str
    created: float
    started: float | None
    finished: float | None
    files: list[tuple[str, str]]
    reports: list[dict]
    progress: dict = field(default_factory=dict)
    error: str = ""
    cancel: bool = False

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    def summary(self) -> str:
        """One line a person reads: where the job is, and how long is left."""
        p = self.progress
        if self.status == "queued":
            return f"waiting to start · {len(self.files)} file(s)"
        if self.status == "running":
            left = _left(p)
            if p.get("phase") == "embedding" and p.get("chunks_total"):
                eta = (f", about {_dur(left)} left" if left >= 1 else ", almost done") if left is not None else ""
                return (f"searchable now; computing vectors {p['chunks_done']}/{p['chunks_total']} chunks "
                        f"({p['chunks_done'] / p['chunks_total']:.0%}){eta}")
            line = f"reading {p.get('files_done', 0)}/{len(self.files)} files" + (f" · {p['file']}" if p.get("file") else "")
            if left is not None:
                line += f", about {_dur(left)} left to read" if left >= 1 else ", almost done reading"
            elif p.get("since"):  # the first file: no rate yet, so the time it has taken so far
                line += f" · {_dur(max(time.time() - p['since'], 0.0))} so far"
            return line
        counts = {s: sum(r["status"] == s for r in self.reports) for s in ("ingested", "duplicate", "failed")}
        head = {"done": "Done", "failed": "Failed", "cancelled": "Cancelled"}.get(self.status, self.status)
        tail = f" — {self.error}" if self.error else ""
        return (f"{head}: {counts['ingested']} ingested, {counts['duplicate']} duplicate, "
                f"{counts['failed']} failed{tail}")

    def locked_files(self) -> list[str]:
        """Files that failed for want of the right password (they wait for one)."""
        return JobQueue.locked(self)


def _left(p: dict) -> float | None:
    """Seconds left: the estimate, less the time since it was made (issue 50: "about 3 s left"
    stayed on screen for 6 s, until the next file or chunk batch updated it)."""
    if not p.get("eta_s"):
        return None
    return max(0.0, float(p["eta_s"]) - (time.time() - float(p.get("eta_at") or time.time())))


def _dur(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min"


def _job(r) -> Job:
    return Job(r["job_id"], r["kb_id"], r["user"], r["status"], r["created"], r["started"], r["finished"],
               [tuple(f) for f in json.loads(r["files"])], json.loads(r["reports"]), json.loads(r["progress"]),
               r["error"], bool(r["cancel"]))


LOCKED = ("encrypted PDF: a password is required", "encrypted PDF: the password is wrong")


class JobQueue:
    def __init__(self, db: Database, uploads_dir: Path):
        self.db = db
        self.uploads_dir = uploads_dir
        db.executescript(SCHEMA)
        db.add_columns("ingest_jobs", {"lease_owner": "TEXT", "lease_until": "REAL"})
        self.leases = Leases.of(db)
        # Passwords for encrypted PDFs live here, in this process's memory only, until the
        # worker reads them: never in the database or on disk. After a restart they are gone
        # and the file asks for its password again.
        self._passwords: dict[str, dict[str, str]] = {}
        self._pw_lock = threading.Lock()

    # ---- submitting ------------------------------------------------------------------
    def submit(self, kb_id: str, files: list[tuple[str, bytes]], user: str | None = None,
               passwords: dict[str, str] | None = None) -> str:
        """Queue (display name, content) files; the content is written under the data folder
        first, so the job survives the request, the tab and a restart. `passwords` (display
        name → password) open encrypted PDFs and are kept in memory only."""
        if not files:
            raise InputError("no files to add")
        job_id = uuid.uuid4().hex
        if passwords:
            with self._pw_lock:
                self._passwords[job_id] = dict(passwords)
        folder = self.uploads_dir / job_id
        folder.mkdir(parents=True, exist_ok=True)
        stored = []
        for i, (name, data) in enumerate(files):
            # Saved under a neutral name: the user's file name is data, not a path.
            p = folder / f"upload-{i}{Path(name).suffix.lower()[:12]}"
            p.write_bytes(data)
            stored.append((str(p), name))
        return self._insert(job_id, kb_id, stored, user)

    def _insert(self, job_id: str, kb_id: str, files: list[tuple[str, str]], user: str | None) -> str:
        with self.db.transaction() as c:
            c.execute(
                "INSERT INTO ingest_jobs (job_id, kb_id, user, status, created, files, reports, progress) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (job_id, kb_id, user, "queued", time.time(), json.dumps(files), "[]",
                 json.dumps({"files_total": len(files), "files_done": 0})),
            )
        return job_id

    # ---- reading ---------------------------------------------------------------------
    def get(self, job_id: str) -> Job:
        r = self.db.query_one("SELECT * FROM ingest_jobs WHERE job_id=?", (job_id,))
        if r is None:
            raise NotFound("no such ingestion job")
        return _job(r)

    def list(self, kb_id: str | None = None, limit: int = 20, user: str | None = None,
             all_users: bool = False) -> list[Job]:
        """Jobs of one user (the caller; None = the local operator's), or of everyone when
        `all_users` (admins): file names and reports are the uploader's business."""
        where, params = [], []
        if kb_id:
            where.append("kb_id=?")
            params.append(kb_id)
        if not all_users:
            where.append("user IS ?")
            params.append(user)
        q = "SELECT * FROM ingest_jobs" + (" WHERE " + " AND ".join(where) if where else "")
        return [_job(r) for r in self.db.query(q + " ORDER BY created DESC LIMIT ?", (*params, limit))]

    def active(self) -> list[Job]:
        return [_job(r) for r in self.db.query(
            "SELECT * FROM ingest_jobs WHERE status IN ('queued','running') ORDER BY created")]

    def cancel(self, job_id: str) -> None:
        with self.db.transaction() as c:
            c.execute("UPDATE ingest_jobs SET cancel=1 WHERE job_id=? AND status IN ('queued','running')", (job_id,))

    # ---- the worker's side -------------------------------------------------------------
    def requeue_orphans(self) -> int:
        """Running jobs whose worker's lease ran out (it died, hung, or its host went away) go
        back to the queue (resume)."""
        n = 0
        for r in self.db.query("SELECT job_id, lease_owner, lease_until FROM ingest_jobs WHERE status='running'"):
            if r["lease_owner"] == self.leases.owner or not self.leases.is_free(r["lease_owner"], r["lease_until"]):
                continue
            with self.db.transaction() as c:  # compare-and-set on the holder seen
                n += c.execute("UPDATE ingest_jobs SET status='queued', lease_owner=NULL, lease_until=NULL "
                               "WHERE job_id=? AND status='running' AND lease_owner IS ?",
                               (r["job_id"], r["lease_owner"])).rowcount
        return n

    def requeue(self, job_id: str) -> None:
        """Give a job this process holds back to the queue (the process is stopping)."""
        with self.db.transaction() as c:
            c.execute("UPDATE ingest_jobs SET status='queued', lease_owner=NULL, lease_until=NULL "
                      "WHERE job_id=? AND lease_owner=?", (job_id, self.leases.owner))

    def claim_next(self) -> Job | None:
        with self.db.transaction() as c:
            r = c.execute("SELECT job_id FROM ingest_jobs WHERE status='queued' ORDER BY created LIMIT 1").fetchone()
            if r is None:
                return None
            c.execute("UPDATE ingest_jobs SET status='running', lease_owner=?, lease_until=?, "
                      "started=COALESCE(started, ?) WHERE job_id=? AND status='queued'",
                      (self.leases.owner, self.leases.until(), time.time(), r[0]))
        self.leases.started()
        return self.get(r[0])

    def set_progress(self, job_id: str, **progress) -> None:
        with self.db.transaction() as c:
            r = c.execute("SELECT progress FROM ingest_jobs WHERE job_id=?", (job_id,)).fetchone()
            c.execute("UPDATE ingest_jobs SET progress=? WHERE job_id=?",
                      (json.dumps({**json.loads(r[0]), **progress}), job_id))

    def add_report(self, job_id: str, report: FileReport) -> None:
        with self.db.transaction() as c:
            r = c.execute("SELECT reports FROM ingest_jobs WHERE job_id=?", (job_id,)).fetchone()
            reports = json.loads(r[0]) + [report.to_dict()]
            c.execute("UPDATE ingest_jobs SET reports=? WHERE job_id=?", (json.dumps(reports), job_id))

    def cancel_requested(self, job_id: str) -> bool:
        r = self.db.query_one("SELECT cancel FROM ingest_jobs WHERE job_id=?", (job_id,))
        return bool(r and r[0])

    def take_passwords(self, job_id: str) -> dict[str, str]:
        with self._pw_lock:
            return self._passwords.pop(job_id, {})

    def finish(self, job_id: str, status: str, error: str = "") -> None:
        """Mark the job ended and drop its copies of the files, except encrypted PDFs that
        still need a password: those wait for `retry_locked` (a person types the password)."""
        job = self.get(job_id)  # files first, status last: whoever sees "ended" sees it cleaned up
        keep = {name for name in self.locked(job)}
        for path, name in job.files:
            if name not in keep:
                Path(path).unlink(missing_ok=True)
        if not keep:
            shutil.rmtree(self.uploads_dir / job_id, ignore_errors=True)
        self.take_passwords(job_id)
        with self.db.transaction() as c:
            c.execute("UPDATE ingest_jobs SET status=?, error=?, finished=?, lease_owner=NULL, lease_until=NULL "
                      "WHERE job_id=?",
                      (status, error, time.time(), job_id))

    @staticmethod
    def locked(job: Job) -> list[str]:
        """Files of an ended job that failed for want of the right password."""
        return [r["file"] for r in job.reports if r["status"] == "failed" and r["reason"] in LOCKED]

    def retry_locked(self, job_id: str, name: str, password: str, user: str | None = None) -> str:
        """A new job for one encrypted PDF of an ended job, opened with `password`."""
        job = self.get(job_id)
        if job.active or name not in self.locked(job):
            raise InputError(f"{name} is not waiting for a password")
        path = Path(next(p for p, n in job.files if n == name))
        if not path.exists():
            raise NotFound(f"the upload of {name} is no longer kept; add the file again")
        new_id = self.submit(job.kb_id, [(name, path.read_bytes())], user, passwords={name: password})
        path.unlink(missing_ok=True)
        with self.db.transaction() as c:  # the old report now points to the retry
            reports = [dict(r, reason=r["reason"] + " (retried with a password)") if r["file"] == name else r
                       for r in job.reports]
            c.execute("UPDATE ingest_jobs SET reports=? WHERE job_id=?", (json.dumps(reports), job_id))
        if not any(Path(p).exists() for p, _ in job.files):
            shutil.rmtree(self.uploads_dir / job_id, ignore_errors=True)
        return new_id


class JobRunner:
    """The background worker: one daemon thread per process, started by the app. It sleeps
    until woken by a submit (or every `poll_s`, for jobs queued by another process)."""

    def __init__(self, queue: JobQueue, ingestor_factory, appdb, store, get_kb, poll_s: float = 2.0):
        self.queue = queue
        self._ingestor_factory = ingestor_factory  # lazy: the embedding model loads on the first job
        self.appdb = appdb
        self.store = store
        self.get_kb = get_kb
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._loop, name="groundwork-ingest", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the worker. A job in progress stops at its next file or embedding group and goes
        back to the queue (the next start resumes it): nothing keeps running on a closed
        workspace."""
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("ingestion worker still busy %.0f s after stop", timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.queue.requeue_orphans()
                job = self.queue.claim_next()
                if job is None:
                    self._wake.wait(self.poll_s)
                    self._wake.clear()
                    continue
                self.run(job)
                trim_heap()
            except Exception:  # noqa: BLE001 - the worker must outlive any one job's bug
                log.exception("ingestion worker error")
                time.sleep(self.poll_s)

    def run(self, job: Job) -> None:
        """Run one claimed job to its end (also used directly by tests and the CLI)."""
        q = self.queue
        try:
            kb = self.get_kb(job.kb_id)
        except NotFound:
            q.finish(job.job_id, "failed", "the knowledge base was deleted")
            return
        done_names = {r["file"] for r in job.reports}  # resumed: those were reported before the restart
        todo = [(Path(p), name) for p, name in job.files if name not in done_names]
        ingestor: Ingestor = self._ingestor_factory()
        cancel = lambda: self._stop.is_set() or q.cancel_requested(job.job_id)  # noqa: E731
        started = time.time()
        base_done = len(job.reports)

        def on_file(done: int, total: int, name: str) -> None:
            # The reading ETA counts files (their sizes vary; a rough guide), once one is read.
            # `name` is the file just read: the line names the one being read now (issue 50).
            spent = time.time() - started
            reading = todo[done][1] if done < len(todo) else name
            q.set_progress(job.job_id, phase="reading", files_done=base_done + done, files_total=len(job.files),
                           file=reading, eta_s=round(spent / done * (total - done), 1) if done else None,
                           eta_at=time.time())

        last = [0.0]

        def on_vectors(done: int, total: int) -> None:
            now = time.time()
            if now - last[0] < 0.5 and done < total:
                return
            last[0] = now
            rate = done / max(now - vec_start[0], 1e-6)
            q.set_progress(job.job_id, phase="embedding", chunks_done=done, chunks_total=total,
                           eta_s=round((total - done) / rate, 1) if rate > 0 and done else None, eta_at=now)

        vec_start = [time.time()]
        try:
            if todo:
                q.set_progress(job.job_id, phase="reading", files_done=base_done, file=todo[0][1], since=started)
                secret = q.take_passwords(job.job_id)
                ingestor.ingest(kb, [p for p, _ in todo], display_names={p: n for p, n in todo},
                                progress=on_file, cancel=cancel, embed=False,
                                on_report=lambda r: q.add_report(job.job_id, r),
                                passwords={p: secret[n] for p, n in todo if n in secret})
            mine = {d for r in q.get(job.job_id).reports for d in r.get("doc_ids", [])}
            q.set_progress(job.job_id, phase="embedding", chunks_done=0, eta_s=None,
                           chunks_total=sum(d.chunks for d in self.appdb.waiting_for_vectors(kb.kb_id)
                                            if d.doc_id in mine))
            vec_start[0] = time.time()
            ingestor.fill_vectors(kb.kb_id, progress=on_vectors, cancel=cancel, doc_ids=mine)
            q.set_progress(job.job_id, phase="done", seconds=round(time.time() - started, 1))
            q.finish(job.job_id, "done")
        except Cancelled:
            if self._stop.is_set() and not q.cancel_requested(job.job_id):
                q.requeue(job.job_id)  # the process is stopping, not the user: resume later
                return
            removed = 0
            for r in q.get(job.job_id).reports:
                for doc_id in r.get("doc_ids", []):
                    d = self.appdb.get_document(kb.kb_id, doc_id)
                    if d is not None and d.status != "indexed":
                        removed += delete_document(self.appdb, self.store, kb.kb_id, doc_id)
            q.finish(job.job_id, "cancelled",
                     f"stopped; {removed} document(s) not yet fully indexed were removed" if removed else "stopped")
        except Exception as exc:  # noqa: BLE001 - reported on the job, the worker goes on
            log.exception("ingestion job %s failed", job.job_id)
            q.finish(job.job_id, "failed", f"{type(exc).__name__}: {exc}")
