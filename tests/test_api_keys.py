"""API keys (rag_core/api_keys.py) on a real database file: shown once, stored hashed, scoped,
revocable at once; only admins make keys for others or with the admin scope."""

from __future__ import annotations

import pytest

from rag_core.access import Caller
from rag_core.api_keys import ApiKeys, scope_allows
from rag_core.db import Database
from rag_core.errors import InputError, NotFound

OP = Caller.operator()


@pytest.fixture
def keys(tmp_path):
    db = Database(tmp_path / "keys.db")
    yield ApiKeys(db)
    db.close()


def test_a_key_authenticates_as_its_user_groups_and_tenant(keys, tmp_path):
    new = keys.create("alice", "write", groups="hr, research", tenant="acme", label="bot", by=OP)
    got = keys.authenticate(new.key)
    assert got.caller() == Caller.of("alice", ["hr", "research"], "acme")
    assert not got.caller().admin and got.scope == "write" and got.label == "bot"
    # only the hash is stored: the secret is nowhere in the database file
    secret = new.key.split("_", 2)[2]
    assert secret.encode() not in (tmp_path / "keys.db").read_bytes()


def test_wrong_secret_unknown_id_and_garbage_fail(keys):
    key = keys.create("alice", "read", by=OP).key
    prefix, kid, secret = key.split("_", 2)
    assert keys.authenticate(f"{prefix}_{kid}_{'A' * len(secret)}") is None
    assert keys.authenticate(f"{prefix}_{'f' * 16}_{secret}") is None
    assert keys.authenticate("") is None and keys.authenticate("Bearer " + key) is None


def test_revoked_fails_at_once_and_listing_never_shows_secrets(keys):
    new = keys.create("alice", "read", by=OP)
    keys.revoke(new.info.key_id, by=OP)
    assert keys.authenticate(new.key) is None
    listed = keys.list(by=OP)
    assert listed[0].revoked is not None and new.key not in repr(listed) and new.key.split("_", 2)[2] not in repr(listed)


def test_admin_scope_makes_an_admin_and_scopes_nest(keys):
    assert keys.authenticate(keys.create("root", "admin", by=OP).key).caller().admin
    assert scope_allows("admin", "write") and scope_allows("write", "read") and not scope_allows("read", "write")


def test_users_manage_only_their_own_non_admin_keys(keys):
    alice = Caller.of("alice")
    mine = keys.create("alice", "write", by=alice)
    with pytest.raises(InputError):
        keys.create("bob", "read", by=alice)
    with pytest.raises(InputError):
        keys.create("alice", "admin", by=alice)
    bobs = keys.create("bob", "read", by=OP)
    assert [k.key_id for k in keys.list(by=alice)] == [mine.info.key_id]
    with pytest.raises(NotFound):
        keys.revoke(bobs.info.key_id, by=alice)  # another user's key reads as missing
    assert keys.authenticate(bobs.key) is not None
    with pytest.raises(InputError):
        keys.create("", "read", by=OP)
    with pytest.raises(InputError):
        keys.create("carol", "superuser", by=OP)
