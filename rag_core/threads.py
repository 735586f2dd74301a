"""Conversations, saved per user in the app database: a thread list to resume after a
reload or a sign-out, each message with its answer (citations, scores) and its query-log id
(so the feedback given on it stays attached). A thread is only ever its owner's: every call
takes the user and answers "not found" for anyone else's thread."""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass

from .db import Database
from .errors import InputError, NotFound
from .models import Answer
from .text.analysis import STOPWORDS

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_user ON threads(user, updated);
CREATE TABLE IF NOT EXISTS thread_messages (
    thread_id TEXT NOT NULL REFERENCES threads(thread_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    answer TEXT,
    query_id TEXT,
    PRIMARY KEY (thread_id, seq)
);
"""
LOCAL = "local"  # the owner of threads when nobody signs in


@dataclass
class Thread:
    thread_id: str
    title: str
    created: float
    updated: float
    messages: int = 0


_TITLE_WORD = re.compile(r"[\w][\w'’.+#-]*")
_ASKING = {"many", "much", "please", "explain", "tell", "show", "give", "describe", "list", "find", "want", "need", "know",
           "way", "ways", "possible", "help", "me", "my", "we", "us", "you", "your"}


def title_for(question: str, words: int = 6) -> str:
    """A conversation's title from its first question, offline: its topic words in order
    ("How do I quit R?" → "Quit R", "What is the capital of France?" → "Capital France"), the
    question itself when it has none."""
    terms = [w.strip("'’.-") for w in _TITLE_WORD.findall(question)]
    terms = [w for w in terms if w and w.lower() not in STOPWORDS and w.lower() not in _ASKING
             and (len(w) > 1 or w.isupper())]
    if not terms:
        return " ".join(question.split())[:80] or "New chat"
    title = " ".join(terms[:words])
    return (title[0].upper() + title[1:])[:80]


def _thread(r) -> Thread:
    return Thread(r["thread_id"], r["title"], r["created"], r["updated"], r["n"])


class ThreadStore:
    def __init__(self, db: Database):
        self.db = db
        db.executescript(SCHEMA)

    def _own(self, thread_id: str, user: str | None) -> None:
        if not self.db.query_one("SELECT 1 FROM threads WHERE thread_id=? AND user=?", (thread_id, user or LOCAL)):
            raise NotFound("no such conversation")

    def create(self, user: str | None, title: str = "New chat") -> str:
        tid = uuid.uuid4().hex
        now = time.time()
        with self.db.transaction() as c:
            c.execute("INSERT INTO threads VALUES (?,?,?,?,?)", (tid, user or LOCAL, title[:120], now, now))
        return tid

    _SELECT = ("SELECT t.*, (SELECT COUNT(*) FROM thread_messages m WHERE m.thread_id = t.thread_id) AS n "
               "FROM threads t WHERE t.user=?")

    def list(self, user: str | None) -> list[Thread]:
        """The user's threads, most recently used first, with their message counts."""
        return [_thread(r) for r in self.db.query(f"{self._SELECT} ORDER BY t.updated DESC", (user or LOCAL,))]

    def get(self, thread_id: str, user: str | None) -> Thread:
        r = self.db.query_one(f"{self._SELECT} AND t.thread_id=?", (user or LOCAL, thread_id))
        if r is None:
            raise NotFound("no such conversation")
        return _thread(r)

    def rename(self, thread_id: str, user: str | None, title: str) -> None:
        if not title.strip():
            raise InputError("a conversation needs a name")
        self._own(thread_id, user)
        with self.db.transaction() as c:
            c.execute("UPDATE threads SET title=? WHERE thread_id=?", (title.strip()[:120], thread_id))

    def delete(self, thread_id: str, user: str | None) -> None:
        self._own(thread_id, user)
        with self.db.transaction() as c:
            c.execute("DELETE FROM thread_messages WHERE thread_id=?", (thread_id,))
            c.execute("DELETE FROM threads WHERE thread_id=?", (thread_id,))

    def add(self, thread_id: str, user: str | None, role: str, content: str, answer: Answer | None = None,
            query_id: str | None = None) -> None:
        self._own(thread_id, user)
        with self.db.transaction() as c:
            seq = c.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM thread_messages WHERE thread_id=?",
                            (thread_id,)).fetchone()[0]
            c.execute("INSERT INTO thread_messages VALUES (?,?,?,?,?,?)",
                      (thread_id, seq, role, content, json.dumps(answer.to_dict()) if answer else None, query_id))
            # the first question names the thread: its topic words (five threads that all
            # read "How do I quit R?" told nothing apart; the list adds date and length)
            if seq == 0 and role == "user":
                c.execute("UPDATE threads SET title=? WHERE thread_id=? AND title='New chat'",
                          (title_for(content), thread_id))
            c.execute("UPDATE threads SET updated=? WHERE thread_id=?", (time.time(), thread_id))

    def drop_last(self, thread_id: str, user: str | None, n: int = 1) -> None:
        """Remove the last n messages (regenerate replaces the last question's answer)."""
        self._own(thread_id, user)
        with self.db.transaction() as c:
            c.execute("DELETE FROM thread_messages WHERE thread_id=? AND seq IN (SELECT seq FROM thread_messages "
                      "WHERE thread_id=? ORDER BY seq DESC LIMIT ?)", (thread_id, thread_id, n))

    def messages(self, thread_id: str, user: str | None) -> list[dict]:
        """In the chat page's shape: {"role", "content", "answer"?, "query_id"?}."""
        self._own(thread_id, user)
        out = []
        for r in self.db.query("SELECT * FROM thread_messages WHERE thread_id=? ORDER BY seq", (thread_id,)):
            m = {"role": r["role"], "content": r["content"]}
            if r["answer"]:
                m["answer"] = Answer.from_dict(json.loads(r["answer"]))
                m["query_id"] = r["query_id"]
            out.append(m)
        return out

    def markdown(self, thread_id: str, user: str | None) -> str:
        """The conversation as Markdown, answers with their sources and scores."""
        title = self.db.query_one("SELECT title FROM threads WHERE thread_id=?", (thread_id,))
        lines = [f"# {title['title'] if title else 'Conversation'}", ""]
        for m in self.messages(thread_id, user):
            if m["role"] == "user":
                lines += [f"**You:** {m['content']}", ""]
                continue
            a: Answer = m["answer"]
            lines += [f"**Groundwork:** {a.text}", ""]
            if not a.abstained:
                aq = "not judged" if a.answers_question is None else f"{a.answers_question:.0%}"
                lines.append(f"_Supported {a.grounding_score:.0%} · answers the question {aq} · "
                             f"confidence {a.confidence:.0%}_")
                lines += [f"- [{c.n}] {c.source}, page {c.page}" + (f", {c.date}" if c.date else "")
                          for c in a.citations]
                if a.conflicts:
                    from .models import conflict_note

                    lines += ["", *(f"> {conflict_note(cf)}" for cf in a.conflicts)]
            lines.append("")
        return "\n".join(lines)


class UserThreads:
    """One user's conversations: the ThreadStore with the user fixed, so an edge cannot pass
    somebody else's name (Workspace.conversations(caller=...) makes it)."""

    def __init__(self, store: ThreadStore, user: str | None):
        self._store = store
        self.user = user

    def create(self, title: str = "New chat") -> str:
        return self._store.create(self.user, title)

    def list(self) -> list[Thread]:
        return self._store.list(self.user)

    def get(self, thread_id: str) -> Thread:
        return self._store.get(thread_id, self.user)

    def rename(self, thread_id: str, title: str) -> None:
        self._store.rename(thread_id, self.user, title)

    def delete(self, thread_id: str) -> None:
        self._store.delete(thread_id, self.user)

    def add(self, thread_id: str, role: str, content: str, answer: Answer | None = None,
            query_id: str | None = None) -> None:
        self._store.add(thread_id, self.user, role, content, answer, query_id)

    def drop_last(self, thread_id: str, n: int = 1) -> None:
        self._store.drop_last(thread_id, self.user, n)

    def messages(self, thread_id: str) -> list[dict]:
        return self._store.messages(thread_id, self.user)

    def markdown(self, thread_id: str) -> str:
        return self._store.markdown(thread_id, self.user)
