"""Sources that may be out of date, flagged on their citations: one older than the knowledge
base's `stale_after_days`, and one superseded by a newer version of the same document in the
caller's scope.

"The same document" is a judgement made from names, as a person browsing the folder would:
two documents whose titles (or, without a title, file names) agree once years, version
numbers and words like "draft" or "final" are set aside ("Travel policy 2023.pdf" and
"travel-policy-2024.pdf"; "Handbook v2" and "Handbook v3"). Both must be dated, and the other
newer. Nothing is hidden: the older source is still cited, with the reason beside it.
"""

from __future__ import annotations

import re

from ..models import Citation, iso_to_day
from .planner import CatalogueEntry

_VERSION_WORDS = {"v", "ver", "version", "rev", "revision", "edition", "ed", "draft", "final", "updated", "new", "old",
                  "copy", "latest"}
_TOKEN = re.compile(r"[^\W_]+", re.U)


def document_key(entry: CatalogueEntry) -> str:
    """The name two versions of one document share ("" when nothing is left to compare)."""
    name = entry.title or entry.source.rsplit(".", 1)[0]
    words = [w for w in _TOKEN.findall(name.casefold())
             if not w.isdigit() and w not in _VERSION_WORDS and not re.fullmatch(r"v\d+|r\d+|rev\d+|\d+(?:st|nd|rd|th)", w)]
    return " ".join(words)


def flag(citations: list[Citation], catalogue: list[CatalogueEntry] | None, stale_after_days: int,
         today: int) -> list[Citation]:
    """The citations with `stale` set where a reason is known (`today`: a day number)."""
    newest: dict[str, tuple[int, CatalogueEntry]] = {}
    for e in catalogue or []:
        key = document_key(e) if e.date else ""
        if key:
            day = iso_to_day(e.date)
            if key not in newest or day > newest[key][0]:
                newest[key] = (day, e)
    by_doc = {e.doc_id: e for e in catalogue or []}
    for c in citations:
        if not c.date:
            continue
        day = iso_to_day(c.date)
        entry = by_doc.get(c.doc_id)
        later = newest.get(document_key(entry)) if entry is not None else None
        if later is not None and later[0] > day and later[1].doc_id != c.doc_id:
            c.stale = f"superseded by {later[1].source} ({later[1].date})"
        elif stale_after_days and today - day > stale_after_days:
            c.stale = f"dated {c.date}, older than {stale_after_days} days"
    return citations
