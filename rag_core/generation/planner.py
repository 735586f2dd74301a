"""What a question needs before anything is searched: a few passages (search), one whole
document read as a whole (document), or several named documents side by side (compare).

One object decides (`Planner.plan`), and the `Route` it returns says why:
- the caller's choice wins ("search instead" in the chat, `route` in the API, `ask --route`);
- with a language model, the fast model (RAG_LLM_FAST_MODEL) reads the question and the
  catalogue of documents the caller may see, and answers with a small JSON decision;
- a decision that is missing, malformed, names no usable document or fails to arrive is
  replaced by the offline rules: route words in the languages the app speaks, and the
  documents the question names, matched against file names and titles.

The catalogue is always the caller's (Workspace.catalogue): a document the caller may not
see is never named, so the planner cannot reveal it, and the model is only shown names the
caller could read in the document list anyway.
"""

from __future__ import annotations

import json
import logging
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Literal

from ..text.analysis import analyze
from ..text.language import question_language

log = logging.getLogger(__name__)

RouteKind = Literal["search", "document", "compare"]
ROUTES: tuple[str, ...] = ("search", "document", "compare")
MAX_PROMPT_DOCUMENTS = 40  # catalogue entries shown to the model (the ones the question mentions first)
MAX_NAMED = 12  # more documents than this matching a question's words equally: none is named by them


@dataclass(frozen=True)
class CatalogueEntry:
    """A document the caller may see, as the planner knows it."""

    kb_id: str
    doc_id: str
    source: str  # file name
    title: str = ""
    date: str = ""
    language: str = ""
    chunks: int = 0
    trust: str = "normal"  # Document.trust
    # what the document says it is, read at ingest: its first heading or opening line ("" unknown)
    description: str = ""
    # naming words and outright spellings, computed once per entry (the workspace keeps the
    # entries per content version), so a question costs one pass of set intersections
    terms: frozenset = field(default=frozenset(), compare=False, repr=False)
    forms: tuple = field(default=(), compare=False, repr=False)
    # the words its name is judged against (title's, else file stem's), and its file stem's
    own: frozenset = field(default=frozenset(), compare=False, repr=False)
    stem_terms: frozenset = field(default=frozenset(), compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "terms", _name_terms(self.source, self.title, self.description))
        object.__setattr__(self, "forms", _file_forms(self.source))
        stem = _name_terms(self.source, "")
        # every word of the file stem, numbers and codes included: "travel-2024.md" is spelled
        # out by "travel 2024", not by "travel" alone
        object.__setattr__(self, "stem_terms", frozenset(
            t for t in analyze(re.sub(r"[_\-.]+", " ", self.source.rsplit(".", 1)[0]), "en") if t not in _GENERIC))
        object.__setattr__(self, "own", (_name_terms("", self.title) | _man_page(self.title)) or stem)

    @property
    def label(self) -> str:
        stem = self.source.rsplit(".", 1)[0]
        return self.source if not self.title or _squash(self.title) == _squash(stem) else f"{self.source} ({self.title})"


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    documents: tuple[CatalogueEntry, ...] = ()
    by: str = "rules"  # rules | model | user | scope
    reason: str = ""
    # document route: "summary" (summarise / outline / main topics), "show" (show me the file),
    # "ask" (anything else about the whole document: "list every option in it")
    intent: str = "summary"

    def record(self) -> dict:
        """As A.jsonl, the API and the query log carry it (`plan`)."""
        return {"route": self.kind, "by": self.by, "reason": self.reason, "intent": self.intent,
                "documents": [{"kb_id": d.kb_id, "doc_id": d.doc_id, "source": d.source} for d in self.documents]}


# ---- the documents a question names -------------------------------------------------------
# Words that name a kind of document, not a document: "the R installation manual" names
# R-admin by "installation", not by "manual".
_GENERIC = set("""manual manuals guide guides document documents doc docs file files pdf pdfs report reports
paper papers page pages chapter chapters book handbook version edition the a an of and
for to in on html htm txt md docx text""".split())
_WORDS = re.compile(r"[\w][\w\-.+]*", re.UNICODE)


def _squash(s: str) -> str:
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", s).casefold())


