"""The one access policy: who may see which knowledge base. Used by the app, the CLI and,
through the search filters it builds, by both stores.

A caller sees a knowledge base when it is an admin, or when the knowledge base's tenant (if
any) is the caller's and either the knowledge base is open to everyone (no users, no groups)
or the caller is one of its users or in one of its groups. Everything else follows from that
one decision: the list and selector, documents, search and answers, the original files,
threads, analytics and feedback.

Access is resolved when a question is asked, from the knowledge base's current settings, so
an edit applies to documents already ingested at once, without re-ingesting. (Chunks still
carry the tenant and ACL they were ingested with, and the stores can filter on them; the
app no longer relies on those stamps, which an edit would leave stale.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .models import KnowledgeBase, SearchFilters


@dataclass(frozen=True)
class Caller:
    user: str | None = None
    groups: frozenset[str] = field(default_factory=frozenset)
    tenant: str | None = None
    admin: bool = False

    @classmethod
    def operator(cls) -> Caller:
        """The person at the machine: the CLI without --user, the app without sign-in."""
        return cls(user=None, admin=True)

    @classmethod
    def of(cls, user: str | None = None, groups=None, tenant: str | None = None, admin: bool = False) -> Caller:
        """An identity from loose values; no identity at all is the operator."""
        gs = frozenset(g.strip() for g in (groups or []) if g and g.strip())
        if not user and not gs and tenant is None and not admin:
            return cls.operator()
        return cls(user=user or None, groups=gs, tenant=tenant, admin=admin)


def can_see(caller: Caller, kb: KnowledgeBase) -> bool:
    if caller.admin:
        return True
    if kb.tenant is not None and kb.tenant != caller.tenant:
        return False
    if not kb.acl_users and not kb.acl_groups:
        return True
    return (caller.user is not None and caller.user in kb.acl_users) or bool(caller.groups & set(kb.acl_groups))


def visible(caller: Caller, kbs: list[KnowledgeBase]) -> list[KnowledgeBase]:
    return [kb for kb in kbs if can_see(caller, kb)]


def search_filters(caller: Caller, kbs: list[KnowledgeBase], doc_ids: list[str] | None = None) -> SearchFilters:
    """Filters that let the store return chunks of the knowledge bases this caller may see,
    and only those (an empty list matches nothing)."""
    return SearchFilters(kb_ids=[kb.kb_id for kb in visible(caller, kbs)], user=caller.user,
                         groups=sorted(caller.groups), doc_ids=list(doc_ids) if doc_ids else None)
