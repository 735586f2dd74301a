"""What Groundwork keeps about the people who use it, and how it forgets.

Stored per question (rag_core/feedback.py): who asked, when, the knowledge bases, the question,
the answer with its citations, scores and timings; a rating, reason and comment when given;
what retrieval learnt from that rating (retrieval/feedback_signals.py). Saved conversations
(rag_core/threads.py) hold their questions and answers until their owner deletes them. API
keys hold a hash of the secret, its owner and label (rag_core/api_keys.py).

- Retention: a knowledge base's `retention_days` (0 = keep) bounds how long questions asked
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


def purge_expired(db: Database, retention: dict[str, int], now: float | None = None) -> int:
    """Delete logged questions older than the retention of a knowledge base they involve
    (`retention`: kb_id → days, 0 = keep). Returns how many were deleted."""
    now = time.time() if now is None else now
    limits = {k: d for k, d in retention.items() if d and d > 0}
    if not limits:
        return 0
    oldest_kept = now - min(limits.values()) * 86400
    doomed = []
    for r in db.query("SELECT query_id, ts, kb_ids FROM queries WHERE ts < ?", (oldest_kept,)):
        days = [limits[k] for k in json.loads(r["kb_ids"]) if k in limits]
        if days and r["ts"] < now - min(days) * 86400:
            doomed.append(r["query_id"])
    return _delete_queries(db, doomed)


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