# A Unix manual page's title, "BASH(1) General Commands Manual": people call it "the bash man page".
_MAN_TITLE = re.compile(r"^\s*[\w.+-]+\s*\(\d\w?\)")
_MAN_WORDS = frozenset(analyze("man manpage", "en"))
# file names' language and part codes ("ch04.en.html"): not words anyone names a document by
_CODES = re.compile(r"^(en|de|fr|es|ja|zh|it|pt|nl|ch\d+|v\d+|\d+)$")


def _man_page(title: str) -> frozenset[str]:
    return _MAN_WORDS if _MAN_TITLE.match(title or "") else frozenset()


def _name_terms(source: str, title: str, description: str = "") -> frozenset[str]:
    """A document's naming words: its file name's, title's and description's (its first heading
    or opening line, read at ingest), analysed; a manual page is also named "man page"."""
    stem = source.rsplit(".", 1)[0] if source else ""
    words = re.sub(r"[_\-.]+", " ", stem) + " " + title + " " + description
    return frozenset(t for t in analyze(words, "en") if t not in _GENERIC and len(t) > 1 and not _CODES.match(t)) \
        | _man_page(title)


def _file_forms(source: str) -> tuple[str, ...]:
    """The spellings that name the document outright: its file name, and a stem no one writes by
    chance ("R-intro", "ch03"); a plain-word stem ("bash") is also a topic, so it names the
    document only through the naming words."""
    stem = source.rsplit(".", 1)[0]
    forms = (source, stem) if re.search(r"[\d_\-.]", stem) else (source,)
    return tuple(f.casefold() for f in forms if len(f) >= 3)


def _question_terms(q: str) -> set[str]:
    text = re.sub(r"[_\-.]+", " ", q)
    return set(analyze(text, "en")) | set(analyze(q, question_language(q, "en")))


def mentioned(question: str, catalogue: list[CatalogueEntry]) -> list[CatalogueEntry]:
    """The catalogue's documents the question names, in the order it names them (mentions)."""
    return [e for e, _ in mentions(question, catalogue)]


