"""API keys for the HTTP API: created for a user (with their groups and tenant) and a scope,
shown once, stored hashed, revocable at once.

A key reads `gwk_<id>_<secret>`. The id finds the row; the secret is compared with
`hmac.compare_digest` against its SHA-256. A plain hash is enough here (not a slow password
hash): the secret is 32 random bytes, so there is nothing to guess offline, and a request pays
microseconds, not the ~100 ms a password hash costs. Every request reads the row, so a revoked
key fails on its next request in every worker process (no cache to outlive a revocation).

Scopes nest: `read` (ask, search, read knowledge bases and documents, the caller's own threads and
feedback) ⊂ `write` (create, change and delete knowledge bases and documents, as far as the
access policy lets the key's user) ⊂ `admin` (the key acts as an admin: every knowledge base).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field

from .access import Caller
from .db import Database
from .errors import InputError, NotFound

SCOPES = ("read", "write", "admin")
PREFIX = "gwk_"
_KEY = re.compile(r"^gwk_([0-9a-f]{16})_([A-Za-z0-9_-]{20,100})$")

SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    key_id TEXT PRIMARY KEY,
    secret_sha256 TEXT NOT NULL,
    user TEXT NOT NULL,
    groups TEXT NOT NULL DEFAULT '',
    tenant TEXT,
    scope TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    created_by TEXT,
    revoked REAL,
    last_used REAL
);
CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys(user);
"""


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    user: str
    groups: tuple[str, ...]
    tenant: str | None
    scope: str
    label: str
    created: float
    created_by: str | None = None
    revoked: float | None = None
    last_used: float | None = None

    def caller(self) -> Caller:
        """Who a request with this key is: its user, groups and tenant; an admin only with the
        admin scope (least privilege: a read or write key of an admin user is not an admin)."""
        return Caller.of(self.user, list(self.groups), self.tenant, admin=self.scope == "admin")

    def to_dict(self) -> dict:
        return {"key_id": self.key_id, "user": self.user, "groups": list(self.groups), "tenant": self.tenant,
                "scope": self.scope, "label": self.label, "created": self.created, "created_by": self.created_by,
                "revoked": self.revoked, "last_used": self.last_used}


@dataclass(frozen=True)
class NewKey:
    key: str  # the only time the full key exists outside the client
    info: ApiKey = field(repr=False)


def scope_allows(have: str, need: str) -> bool:
    return SCOPES.index(have) >= SCOPES.index(need)


def _sha(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _row(r) -> ApiKey:
    return ApiKey(key_id=r["key_id"], user=r["user"], groups=tuple(g for g in r["groups"].split(",") if g),
                  tenant=r["tenant"], scope=r["scope"], label=r["label"], created=r["created"],
                  created_by=r["created_by"], revoked=r["revoked"], last_used=r["last_used"])


class ApiKeys:
    # last_used is written at most once a minute per key: a write per request would serialise
    # every reader behind SQLite's write lock.
    TOUCH_EVERY_S = 60.0

    def __init__(self, db: Database):
        self.db = db
        db.executescript(SCHEMA)

    def create(self, user: str, scope: str, groups=None, tenant: str | None = None, label: str = "",
               *, by: Caller) -> NewKey:
        """A new key for `user`. Admins (and the local operator) create keys for anyone and any
        scope; a user creates read or write keys for themselves only."""
        user = (user or "").strip()
        if not user:
            raise InputError("an API key belongs to a user: give --user NAME")
        if scope not in SCOPES:
            raise InputError(f"scope must be one of: {', '.join(SCOPES)}")
        if not by.admin and (by.user != user or scope == "admin"):
            raise InputError("only an admin may create keys for other users or with the admin scope")
        gs = sorted(Caller.of(user, groups).groups)
        key_id, secret = uuid.uuid4().hex[:16], secrets.token_urlsafe(32)
        now = time.time()
        with self.db.transaction() as c:
            c.execute("INSERT INTO api_keys (key_id, secret_sha256, user, groups, tenant, scope, label, created, "
                      "created_by) VALUES (?,?,?,?,?,?,?,?,?)",
                      (key_id, _sha(secret), user, ",".join(gs), (tenant or "").strip() or None, scope,
                       label.strip()[:200], now, by.user))
        return NewKey(f"{PREFIX}{key_id}_{secret}", self.get(key_id, by=by))

    def get(self, key_id: str, *, by: Caller) -> ApiKey:
        r = self.db.query_one("SELECT * FROM api_keys WHERE key_id=?", (key_id,))
        if r is None or not (by.admin or r["user"] == by.user):
            raise NotFound("no such API key")
        return _row(r)

    def list(self, *, by: Caller, user: str | None = None) -> list[ApiKey]:
        """Keys (never their secrets), newest first: an admin's view of everyone's (or one
        user's), a user's of their own."""
        if not by.admin:
            user = by.user
        rows = (self.db.query("SELECT * FROM api_keys WHERE user=? ORDER BY created DESC", (user,)) if user
                else self.db.query("SELECT * FROM api_keys ORDER BY created DESC"))
        return [_row(r) for r in rows]

    def revoke(self, key_id: str, *, by: Caller) -> ApiKey:
        key = self.get(key_id, by=by)
        if key.revoked is None:
            with self.db.transaction() as c:
                c.execute("UPDATE api_keys SET revoked=? WHERE key_id=? AND revoked IS NULL", (time.time(), key_id))
        return self.get(key_id, by=by)

    def authenticate(self, presented: str) -> ApiKey | None:
        """The live key this string is, or None (malformed, unknown, wrong secret, revoked)."""
        m = _KEY.match(presented or "")
        if not m:
            return None
        r = self.db.query_one("SELECT * FROM api_keys WHERE key_id=?", (m.group(1),))
        if r is None or r["revoked"] is not None or not hmac.compare_digest(r["secret_sha256"], _sha(m.group(2))):
            return None
        now = time.time()
        if r["last_used"] is None or now - r["last_used"] > self.TOUCH_EVERY_S:
            with self.db.transaction() as c:
                c.execute("UPDATE api_keys SET last_used=? WHERE key_id=?", (now, r["key_id"]))
        return _row(r)
