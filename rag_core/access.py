"""The one access policy: who may read and who may change which knowledge base. Used by the
Workspace (every surface goes through it), and through the search filters it builds, by both
stores.

Reading. A caller sees a knowledge base when it is an admin, or one of the knowledge base's
owners, or when the knowledge base's tenant (if any) is the caller's and either the knowledge
base is open to everyone in it (no users, no groups) or the caller is one of its users or in one
of its groups.

Writing (ingest, delete documents, settings, access, deleting the knowledge base): admins and
the knowledge base's owners. The creator is recorded as its owner; owners may name co-owners.
`--allow-users/--allow-groups` grant reading only.

Identity is explicit. A `Caller` is resolved once at the edge (CLI, page, API) and passed to
every Workspace method; nothing inside the library falls back to anyone. The operator (sees and
changes everything) exists only where an edge creates it on purpose: the local no-auth mode
(CLI with no identity at all, the app without sign-in) unless `RAG_AUTH=required`.

A knowledge base the caller may not see is reported exactly like one that does not exist,
with the caller's own words (`hidden_error`), so access cannot be probed by name.

Access is resolved when a question is asked, from the knowledge base's current settings, so an
edit applies to documents already ingested at once, without re-ingesting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import GroundworkError, NotFound
from .models import KnowledgeBase, SearchFilters


class PermissionDenied(GroundworkError):
    """The caller may read this knowledge base but not change it (only said to readers: to
    anyone else the knowledge base does not exist)."""


@dataclass(frozen=True)
class Caller:
    user: str | None = None
    groups: frozenset[str] = field(default_factory=frozenset)
    tenant: str | None = None
    admin: bool = False

    @classmethod
    def operator(cls) -> Caller:
        """The person at the machine in the local no-auth mode. Only edges create it (the CLI
        with no identity, the app without sign-in) and tests that mean it."""
        return cls(user=None, admin=True)

    @classmethod
    def of(cls, user: str | None = None, groups=None, tenant: str | None = None, admin: bool = False) -> Caller:
        """An identity from loose values (a comma list or an iterable of groups). No identity at
        all is the anonymous caller, never the operator: only an edge decides that."""
        if isinstance(groups, str):
            groups = groups.split(",")
        gs = frozenset(g.strip() for g in (groups or []) if g and g.strip())
        return cls(user=(user or "").strip() or None, groups=gs, tenant=(tenant or "").strip() or None, admin=admin)

    @property
    def is_operator(self) -> bool:
        return self.admin and self.user is None


def _names(value: str) -> set[str]:
    return {v.strip() for v in (value or "").split(",") if v.strip()}


def with_admin(caller: Caller, settings) -> Caller:
    """The caller, made an admin when its user is in RAG_ADMIN_EMAILS or one of its groups in
    RAG_ADMIN_GROUPS (`settings`: rag_core.config.Settings). Every edge decides admins here."""
    admin = (caller.user is not None and caller.user in _names(settings.admin_emails)) or bool(
        caller.groups & _names(settings.admin_groups))
    return Caller(user=caller.user, groups=caller.groups, tenant=caller.tenant, admin=admin)


def local_caller(user: str | None, groups, tenant: str | None, settings) -> Caller | None:
    """Who is at the machine in the local no-auth mode (the CLI, the app without sign-in): the
    identity given (--user or RAG_USER, ...), else the operator — or None when RAG_AUTH=required
    turns that fallback off."""
    c = Caller.of(user, groups, tenant)
    if c.user is None and not c.groups and c.tenant is None:
        return None if settings.auth == "required" else Caller.operator()
    return with_admin(c, settings)


def is_owner(caller: Caller, kb: KnowledgeBase) -> bool:
    return caller.user is not None and caller.user in kb.owners


def can_see(caller: Caller, kb: KnowledgeBase) -> bool:
    if caller.admin or is_owner(caller, kb):
        return True
    if kb.tenant is not None and kb.tenant != caller.tenant:
        return False
    if not kb.acl_users and not kb.acl_groups:
        return True
    return (caller.user is not None and caller.user in kb.acl_users) or bool(caller.groups & set(kb.acl_groups))


def can_write(caller: Caller, kb: KnowledgeBase) -> bool:
    return caller.admin or is_owner(caller, kb)


def visible(caller: Caller, kbs: list[KnowledgeBase]) -> list[KnowledgeBase]:
    return [kb for kb in kbs if can_see(caller, kb)]


def hidden_error(asked: str) -> NotFound:
    """The one answer for a knowledge base that is missing or hidden: the caller's own words,
    no other knowledge base's name, no hint of spelling."""
    return NotFound(f"no knowledge base named '{asked}'")


def require_see(caller: Caller, kb: KnowledgeBase | None, asked: str) -> KnowledgeBase:
    if kb is None or not can_see(caller, kb):
        raise hidden_error(asked)
    return kb


def require_write(caller: Caller, kb: KnowledgeBase | None, asked: str) -> KnowledgeBase:
    kb = require_see(caller, kb, asked)
    if not can_write(caller, kb):
        raise PermissionDenied(f"only the owners of '{kb.name}' and admins may change it; you may read it")
    return kb


def may_act_for(caller: Caller, user: str | None) -> bool:
    """Whether `caller` may act on another user's behalf (issue them a key, read or erase their
    data): themselves, or an admin (the operator included)."""
    return caller.admin or (user is not None and caller.user == user)


def search_filters(caller: Caller, kbs: list[KnowledgeBase], doc_ids: list[str] | None = None) -> SearchFilters:
    """Filters that let the store return chunks of the knowledge bases this caller may see,
    and only those (an empty list matches nothing)."""
    return SearchFilters(kb_ids=[kb.kb_id for kb in visible(caller, kbs)], user=caller.user,
                         groups=sorted(caller.groups), doc_ids=list(doc_ids) if doc_ids else None)