def mentions(question: str, catalogue: list[CatalogueEntry]) -> list[tuple[CatalogueEntry, bool]]:
    """(document, named by its file name) for each document the question names, in order.

    A file name or its distinctive stem written out (`R-intro.pdf`, `R-intro`) names that
    document. Otherwise a document is named by the distinctive words of its file name and title
    found in the question, weighted by how rare each is in the catalogue ("gnuplot" names one
    document; "R" names none when every manual is R's); a document whose matched words are a
    strict subset of another's is the other's shadow and is dropped. One pass over the
    catalogue with cached names: ~0.3 µs an entry."""
    if not catalogue:
        return []
    q = unicodedata.normalize("NFKC", question)
    qs = q.casefold()
    qterms = _question_terms(q)
    named: dict[int, tuple[float, int]] = {}  # index -> (score, position in the question)
    matched: dict[int, frozenset[str]] = {}
    df: Counter = Counter()  # how many names hold each question word: all idf needs
    for i, e in enumerate(catalogue):
        for form in e.forms:
            if form in qs:
                m = re.search(r"(?<![\w])" + re.escape(form) + r"(?![\w])", qs)
                if m:
                    named[i] = (10.0, m.start())
                    break
        hit = e.terms & qterms
        if hit:
            df.update(hit)
            if i not in named:
                matched[i] = hit
    n = len(catalogue)
    # words that a document named by its file name already explains name no other document
    # ("travel-2023.md" does not also name travel-2024.md by "travel")
    explained = set().union(*(catalogue[i].terms | catalogue[i].stem_terms for i in named)) if named else set()
    matched = {i: hit for i, hit in matched.items() if not hit <= explained}
    idf = {t: math.log((n + 1) / (c + 0.5)) for t, c in df.items()}
    # a name word found in every document's name names none of them (unless there is one)
    # coverage is judged against the title's words (or the file stem's without a title), not the
    # codes a file name carries ("ch04", "en"); a document whose file stem the question writes out
    # in words ("the Asymptote manual": asymptote.pdf, not the reference card) comes first
    scored = {i: sum(idf[t] for t in hit) * min(1.0, len(hit & catalogue[i].own) / max(len(catalogue[i].own), 1)
                                                + 0.5 * len(hit - catalogue[i].own) / max(len(catalogue[i].terms), 1)) ** 0.5
              * (1.5 if catalogue[i].stem_terms and catalogue[i].stem_terms <= qterms else 1.0)
              for i, hit in matched.items()
              if sum(idf[t] for t in hit) >= 0.4 or n == 1 or (catalogue[i].stem_terms and catalogue[i].stem_terms <= qterms)}
    if scored:
        top = max(scored.values())
        # a weak match far behind the best is noise ("data" in a question about R-data's title
        # words); words shared by many names name none of them
        # (a rare word that names one document outright, scoring 1 or more, is never noise)
        spelled = {i for i in scored if catalogue[i].stem_terms and catalogue[i].stem_terms <= qterms}
        near = [i for i, v in scored.items() if v >= 0.35 * top or v >= 1.0 or i in spelled]
        # documents named by the very same words: the best-named of them (its file stem written
        # out) stands for the words, the others are its shadows
        near = [i for i in near if not any(j != i and matched[j] == matched[i] and scored[j] > scored[i] for j in near)]
        if len(near) <= MAX_NAMED:
            for i in near:
                if any(j != i and matched[i] < matched[j] for j in near):
                    continue  # another document's name explains more of the question
                named[i] = (scored[i], min((_position(qs, t) for t in matched[i]), default=len(qs)))
    if not named:
        return []
    # a file name written out always names its document; documents named by words are weighed
    # against each other, not against it ("R-admin and the R FAQ": both)
    best_words = max((s for s, _ in named.values() if s < 10.0), default=0.0)
    spelled = {i for i, e in enumerate(catalogue) if e.stem_terms and e.stem_terms <= qterms}
    by_file = any(s >= 10.0 for s, _ in named.values())
    # beside a file name written out, a document named by words needs a rare word that names it
    # outright (score 1 or more): "die" in a German question names no "Kapitel 3. Die …"
    keep = [i for i, (s, _) in named.items()
            if s >= 10.0 or s >= 1.0 or i in spelled or (not by_file and s >= 0.35 * best_words)]
    return [(catalogue[i], named[i][0] >= 10.0) for i in sorted(keep, key=lambda i: (named[i][1], -named[i][0]))]


def _position(qs: str, term: str) -> int:
    k = qs.find(term[: max(3, len(term) - 2)])
    return k if k >= 0 else len(qs)


# ---- route words, in the languages the app speaks (text/messages.py) -----------------------
_COMPARE = re.compile(
    r"\b(compar\w*|contrast\w*|differ\w*|distinguish\w*|versus|vs\.?|side[- ]by[- ]side|in common"
    r"|what (has )?changed|what changes|changes? between|how do(es)? .{1,80}? (differ|compare)|same as"
    r"|(covers?|says?|has|have|include|includes|mention|mentions|explain|explains|document|documents) .{0,60}?that .{1,80}? (does not|do not|doesn't|don't|leaves? out|omits?|lacks?|misses)"
    r"|vergleich\w*|unterschi\w*|unterscheid\w*|gegenüber\w*|was hat sich .{0,40}geändert"
    r"|compara\w*|diferencia\w*|difieren|diferente\w*|en qué se diferencia\w*"
    r"|différence\w*|diffèrent|comparer)\b"
    r"|比較|比べ|違い|異な|相違|差分|比较|区别|不同|差异",
    re.I)
_DOCUMENT = re.compile(
    r"\b(summar\w*|sum up|overview|outline|synopsis|abstract of|gist|tl;?dr|recap|rundown|digest"
    r"|main (topics?|points?|ideas?|themes?|parts?|sections?|subjects?)|key (points?|topics?|takeaways?|ideas?|themes?)"
    r"|table of contents|contents of|chapters|sections of|structure of|topics (covered|in)"
    r"|what (is|are) .{1,80}? about|what does .{1,80}? (cover|contain|discuss|describe|deal with|explain)"
    r"|what(?: is|'s| is covered) (covered )?in|covered in|briefly describe|describe (the|this|that) (whole )?(document|manual|file|chapter|guide|report|paper)"
    r"|zusammenfass\w*|fass\w* .{1,80}? zusammen|überblick|übersicht|hauptthemen|worum geht|inhaltsverzeichnis|kapitel des|gliederung"
    r"|resum\w*|temas principales|de qué trata|índice|esquema|visión general|puntos clave"
    r"|résum\w*|de quoi parle|thèmes principaux|vue d'ensemble|sommaire|plan du)\b"
    r"|要約|まとめ|概要|主なトピック|主な内容|主要なトピック|目次|何について|について説明|総括|总结|概述|摘要|主要内容|目录|讲了什么",
    re.I)
