"""What Groundwork keeps about the people who use it, and how it forgets.

Stored per question (rag_core/feedback.py): who asked, when, the knowledge bases, the question,
the answer with its citations, scores and timings; a rating, reason and comment when given;
what retrieval learnt from that rating (retrieval/feedback_signals.py). Saved conversations
(rag_core/threads.py) hold their questions and answers until their owner deletes them. API
keys hold a hash of the secret, its owner and label (rag_core/api_keys.py).

- What is logged: `RAG_QUERY_LOG` for the deployment, and a knowledge base's `query_log` for
  questions asked in it: "full", "anonymous" (no record of who asked: the row's user is empty,
  it joins no conversation, and per-person figures leave it out) or "off" (no row, and no
  answer-cache entry, so nothing the person asked is written to disk). A question asked over
  several knowledge bases is logged at the strictest of their levels and the deployment's: a
  knowledge base can ask for less than the deployment, never more (`log_level`).
- Retention: `RAG_QUERY_LOG_RETENTION_DAYS` bounds every logged question; a knowledge base's `retention_days` (0 = keep) bounds how long questions asked
  in it stay in the log; a question asked over several knowledge bases goes at the shortest
  retention among them. Feedback and learnt records go with their question (foreign keys).
  `purge_expired` runs when a workspace opens and then at most hourly as answers are logged
  (`maybe_purge`), and on demand (`python -m rag_core purge`).
- A user deletes their own logged questions (with their feedback); their conversations they
  delete in the chat page.
- An admin exports (JSON) or erases a user's data: log, feedback, learnt records,
  conversations and remembered choices. API keys are credentials, not data: erasing does not
  revoke them (`api-key revoke` does), so an erased user who still holds a key can still sign in.
"""

from __future__ import annotations

import json
import time

from .db import Database

PURGE_EVERY_S = 3600.0
LOG_LEVELS = ("full", "anonymous", "off")  # least to most private
ANONYMOUS = ""  # the user recorded for an anonymous question (the no-auth operator is NULL)


def log_level(deployment: str, kb_levels: list[str]) -> str:
    """The strictest of the deployment's level and the knowledge bases' own ("" = the
    deployment's)."""
    levels = [deployment, *(lv for lv in kb_levels if lv)]
    for lv in levels:
        if lv not in LOG_LEVELS:
            raise ValueError(f"query log must be one of {', '.join(LOG_LEVELS)}, not {lv!r}")
    return max(levels, key=LOG_LEVELS.index)


def log_notice(deployment: str, kbs) -> list[str]:
    """What Analytics can show under the levels in force, in words (empty: everything)."""
    notes = []
    if deployment == "off":
        return ["Questions are not logged on this deployment (RAG_QUERY_LOG=off): Analytics has nothing new to show; "
                "answers asked before it was switched off stay until their retention ends."]
    if deployment == "anonymous":
        notes.append("Questions are logged without who asked (RAG_QUERY_LOG=anonymous): figures per person and "
                     "'my questions' leave them out.")
    off = sorted(kb.name for kb in kbs if kb.query_log == "off")
    anon = sorted(kb.name for kb in kbs if kb.query_log == "anonymous") if deployment == "full" else []
    if off:
        notes.append(f"Questions asked in {', '.join(off)} are not logged: they do not appear here.")
    if anon:
        notes.append(f"Questions asked in {', '.join(anon)} are logged without who asked.")
    return notes


def purge_expired(db: Database, retention: dict[str, int], now: float | None = None, everything: int = 0) -> int:
    """Delete logged questions older than the retention of a knowledge base they involve
    (`retention`: kb_id → days, 0 = keep), and any older than `everything` days (the
    deployment's RAG_QUERY_LOG_RETENTION_DAYS; 0 = no such bound). Returns how many were deleted."""
    now = time.time() if now is None else now
    limits = {k: d for k, d in retention.items() if d and d > 0}
    gone = 0
    if everything > 0:
        old = [r[0] for r in db.query("SELECT query_id FROM queries WHERE ts < ?", (now - everything * 86400,))]
        gone = _delete_queries(db, old)
    if not limits:
        return gone
    oldest_kept = now - min(limits.values()) * 86400
    doomed = []
    for r in db.query("SELECT query_id, ts, kb_ids FROM queries WHERE ts < ?", (oldest_kept,)):
        days = [limits[k] for k in json.loads(r["kb_ids"]) if k in limits]
        if days and r["ts"] < now - min(days) * 86400:
            doomed.append(r["query_id"])
    return gone + _delete_queries(db, doomed)


def _delete_queries(db: Database, query_ids: list[str]) -> int:
    with db.transaction() as c:
        for start in range(0, len(query_ids), 500):
            part = query_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            # thread messages keep the conversation; only their link to the log goes
            c.execute(f"UPDATE thread_messages SET query_id=NULL WHERE query_id IN ({marks})", part)
            c.execute(f"DELETE FROM queries WHERE query_id IN ({marks})", part)  # feedback, signals cascade
    return len(query_ids)


def delete_user_questions(db: Database, user: str | None) -> int:
    """Every logged question of this user (and its feedback and learnt records)."""
    ids = [r[0] for r in db.query("SELECT query_id FROM queries WHERE user IS ?", (user,))]
    return _delete_queries(db, ids)


def export_user(db: Database, threads, user: str | None) -> dict:
    """Everything stored about a user, as JSON-ready data (`threads`: the ThreadStore)."""
    qs = db.query("SELECT q.query_id, q.ts, q.kb_ids, q.question, q.answer, q.citations, q.abstained, "
                  "f.rating, f.reason, f.comment FROM queries q LEFT JOIN feedback f ON f.query_id=q.query_id "
                  "WHERE q.user IS ? ORDER BY q.ts", (user,))
    convs = [{"thread_id": t.thread_id, "title": t.title, "created": t.created,
              "messages": [{"role": m["role"], "content": m["content"]} for m in threads.messages(t.thread_id, user)]}
             for t in sorted(threads.list(user), key=lambda t: t.created)]
    return {
        "user": user,
        "exported_at": time.time(),
        "questions": [{**dict(r), "kb_ids": json.loads(r["kb_ids"]), "citations": json.loads(r["citations"]),
                       "abstained": bool(r["abstained"])} for r in qs],
        "conversations": convs,
    }


def erase_user(db: Database, threads, user: str | None) -> dict:
    """Delete a user's log, feedback, learnt records and conversations (`threads`: the
    ThreadStore). The caller forgets what else it remembers of them."""
    questions = delete_user_questions(db, user)
    convs = threads.list(user)
    for t in convs:
        threads.delete(t.thread_id, user)
    return {"user": user, "questions": questions, "conversations": len(convs)}
