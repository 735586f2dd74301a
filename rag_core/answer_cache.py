"""Answers remembered: a repeated question is served from the data folder in milliseconds.

The key is everything an answer depends on (`cache_key`), hashed:
- the question, normalised (Unicode form, case, spaces, closing punctuation) and the
  conversation before it (a follow-up means something else after another question);
- the knowledge bases, each with its settings and instructions, and the question's scope
  (chosen documents, date range) and route override;
- the knowledge bases' content versions (appdb.CONTENT_VERSIONS: the database bumps them on
  every ingest, delete, re-index, date, language or access change of a document, whatever
  code made it): any change gives another key. Access is decided per knowledge base, so the
  knowledge bases and the scope fix the documents a caller sees: two callers share an entry
  only when they see exactly the same documents, and an answer never reaches someone who may
  not see one of its sources (a hidden knowledge base reads as missing before any lookup);
- the feedback records that can reorder this question's passages (feedback_signals.reaching);
- the settings and models (answer model, fast model, embedder, reader, answer policy in
  force with its calibration, local model files by size and date), CACHE_VERSION (bumped
  when answers change shape), and the fingerprint of the answer path itself
  (`answer_path_fingerprint`: every source and data file of the package, so an upgrade that
  changes how answers are made, or a new reader scale in reader.json, misses).

A stale entry is never invalidated in place: nothing can reach it once its key changed, and
the least recently used entries beyond `answer_cache_entries` are deleted. One thing does
delete entries at once: a thumbs down saying an answer is wrong, or not in the documents
(`evict_answer`): every entry serving that answer goes, whoever it would be served to, so a
bad answer is computed afresh rather than repeated to everyone who asks.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import unicodedata
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from .db import Database
from .models import Answer

CACHE_VERSION = 2
# Thumbs-down reasons (feedback.REASONS) that say the answer itself is bad: it is evicted.
EVICTING_REASONS = ("wrong", "not in my documents")
_PACKAGE = Path(__file__).resolve().parent

SCHEMA = """
CREATE TABLE IF NOT EXISTS answer_cache (
    key TEXT PRIMARY KEY,
    answer TEXT NOT NULL,
    created REAL NOT NULL,
    used REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS answer_cache_used ON answer_cache(used);
"""

_END = re.compile(r"[\s.?!。？！¿¡]+$")


def normalise_question(q: str) -> str:
    """'  What is  R? ' and 'what is r' are one question; words and their order are kept."""
    q = unicodedata.normalize("NFKC", q or "").casefold()
    return _END.sub("", " ".join(q.split()))


@lru_cache(maxsize=1)
def answer_path_fingerprint(root: Path = _PACKAGE) -> str:
    """sha256 over the package's code and data files (.py, .json: prompts, the reader's
    calibration, the selection weights), by path and content; read once per process. The
    reader's ONNX weights are keyed by their own checked digest (Workspace._cache_key)."""
    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.suffix in (".py", ".json") and f.is_file() and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(root)).encode())
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def cache_key(parts: dict[str, Any]) -> str:
    """sha256 of the parts (JSON, keys sorted): the caller assembles them (Workspace)."""
    raw = json.dumps({"v": CACHE_VERSION, "code": answer_path_fingerprint(), **parts}, sort_keys=True, default=str,
                     ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def answer_digest(text: str) -> str:
    """What identifies an answer for eviction: its text, spaces normalised."""
    return hashlib.sha256(" ".join((text or "").split()).encode("utf-8")).hexdigest()


class AnswerCache:
    def __init__(self, db: Database, max_entries: int = 5000):
        self.db = db
        self.max_entries = max_entries
        db.executescript(SCHEMA)
        db.add_columns("answer_cache", {"answer_sha": "TEXT"})  # before eviction by rating
        db.executescript("CREATE INDEX IF NOT EXISTS answer_cache_sha ON answer_cache(answer_sha);")
        self._puts = 0

    def get(self, key: str) -> Answer | None:
        row = self.db.query_one("SELECT answer, created FROM answer_cache WHERE key=?", (key,))
        if row is None:
            return None
        try:
            a = Answer.from_dict(json.loads(row["answer"]))
        except (ValueError, TypeError):  # written by another version: a miss
            return None
        with self.db.transaction() as c:
            c.execute("UPDATE answer_cache SET used=?, hits=hits+1 WHERE key=?", (time.time(), key))
        a.cached = True
        a.cached_at = datetime.fromtimestamp(row["created"], tz=timezone.utc).isoformat(timespec="seconds")
        return a

    def put(self, key: str, answer: Answer) -> None:
        now = time.time()
        with self.db.transaction() as c:
            c.execute("INSERT OR REPLACE INTO answer_cache (key, answer, created, used, hits, answer_sha) "
                      "VALUES (?,?,?,?,0,?)",
                      (key, json.dumps(answer.to_dict(), ensure_ascii=False), now, now, answer_digest(answer.text)))
        self._puts += 1
        if self._puts % 50 == 1:
            self.evict()

    def evict(self) -> int:
        """Delete the least recently used entries beyond max_entries."""
        n = self.db.query_one("SELECT COUNT(*) AS n FROM answer_cache")["n"]
        extra = n - self.max_entries
        if extra <= 0:
            return 0
        with self.db.transaction() as c:
            c.execute("DELETE FROM answer_cache WHERE key IN (SELECT key FROM answer_cache ORDER BY used LIMIT ?)",
                      (extra,))
        return extra

    def evict_answer(self, text: str) -> int:
        """Delete every entry serving this answer (a thumbs down said it is wrong)."""
        with self.db.transaction() as c:
            return c.execute("DELETE FROM answer_cache WHERE answer_sha=?", (answer_digest(text),)).rowcount

    def clear(self) -> int:
        with self.db.transaction() as c:
            return c.execute("DELETE FROM answer_cache").rowcount

    def stats(self) -> dict[str, int]:
        r = self.db.query_one("SELECT COUNT(*) AS n, COALESCE(SUM(hits), 0) AS hits FROM answer_cache")
        return {"entries": int(r["n"]), "hits": int(r["hits"])}