# A request to see something ("show me my biography", "open the travel policy"): a request to see
# a document when what follows names one, never a question ("show me how to …").
_SHOW = re.compile(r"^\s*(please\s+)?(can i see|could i see|let me see|show|open|display|pull up|bring up|zeig\w*|öffne|"
                   r"muéstrame|muestra|abre|montre|ouvre)\b(\s+(me|mir|moi))?\s+(?!(how|what|where|why|when|which|who|if|"
                   r"whether|wie|was|wo|warum|cómo|qué|dónde|comment|quoi|où)\b)", re.I)
# "list every option in it": about the whole document only when a document is named
_LIST = re.compile(r"\b((list|enumerate|name) (all|every|each)|every \w+ (in|that|documented|listed|mentioned|described)"
                   r"|all the \w+ (in|that|documented|listed|mentioned))\b"
                   r"|すべて.{0,10}(挙げ|列挙)|一覧|alle .{1,40}(auf|aufzählen)|enumera|todas? l[oa]s", re.I)
# A how-to or which-function question is a search, whatever else it says ("how do I get a
# summary of a data frame?", "how do I compare two strings?"), unless it names a file.
_HOWTO = re.compile(r"^\s*(how (do|can|should|would|could) (i|you|we|one)\b|how to\b|what (function|command|option|argument)s?\b"
                    r"|which (function|command|option|argument|package)s?\b|wie (kann|mache|erstelle) ich|cómo (puedo|se)\b"
                    r"|comment (puis|faire)\b)", re.I)
_FILE_NAME = re.compile(r"[\w\-.]+\.(pdf|docx?|pptx|xlsx|epub|txt|md|markdown|html?|csv|jsonl)\b", re.I)
# "this document", "these two files": the scope names the documents
_DEICTIC = re.compile(r"\b(this|these|the two|both|each|the whole|entire|dieses?|diese[mn]?|beide[n]?|este|esta|estos|estas|ambos|ce|cette|ces)\b"
                      r"|この|これら|両方|这|这些", re.I)


def rule_route(question: str, catalogue: list[CatalogueEntry], lookup_doc: CatalogueEntry | None = None) -> Route:
    """The offline decision: route words plus the documents named (or the scope, when it
    holds exactly the documents the question points at with "this" / "these two")."""
    if lookup_doc is None and not (_COMPARE.search(question) or _DOCUMENT.search(question) or _LIST.search(question)
                                   or _SHOW.match(question)):
        # no route words: a search whatever the question names, and no pass over the catalogue
        # (a plain question costs nothing however many documents there are)
        return Route("search", (), "rules", "a question about a topic in the documents")
    found = mentions(question, catalogue)
    howto = _HOWTO.search(question) is not None
    if howto:
        found = [(e, strong) for e, strong in found if strong]  # only a file name written out counts
    named = [e for e, _ in found]
    compare = bool(_COMPARE.search(question)) and not (howto and len(named) < 2)
    document = (bool(_DOCUMENT.search(question)) or (bool(_LIST.search(question)) and bool(named))) and not (
        howto and not named)
    scoped = _DEICTIC.search(question) is not None
    if compare:
        if len(named) >= 2:
            return Route("compare", tuple(named), "rules", "comparison words and several documents named")
        if not named and 2 <= len(catalogue) <= 4 and scoped:
            return Route("compare", tuple(catalogue), "scope", f"comparison words; the {len(catalogue)} documents in scope")
    if lookup_doc is None and named and not compare and _SHOW.match(question):
        lookup_doc = named[0]  # "show me my biography": a document named by what it is, not by a file word
    if lookup_doc is not None:
        return Route("document", (lookup_doc,), "rules", "a request to see a document", intent="show")
    if document:
        intent = "summary" if _SUMMARY.search(question) else "ask"
        if compare and len(named) == 1:
            return Route("search", (), "rules", "comparison words but only one document named")
        if named:
            return Route("document", (named[0],), "rules", "whole-document words and a document named", intent=intent)
        if not named and len(catalogue) == 1:
            return Route("document", (catalogue[0],), "scope", "whole-document words; the one document in scope",
                         intent=intent)
        return Route("search", (), "rules", "whole-document words but no document named")
    if compare and len(named) < 2:
        return Route("search", (), "rules", "comparison words but fewer than two documents named")
    return Route("search", (), "rules", "a question about a topic in the documents")


