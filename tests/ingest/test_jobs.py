"""Background ingestion jobs: queued in the app database, run by the worker, searchable by
keyword before their vectors exist, cancellable without leaving half-done documents, and
resumed after the worker process is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]


def records(n: int, start: int = 0) -> bytes:
    return "\n".join(json.dumps({"_id": f"r{i}", "title": f"Record {i}",
                                 "text": f"Record {i} is about topic {i % 23} and the widget number {i}."})
                     for i in range(start, start + n)).encode()


def wait(cond, timeout=120.0, every=0.05):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(every)
    return False


def test_upload_job_runs_in_the_background(tmp_path):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Notes", caller=Caller.operator())
    job_id = ws.submit_upload("Notes", [("bees.md", b"# Bees\n\nA hive holds about 50,000 bees in summer.\n"),
                                        ("empty.txt", b""), ("bees-copy.md", b"# Bees\n\nA hive holds about 50,000 bees in summer.\n")], caller=Caller.operator())
    assert wait(lambda: not ws.jobs.get(job_id).active)
    job = ws.jobs.get(job_id)
    assert job.status == "done", job.error
    assert [(r["file"], r["status"]) for r in job.reports] == [
        ("bees.md", "ingested"), ("empty.txt", "failed"), ("bees-copy.md", "duplicate")]
    assert "empty" in job.reports[1]["reason"]
    assert job.summary().startswith("Done: 1 ingested, 1 duplicate, 1 failed")
    assert not (tmp_path / "data" / "uploads" / job_id).exists()  # the job's copies are cleaned up
    docs = ws.appdb.list_documents(ws.get_kb("Notes", caller=Caller.operator()).kb_id, status="indexed")
    assert [d.source for d in docs] == ["bees.md"]
    assert "50,000" in ws.ask(["Notes"], "How many bees are in a hive?", caller=Caller.operator()).text
    ws.close()


def test_cancel_keeps_indexed_documents_and_removes_the_rest(tmp_path):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Big", caller=Caller.operator())
    kb_id = ws.get_kb("Big", caller=Caller.operator()).kb_id
    job_id = ws.submit_upload("Big", [("big.jsonl", records(3000))], caller=Caller.operator())
    # searchable by keyword while the vectors are still being computed
    assert wait(lambda: ws.jobs.get(job_id).progress.get("chunks_done", 0) > 0)
    assert ws.search(["Big"], "widget number 2999", k=1, mode="keyword", caller=Caller.operator()).results[0].chunk.doc_id == "r2999"
    share = ws.indexing_progress(["Big"], caller=Caller.operator())
    assert share is not None and 0 < share < 1
    ws.jobs.cancel(job_id)
    assert wait(lambda: not ws.jobs.get(job_id).active)
    job = ws.jobs.get(job_id)
    assert job.status == "cancelled" and "removed" in job.error
    left = ws.appdb.list_documents(kb_id, status=None)
    assert left and all(d.status == "indexed" for d in left) and len(left) < 3000
    # nothing half-done: every remaining document has all its chunks, each with its vector
    ids = [c.chunk_id for d in left for c in ws.store.document_chunks(kb_id, d.doc_id)]
    assert len(ids) == sum(d.chunks for d in left)
    assert (abs(ws.store.vectors_for(ids)).sum(axis=1) > 0).all()
    assert ws.store.count(kb_id) == len(ids)
    assert ws.indexing_progress(["Big"], caller=Caller.operator()) is None
    ws.close()


WORKER = """
import sys
from rag_core.config import get_settings
from rag_core.workspace import Workspace
ws = Workspace(get_settings(sys.argv[1]))
job = ws.jobs.claim_next()
ws.job_runner.run(job)
"""


def test_a_killed_worker_is_resumed_without_loss_or_duplicates(tmp_path):
    data = tmp_path / "data"
    ws = Workspace(get_settings(data))
    ws.create_kb("Big", caller=Caller.operator())
    kb_id = ws.get_kb("Big", caller=Caller.operator()).kb_id
    job_id = ws.jobs.submit(kb_id, [("a.jsonl", records(400)), ("b.jsonl", records(400, start=400)),
                                    ("notes.md", b"# Tapirs\n\nThe tapir uses its snout to grab leaves.\n")])
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(data)], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # kill it once it has reported a file and is computing vectors or reading the next
    assert wait(lambda: len(ws.jobs.get(job_id).reports) >= 1 or proc.poll() is not None)
    assert proc.poll() is None, "the worker finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert ws.jobs.get(job_id).status == "running"  # as the dead worker left it

    ws.job_runner.start()  # what the app does on start: orphans are queued again and resumed
    assert wait(lambda: ws.jobs.get(job_id).status not in ("queued", "running"), timeout=300)
    job = ws.jobs.get(job_id)
    assert job.status == "done", job.error
    assert sorted(r["file"] for r in job.reports) == ["a.jsonl", "b.jsonl", "notes.md"]  # each reported once
    docs = ws.appdb.list_documents(kb_id, status=None)
    assert len(docs) == 801 and all(d.status == "indexed" for d in docs)
    assert ws.store.count(kb_id) == sum(d.chunks for d in docs)  # no duplicate chunks
    assert ws.search(["Big"], "tapir snout", k=1, caller=Caller.operator()).results[0].chunk.source == "notes.md"
    ws.close()


def encrypted_pdf(password: str) -> bytes:
    import io

    from pypdf import PdfReader, PdfWriter

    from tests.helpers import make_pdf

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(make_pdf(["The vault combination is kept by the night porter."]))).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=None, algorithm="AES-256")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def test_an_encrypted_pdf_waits_for_its_password_which_is_never_stored(tmp_path):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Locked", caller=Caller.operator())
    job_id = ws.submit_upload("Locked", [("vault.pdf", encrypted_pdf("s3cret-pw")), ("note.md", b"# Note\n\nplain\n")], caller=Caller.operator())
    assert wait(lambda: not ws.jobs.get(job_id).active)
    job = ws.jobs.get(job_id)
    assert ws.jobs.locked(job) == ["vault.pdf"]
    assert any(p.name.endswith(".pdf") for p in (tmp_path / "data" / "uploads" / job_id).iterdir())  # kept for the retry

    wrong = ws.retry_with_password(job_id, "vault.pdf", "guess", caller=Caller.operator())
    assert wait(lambda: not ws.jobs.get(wrong).active)
    assert ws.jobs.get(wrong).reports[0]["reason"] == "encrypted PDF: the password is wrong"
    right = ws.retry_with_password(wrong, "vault.pdf", "s3cret-pw", caller=Caller.operator())
    assert wait(lambda: not ws.jobs.get(right).active)
    assert ws.jobs.get(right).reports[0]["status"] == "ingested"
    assert "night porter" in ws.ask(["Locked"], "Who keeps the vault combination?", caller=Caller.operator()).text
    # the password is in no file under the data folder (database included)
    for f in (tmp_path / "data").rglob("*"):
        if f.is_file():
            assert b"s3cret-pw" not in f.read_bytes(), f
    assert not (tmp_path / "data" / "uploads" / job_id).exists() and not (tmp_path / "data" / "uploads" / right).exists()
    ws.close()


def test_closing_the_workspace_stops_a_running_job_and_the_next_start_resumes_it(tmp_path):
    """Workspace.close used to leave a job running on the closed workspace after its 10 s join
    (and the Ingestor's loader process behind): now the job stops at its next embedding group,
    goes back to the queue with no holder, and the next start finishes it."""
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Big", caller=Caller.operator())
    job_id = ws.submit_upload("Big", [("big.jsonl", records(3000))], caller=Caller.operator())
    assert wait(lambda: ws.jobs.get(job_id).progress.get("chunks_done", 0) > 0)
    runner = ws.job_runner
    ws.close()
    assert not runner._thread.is_alive()
    import sqlite3

    c = sqlite3.connect(tmp_path / "data" / "groundwork.db")
    status, holder = c.execute("SELECT status, lease_owner FROM ingest_jobs WHERE job_id=?", (job_id,)).fetchone()
    c.close()
    assert status == "queued" and holder is None
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.start_worker()
    assert wait(lambda: not ws.jobs.get(job_id).active, timeout=600)
    assert ws.jobs.get(job_id).status == "done"
    kb_id = ws.get_kb("Big", caller=Caller.operator()).kb_id
    assert len(ws.appdb.list_documents(kb_id, status="indexed")) == 3000
    ws.close()


def test_a_running_job_says_how_long_it_has_taken_then_how_long_is_left():
    """Reading the first file there is no rate yet: the time so far; after a file, an
    estimate from the files read; vectors: an estimate from the chunks embedded (a stale
    reading estimate is not carried into the vector phase)."""
    from rag_core.ingest.jobs import Job

    now = time.time()
    job = Job("j", "kb", None, "running", now, now, None, [("a", "a.pdf"), ("b", "b.pdf")], [],
              {"phase": "reading", "files_done": 0, "file": "a.pdf", "since": now - 40})
    assert job.summary() == "reading 0/2 files · a.pdf · 40 s so far"
    job.progress.update(files_done=1, file="b.pdf", eta_s=38.0)
    assert job.summary() == "reading 1/2 files · b.pdf, about 38 s left to read"
    job.progress.update(phase="embedding", chunks_done=0, chunks_total=400, eta_s=None)
    assert job.summary() == "searchable now; computing vectors 0/400 chunks (0%)"
    job.progress.update(chunks_done=100, eta_s=300.0)
    assert job.summary().endswith("(25%), about 5 min left")


def test_the_time_left_counts_down_between_updates():
    """Issue 50: "about 3 s left" stayed for 6 s; the estimate now counts from when it was made,
    and reads "almost done" once spent rather than a stale figure."""
    from rag_core.ingest.jobs import Job

    now = time.time()
    job = Job("j", "kb", None, "running", now, now, None, [("a", "a.pdf"), ("b", "b.pdf")], [],
              {"phase": "reading", "files_done": 1, "file": "b.pdf", "eta_s": 40.0, "eta_at": now - 10})
    assert job.summary() == "reading 1/2 files · b.pdf, about 30 s left to read"
    job.progress.update(eta_at=now - 50)
    assert job.summary() == "reading 1/2 files · b.pdf, almost done reading"
    job.progress.update(phase="embedding", chunks_done=100, chunks_total=400, eta_s=300.0, eta_at=now - 60)
    assert job.summary().endswith("(25%), about 4 min left")


def test_the_reading_line_names_the_file_being_read(tmp_path):
    """Issue 50: the line named a file already finished. After the first of three files, the
    progress names the second."""

    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Three", caller=Caller.operator())
    seen = []
    real = ws.jobs.set_progress

    def spy(job_id, **p):
        if p.get("phase") == "reading" and p.get("files_done"):
            seen.append((p["files_done"], p["file"]))
        return real(job_id, **p)

    ws.jobs.set_progress = spy
    job_id = ws.submit_upload("Three", [(f"{n}.txt", f"File {n} says {n} things.".encode()) for n in "abc"],
                              caller=Caller.operator())
    deadline = time.time() + 60
    while ws.jobs.get(job_id).active and time.time() < deadline:
        time.sleep(0.1)
    assert seen[:2] == [(1, "b.txt"), (2, "c.txt")], seen
    ws.close()