_SUMMARY = re.compile(
    r"\b(summar\w*|sum up|overview|outline|synopsis|gist|tl;?dr|recap|rundown|main|key|table of contents|contents"
    r"|chapters|sections|structure|topics|about|cover\w*|zusammenfass\w*|überblick|übersicht|hauptthemen|worum"
    r"|inhaltsverzeichnis|gliederung|resum\w*|temas|trata|índice|esquema|general|résum\w*|parle|thèmes|ensemble"
    r"|sommaire)\b|要約|まとめ|概要|トピック|主な|目次|何について|总结|概述|摘要|主要|目录", re.I)


# ---- the model's decision ------------------------------------------------------------------
PLAN_PROMPT = """You route questions for an assistant that answers from a library of documents.

Documents:
{documents}

Question: {question}

Decide what the question needs:
- "document": it asks about ONE whole document as a whole: summarise it, outline it, its main topics, what it covers, or list every item of some kind in it.
- "compare": it asks to compare, contrast or find differences or changes between TWO OR MORE documents.
- "search": anything else, including questions about a topic, a command or a fact inside the documents, even when they mention a document.

Reply with JSON only, no other text: {{"route": "search" | "document" | "compare", "documents": [numbers of the documents the question refers to]}}"""

_JSON = re.compile(r"\{.*?\}", re.S)


def parse_plan(text: str, catalogue: list[CatalogueEntry]) -> Route | None:
    """The model's reply as a Route, or None when it is not a usable decision: no JSON, an
    unknown route, document numbers out of range, a document route without exactly one
    document (a one-document scope stands for it), a comparison of fewer than two."""
    m = _JSON.search(text or "")
    if not m:
        return None
    try:
        d = json.loads(m.group(0))
    except ValueError:
        return None
    kind = str(d.get("route", "")).strip().lower() if isinstance(d, dict) else ""
    if kind not in ROUTES:
        return None
    nums = d.get("documents") or []
    if not isinstance(nums, list):
        nums = [nums]
    docs: list[CatalogueEntry] = []
    for x in nums:
        try:
            k = int(x)
        except (TypeError, ValueError):
            return None
        if not 1 <= k <= len(catalogue):
            return None
        if catalogue[k - 1] not in docs:
            docs.append(catalogue[k - 1])
    if kind == "search":
        return Route("search", (), "model", "the model: a question about a topic in the documents")
    if kind == "document":
        if not docs and len(catalogue) == 1:
            docs = [catalogue[0]]
        if len(docs) != 1:
            return None
        return Route("document", (docs[0],), "model", "the model: a question about the whole document")
    if len(docs) < 2:
        return None
    return Route("compare", tuple(docs), "model", "the model: a comparison of documents")


@dataclass
class Planner:
    """`llm`: the fast model's runnable (prompt text → reply text), or None offline."""

    llm: object | None = None
    prompt_documents: int = MAX_PROMPT_DOCUMENTS

    def plan(self, question: str, catalogue: list[CatalogueEntry], *, override: str | None = None,
             lookup_doc: CatalogueEntry | None = None, config=None,
             use_model: bool = True) -> Route:
        rules = rule_route(question, catalogue, lookup_doc)
        if override:
            return self._override(override, rules, question, catalogue)
        if lookup_doc is not None:
            return rules  # "show me the X file": nothing for a model to decide
        if self.llm is None or not use_model or not catalogue or not _worth_asking(question, catalogue):
            return rules
        shown = _for_prompt(question, catalogue, self.prompt_documents)
        listing = "\n".join(f"{i}. {e.label}" for i, e in enumerate(shown, 1))
        try:
            reply = self.llm.invoke(PLAN_PROMPT.format(documents=listing, question=question), config)
        except Exception as exc:  # noqa: BLE001 - the rules decide instead
            log.debug("planner model failed", exc_info=True)
            return replace(rules, reason=f"{rules.reason} (the model's plan failed: {type(exc).__name__})")
        got = parse_plan(str(reply), shown)
        if got is None:
            return replace(rules, reason=f"{rules.reason} (the model's plan was not usable)")
        if got.kind == "document" and rules.kind == "document" and rules.documents == got.documents:
            return replace(got, intent=rules.intent)
        if got.kind == "document":
            return replace(got, intent="summary" if _SUMMARY.search(question) else "ask")
        return got

    def _override(self, override: str, rules: Route, question: str, catalogue: list[CatalogueEntry]) -> Route:
        if override not in ROUTES:
            raise ValueError(f"route must be one of {', '.join(ROUTES)}, not {override!r}")
        if override == "search":
            return Route("search", (), "user", "the person asked to search instead")
        if rules.kind == override:
            return replace(rules, by="user", reason=f"the person chose {override}")
        named = mentioned(question, catalogue) or (catalogue if len(catalogue) <= (1 if override == "document" else 4) else [])
        if override == "document" and named:
            return Route("document", (named[0],), "user", "the person chose to read the document")
        if override == "compare" and len(named) >= 2:
            return Route("compare", tuple(named), "user", "the person chose to compare the documents")
        return replace(rules, reason=f"{rules.reason} (the chosen route {override} needs "
                       + ("a document named" if override == "document" else "two documents named") + ")")


def _worth_asking(question: str, catalogue: list[CatalogueEntry]) -> bool:
    """Whether the model could choose anything but search: only when the question has route
    words (in any language the app speaks), writes out a file name, or points at the few
    documents in scope ("this manual"). A question that only shares words with a title
    ("how long is the Moon's orbit?" beside moon.txt) is a search: asking would cost every such
    question a model call (the planner's whole cost) for nothing."""
    return bool(_COMPARE.search(question) or _DOCUMENT.search(question) or _LIST.search(question)
                or (_DEICTIC.search(question) and len(catalogue) <= 4)
                or (_FILE_NAME.search(question) and any(strong for _, strong in mentions(question, catalogue))))


def _for_prompt(question: str, catalogue: list[CatalogueEntry], limit: int) -> list[CatalogueEntry]:
    """At most `limit` entries, those the question mentions first, then in catalogue order."""
    if len(catalogue) <= limit:
        return list(catalogue)
    first = mentioned(question, catalogue)
    rest = [e for e in catalogue if e not in first]
    return (first + rest)[:limit]


# Words that say what to do with documents, not what to look for in them.
_ROUTE_WORDS = set(analyze("""compare comparison contrast difference differences differ differs different versus vs
between both each two changed change changes side common summarize summarise summary overview outline main topics
topic key points document documents manual manuals file files guide chapter say says cover covers covered does do
state states what how which tell describe explain list every all whole""", "en"))


def topic_terms(question: str, documents: tuple[CatalogueEntry, ...] | list[CatalogueEntry], language: str = "en") -> list[str]:
    """The words of a question left once the documents' names and the route's own words are
    taken out: what to look for in each document ("compare R-intro and R-lang on factors"
    → factors). Empty: the question asks about the documents as wholes."""
    names = set().union(*(d.terms for d in documents)) if documents else set()
    stems = {d.source.rsplit(".", 1)[0].casefold() for d in documents}
    out = []
    for w in _WORDS.findall(re.sub(r"[\w\-]+\.(pdf|docx?|txt|md|html?)\b", " ", question, flags=re.I)):
        if w.casefold() in stems:
            continue
        terms = analyze(w, language) or []
        if terms and all(t not in names and t not in _ROUTE_WORDS for t in terms):
            out.append(w)
    return out
