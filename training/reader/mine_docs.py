"""Reader training pairs mined from real documentation shipped in Debian packages (issue 25).

    python training/reader/mine_docs.py --cache /work/cache/debdocs --out /work/cache/pairs/docs.jsonl

Why: the SQuAD/SciFact pairs of make_data.py teach the reader encyclopaedia prose; on manuals it
falls back to word overlap. Debian ships documentation in which people already paired questions
with the text that answers them:
- FAQs (Debian FAQ, the Python FAQs, SQLite FAQ, Z-shell FAQ, procps FAQ, gitfaq(7)): a question
  and its answer;
- HOWTOs and guides (Debian Reference, the Python HOWTOs/tutorial/setup guides, SQLite's pages,
  git's man7 guides): headings that are questions or tasks ("Installing X" -> "How do I install X?");
- GNU Texinfo manuals (info files): an index entry and the paragraph it points at;
- man pages: an option or keyword and its description ("What does -i do in grep?",
  "Which grep option ignores case distinctions ...?").

Rows are the format train.py reads: {"task", "a", "b", "label", "kind"} with "b" = "TITLE | TEXT"
for `answers` (as make_data.py and rag_core/reader build it) and the bare source text for
`supports`. kind = "<source>/<kind>", source in faq, howto, info, man. Per question:
- positive: the first 1-3 sentences of the answer / the option's description (code kept whole);
- hard negatives from the same document: the sibling entry that shares most with the question
  (a neighbouring FAQ answer, another option of the same man page, another index entry's
  paragraph) and the topical sentence that shares most words with the question elsewhere in the
  document;
- near-miss questions made the way SQuAD-2's unanswerable ones were (the option or entity swapped
  for a sibling's, a neighbouring program, an antonym, a rare negation), paired with the original
  answer: label 0;
- `supports` rows for option descriptions ("The -i option of grep ignores ...").

HARD RULE: nothing the benchmarks evaluate on enters training. benchmarks/data/
EVALUATION_DOCUMENTS.txt lists packages (refused with an AssertionError if requested) and program
names (any document whose path or title names one is skipped and counted; so is any single entry
whose question or heading names one). make_data.assert_not_evaluation is applied too, and no file
outside the cache directory is ever read (never ../shared/data).

Packages are pinned (PACKAGES); `apt-get download NAME=VERSION` into --cache, `dpkg-deb -x`.
Each package's version and licence (from usr/share/doc/PKG/copyright) go into the sources JSON.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import random
import re
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_data  # noqa: E402  (ANTONYMS, Idf, assert_not_evaluation)
from rag_core.text.analysis import analyze  # noqa: E402
from rag_core.text.sentences import split_sentences  # noqa: E402

EVALUATION_LIST = ROOT / "benchmarks" / "data" / "EVALUATION_DOCUMENTS.txt"
MAX_LEN = {"answers": 128, "supports": 160}

# ---- what is mined, pinned (Debian 12 "bookworm", main) -----------------------------------------
PACKAGES = {
    "debian-faq": "11.1",
    "python3.11-doc": "3.11.2-6+deb12u9",
    "sqlite3-doc": "3.40.1-2+deb12u2",
    "zsh-common": "5.9-4",
    "zsh-doc": "5.9-4",
    "procps": "2:4.0.2-3",
    "git-man": "1:2.39.5-0+deb12u3",
    "debian-reference-en": "2.100",
    "info": "6.8-6+b1",
    "coreutils": "9.1-1",
    "grep": "3.8-5",
    "sed": "4.9-1+deb12u1",
    "tar": "1.34+dfsg-1.2+deb12u1",
    "findutils": "4.9.0-4",
    "diffutils": "1:3.8-4",
    "gzip": "1.12-1",
    "xz-utils": "5.4.1-1+deb12u2",
    "rsync": "3.5.0+ds1-0+deb12u1",
    "curl": "7.88.1-10+deb12u15",
    "wget": "1.21.3-1+deb12u1",
    "openssh-client": "1:9.2p1-2+deb12u10",
    "make": "4.3-4.1",
    "less": "590-2.1~deb12u2",
    "gawk": "1:5.2.1-2",
    "tmux": "3.3a-3",
    "git-doc": "1:2.39.5-0+deb12u3",
    "harden-doc": "3.19+nmu1",
    "python-django-doc": "3:3.2.25-0+deb12u7",
    "apache2-doc": "2.4.71-1~deb12u1",
    "postgresql-doc-15": "15.20-0+deb12u1",
    "developers-reference": "12.18",
    "aptitude-doc-en": "0.8.13-5",
}

PY = "usr/share/doc/python3.11/html"
DJ = "usr/share/doc/python-django-doc/html"
# (package, glob inside the extracted package, parser, source, collection name)
DOCUMENTS = [
    ("debian-faq", "usr/share/doc/debian/FAQ/*.html", "html", "faq", "Debian FAQ"),
    ("python3.11-doc", f"{PY}/faq/*.html", "html", "faq", "Python FAQ"),
    ("sqlite3-doc", "usr/share/doc/sqlite3/faq.html", "html", "faq", "SQLite FAQ"),
    ("zsh-common", "usr/share/doc/zsh-common/FAQ.gz", "textfaq", "faq", "Z-Shell FAQ"),
    ("procps", "usr/share/doc/procps/FAQ.gz", "textfaq", "faq", "procps FAQ"),
    ("git-man", "usr/share/man/man7/gitfaq.7.gz", "manfaq", "faq", "Git FAQ"),
    ("debian-reference-en", "usr/share/debian-reference/*.en.html", "html", "howto", "Debian Reference"),
    ("python3.11-doc", f"{PY}/howto/*.html", "html", "howto", "Python HOWTOs"),
    ("python3.11-doc", f"{PY}/tutorial/*.html", "html", "howto", "Python Tutorial"),
    ("python3.11-doc", f"{PY}/using/*.html", "html", "howto", "Python Setup and Usage"),
    ("python3.11-doc", f"{PY}/installing/*.html", "html", "howto", "Installing Python Modules"),
    ("sqlite3-doc", "usr/share/doc/sqlite3/*.html", "html", "howto", "SQLite documentation"),
    ("git-man", "usr/share/man/man7/git*.7.gz", "mansections", "howto", "Git guides"),
    ("python-django-doc", f"{DJ}/faq/*.html", "html", "faq", "Django FAQ"),
    ("apache2-doc", "usr/share/doc/apache2-doc/manual/en/ssl/ssl_faq.html", "html", "faq", "Apache SSL/TLS FAQ"),
    ("git-doc", "usr/share/doc/git-doc/user-manual.html", "html", "howto", "Git User Manual"),
    ("git-doc", "usr/share/doc/git-doc/howto/*.html", "html", "howto", "Git HOWTOs"),
    ("harden-doc", "usr/share/doc/harden-doc/html/en-US/*.html", "html", "howto", "Securing Debian Manual"),
    ("python-django-doc", f"{DJ}/howto/**/*.html", "html", "howto", "Django how-to guides"),
    ("python-django-doc", f"{DJ}/topics/**/*.html", "html", "howto", "Django topic guides"),
    ("apache2-doc", "usr/share/doc/apache2-doc/manual/en/howto/*.html", "html", "howto", "Apache HTTP Server How-To"),
    ("postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html/*.html", "html", "howto", "PostgreSQL 15 Documentation"),
    ("developers-reference", "usr/share/developers-reference/*.html", "html", "howto", "Debian Developer's Reference"),
    ("aptitude-doc-en", "usr/share/doc/aptitude/html/en/*.html", "html", "howto", "aptitude user's manual"),
    ("coreutils", "usr/share/info/coreutils.info*", "info", "info", "GNU Coreutils manual"),
    ("grep", "usr/share/info/grep.info*", "info", "info", "GNU grep manual"),
    ("sed", "usr/share/info/sed.info*", "info", "info", "GNU sed manual"),
    ("findutils", "usr/share/info/find.info*", "info", "info", "GNU Findutils manual"),
    ("diffutils", "usr/share/info/diffutils.info*", "info", "info", "GNU Diffutils manual"),
    ("gzip", "usr/share/info/gzip.info*", "info", "info", "GNU gzip manual"),
    ("wget", "usr/share/info/wget.info*", "info", "info", "GNU Wget manual"),
    ("zsh-doc", "usr/share/info/zsh.info*", "info", "info", "Zsh manual"),
    ("info", "usr/share/info/info-stnd.info*", "info", "info", "GNU Info manual"),
]
MAN_PACKAGES = ["coreutils", "grep", "sed", "tar", "findutils", "diffutils", "gzip", "xz-utils", "rsync", "curl",
                "wget", "openssh-client", "git-man", "make", "less", "procps", "gawk", "tmux"]
for _p in MAN_PACKAGES:
    DOCUMENTS.append((_p, "usr/share/man/man[158]/*.gz", "man", "man", "man pages"))
INFO_MAIN_PROGRAM = {"coreutils": "coreutils", "grep": "grep", "sed": "sed", "find": "find", "diffutils": "diff",
                     "gzip": "gzip", "wget": "wget", "zsh": "zsh", "info-stnd": "info"}
# programs one might confuse with each other: the "neighbouring program" of a near-miss
NEIGHBOURS = [
    "grep sed awk gawk find xargs", "tar gzip xz zip bzip2 cpio", "curl wget rsync scp ssh sftp",
    "cp mv rsync ln install", "ls du df stat find", "head tail cat less more", "diff cmp sdiff patch comm",
    "sort uniq cut paste join tr", "ps top kill pkill pgrep free", "git svn hg", "make cmake ninja",
    "zsh ksh csh tcsh fish", "sqlite3 psql mysql", "tmux screen", "ssh ssh-agent ssh-add ssh-keygen",
]

# ---- nothing the benchmarks evaluate on may train the reader -------------------------------------
_WORD = r"(?<![A-Za-z0-9])%s(?![A-Za-z0-9])"


class EvaluationDocument(AssertionError):
    """Raised for anything benchmarks/data/EVALUATION_DOCUMENTS.txt lists."""


def load_evaluation_list(path: Path = EVALUATION_LIST) -> tuple[frozenset[str], frozenset[str]]:
    """(packages, programs) from EVALUATION_DOCUMENTS.txt."""
    packages, programs = set(), set()
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        what, _, name = line.partition(" ")
        name = name.strip()
        if what == "package" and name:
            packages.add(name)
        elif what == "program" and name:
            programs.add(name)
        else:
            raise ValueError(f"{path}: cannot read line {line!r}")
    return frozenset(packages), frozenset(programs)


def _program_patterns(programs) -> list[tuple[str, re.Pattern, re.Pattern]]:
    out = []
    for prog in sorted(programs):
        if prog == "R":
            # R only as a program of its own: a path component "R" / "r", or one that starts
            # "R-", "R.", "r-doc…" ("R-intro.html", "/usr/share/R/doc", "r-base-core"); in a
            # title, a standalone capital R ("R FAQ", "An Introduction to R"), never the R
            # of "-R" (an option), "R*Tree", "R's" or of any longer word.
            path_rx = re.compile(r"(?:^|/)(?:R|r)(?:$|/|[-_.][A-Za-z0-9])")
            title_rx = re.compile(r"(?<![\w\-.'/$*])R(?![\w'*])")
        else:
            path_rx = re.compile(_WORD % re.escape(prog), re.I)
            title_rx = path_rx
        out.append((prog, path_rx, title_rx))
    return out


class Guard:
    """The evaluation list, applied to packages, documents (path or title) and entries."""

    def __init__(self, path: Path = EVALUATION_LIST):
        self.packages, self.programs = load_evaluation_list(path)
        self._patterns = _program_patterns(self.programs)
        self.skipped: Counter = Counter()
        self.skipped_names: list[str] = []

    def check_package(self, name: str) -> None:
        if name in self.packages:
            raise EvaluationDocument(f"refusing package {name!r}: benchmarks/data/EVALUATION_DOCUMENTS.txt lists it")

    def refused_program(self, path_or_title: str) -> str | None:
        """The listed program a path or title names (word-boundary match), or None."""
        text = str(path_or_title)
        is_path = "/" in text and " " not in text.strip()
        for prog, path_rx, title_rx in self._patterns:
            if (path_rx if is_path else title_rx).search(text):
                return prog
            if is_path and prog != "R" and title_rx.search(text):
                return prog
        return None

    def check_document(self, path_or_title: str, strict: bool = True) -> None:
        """Raise for a path or title that names a listed program. `strict` (documents): also
        make_data.assert_not_evaluation, whose one-letter "R" rule refuses any standalone capital
        R, the "-R" of an option included; entries (one question, one option) use this module's
        finer rule only, so "What does -R do in chown?" stays while "R FAQ" goes."""
        prog = self.refused_program(path_or_title)
        if prog:
            raise EvaluationDocument(f"refusing {path_or_title!r}: it names {prog!r}, whose documentation is evaluated")
        if strict:
            make_data.assert_not_evaluation(path_or_title)

    def allows(self, path_or_title: str, what: str) -> bool:
        """check_document as a filter: count what was skipped."""
        try:
            self.check_document(path_or_title, strict=what != "entry")
        except AssertionError:
            self.skipped[what] += 1
            self.skipped_names.append(f"{what}: {path_or_title}")
            return False
        return True


def assert_in_cache(path: Path, cache: Path) -> Path:
    """Every file this script reads lies in the cache it extracted (never ../shared/data)."""
    p = Path(path).resolve()
    if cache.resolve() not in p.parents:
        raise AssertionError(f"refusing to read {p}: outside the package cache {cache}")
    make_data.assert_not_evaluation(p)
    return p


# ---- text helpers ---------------------------------------------------------------------------------
def norm_ws(s: str) -> str:
    return " ".join(s.split())


_TOKENIZER = None


def ntok(text: str) -> int:
    """WordPiece tokens of the reader's own tokenizer (characters/4 if it is not installed)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        try:
            from rag_core.text.tokens import count_tokens

            count_tokens("probe")
            _TOKENIZER = count_tokens
        except Exception:  # noqa: BLE001 - tokenizer package absent: a rough count is enough
            _TOKENIZER = lambda t: len(t) // 4 + 1  # noqa: E731
    return _TOKENIZER(text)


@dataclass
class Unit:
    """A piece of answer text: a prose sentence or a code block (kept whole, newlines kept)."""
    text: str
    code: bool = False


def prose_units(text: str) -> list[Unit]:
    return [Unit(norm_ws(s)) for s in split_sentences(text) if norm_ws(s)]


def units_text(units: list[Unit]) -> str:
    return " ".join(u.text if not u.code else "\n" + u.text + "\n" for u in units).strip()


def fit(title: str, units: list[Unit], questions: list[str], task: str = "answers", max_sents: int = 3,
        prefix: str = "") -> str | None:
    """TITLE | the first 1-3 sentences of `units` that fit the task's token limit next to the
    longest of `questions` (so a positive and its near-misses see the very same text). A
    sentence ending in ':' brings the code block after it; code is cut only at line ends."""
    head = f"{title} | " if task == "answers" else ""
    qmax = max(ntok(f"{task}: {q}") for q in questions)
    budget = MAX_LEN[task] - 3 - qmax - ntok(head + prefix) - 2
    if budget < 16:
        return None
    parts: list[str] = []
    used, sents = 0, 0
    for i, u in enumerate(units):
        if sents >= max_sents and not (u.code and parts and parts[-1].rstrip().endswith(":")):
            break
        piece = u.text
        cost = ntok(piece)
        if used + cost > budget:
            if u.code:
                lines = []
                for line in piece.splitlines():
                    c = ntok(line)
                    if used + c > budget:
                        break
                    lines.append(line)
                    used += c
                if lines and not parts:
                    parts.append("\n".join(lines))
                elif lines:
                    parts.append("\n" + "\n".join(lines))
                break
            if not parts:  # one long sentence: cut at a word
                words = piece.split(" ")
                while words and ntok(" ".join(words) + " …") > budget:
                    words = words[: max(1, int(len(words) * 0.85))] if len(words) > 8 else words[:-1]
                if len(words) >= 6:
                    parts.append(" ".join(words) + " …")
            break
        parts.append(("\n" + piece) if (u.code and parts) else piece)
        used += cost
        if not u.code:
            sents += 1
    if not parts:
        return None
    body = prefix + " ".join(parts).replace(" \n", "\n").strip()
    return head + body


# idf-weighted word overlap with analysed terms cached (make_data.overlap re-analyses each time)
class Overlap:
    def __init__(self, texts: list[str]):
        self._cache: dict[str, list[str]] = {}
        self.idf = make_data.Idf([])
        self.idf.df = Counter()
        for t in texts:
            self.idf.df.update(set(self.terms(t)))
        self.idf.n = max(1, len(texts))

    def terms(self, text: str) -> list[str]:
        got = self._cache.get(text)
        if got is None:
            got = list(dict.fromkeys(analyze(text)))
            if len(self._cache) < 200_000:
                self._cache[text] = got
        return got

    def __call__(self, q: str, s: str) -> float:
        qt = self.terms(q)
        if not qt:
            return 0.0
        st = set(self.terms(s))
        tot = sum(self.idf(t) for t in qt) or 1.0
        return sum(self.idf(t) for t in qt if t in st) / tot


# ---- questions from headings, index entries and option descriptions ------------------------------
_BASE_VERBS = (
    "accept access add adjust allow analyze append apply archive assign attach avoid back build bundle cache "
    "calculate call cancel capture catch change check choose clean clear clone close collect combine commit "
    "compare compile compress compute configure connect contribute control convert copy count create customize "
    "debug declare decode define delete deploy detect determine disable display distribute download drop dump "
    "edit embed emulate enable encode encrypt enforce ensure enter estimate examine execute exit expand export "
    "extend extract fetch fill filter find fix follow force format forward free generate get grant group handle "
    "hide highlight identify ignore implement import improve include index inherit initialize insert inspect "
    "install integrate interpret invoke iterate join keep kill launch limit link list load locate lock log "
    "look make manage map mark match measure merge migrate mirror modify monitor mount move name navigate nest "
    "normalize obtain open optimize order organize override pack parse pass patch pause pick pipe plan play "
    "populate port prepare preserve prevent print process produce profile protect provide publish pull purge "
    "push put query quit raise read rebuild receive record recover redirect reduce refer register release reload "
    "remove rename reorder repair replace report request reset resize resolve restore restrict resume retrieve "
    "return reuse revert rewrite rotate run save scan schedule search secure select send separate serialize "
    "set setup share show shut sign simplify skip sort specify split start stop store strip submit subscribe "
    "substitute suppress switch sync synchronize tag test trace track transfer transform translate traverse "
    "trigger trim tune turn undo uninstall unpack update upgrade upload use validate verify view wait walk "
    "watch work wrap write"
).split()
_DOUBLE = set("embed commit submit get set put run stop ship map plan log tag zip debug format begin drop grab "
              "step wrap scan skip trim swap split strip plug pin pop cut let omit permit refer prefer control".split())


def _gerund(v: str) -> str:
    if v in _DOUBLE:
        return v + v[-1] + "ing"
    if v.endswith("ie"):
        return v[:-2] + "ying"
    if v.endswith("e") and not v.endswith(("ee", "ye", "oe")):
        return v[:-1] + "ing"
    return v + "ing"


GERUNDS = {_gerund(v): v for v in _BASE_VERBS}
_NOT_OBJECTS = {"basics", "up", "it", "overview", "tips", "notes", "details", "summary", "introduction", "and",
                "with", "on", "of", "for", "to", "in", "how", "howto", "errors", "issues", "problems"}
_NUMBERING = re.compile(r"^\s*(?:chapter\s+\d+\.?\s+|appendix\s+[a-z]\.?\s+|\(?\d+(?:\.\d+)*[.:)]?\)?\s+|"
                        r"[A-Z]\.(?:\d+\.)*\s+|q[.:]\s*)", re.I)


def clean_heading(h: str) -> str:
    h = norm_ws(html.unescape(h).replace("¶", "").replace("\xa0", " "))
    return _NUMBERING.sub("", h, count=1).strip()


def _lower_title_case(words: list[str], proper: set[str]) -> list[str]:
    out = []
    for w in words:
        core = w.strip("()[],.:;\"'")
        if core[:1].isupper() and core[1:].islower() and core.lower() not in proper and core not in proper:
            w = w.replace(core, core.lower(), 1)
        out.append(w)
    return out


def heading_question(heading: str, proper: set[str] = frozenset()) -> str | None:
    """A heading that is a question stays one; a task heading becomes one ("Installing X" →
    "How do I install X?", "How to X" / "To X" → "How do I X?"); anything else: None."""
    h = clean_heading(heading)
    h = re.sub(r"\s*\((?:[^()]*)\)\s*$", "", h) if not h.endswith("?") else h
    words = h.split()
    if len(words) < 2 or len(h) > 160:
        return None
    if h.endswith("?"):
        return h if len(words) >= 3 else None
    m = re.match(r"(?i)how (?:to|do i|do you|can i)\s+(.+)$", h)
    if m:
        return f"How do I {m.group(1).rstrip('.')}?"
    m = re.match(r"(?i)to ([a-z]+)\s+(.+)$", h)
    if m and m.group(1).lower() in _BASE_VERBS:
        return f"How do I {m.group(1).lower()} {m.group(2).rstrip('.')}?"
    w0 = words[0].lower()
    if w0 in GERUNDS and words[1].lower() not in _NOT_OBJECTS:
        rest = _lower_title_case(words[1:], proper)
        return f"How do I {GERUNDS[w0]} {' '.join(rest).rstrip('.')}?"
    return None


def third_person(verb: str) -> str:
    if re.search(r"(s|x|z|ch|sh)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


_NOT_VERBS = set("a an the this that these it its if when with for in on by of as to from same like default "
                 "equivalent deprecated obsolete alias synonym see note only also default, same, print(1) "
                 "when, each all any one no not some specifies, use, -".split())


def option_clause(desc: str) -> tuple[str, str] | None:
    """The description's first clause as (third person, base form): "Ignore case distinctions in
    patterns" → ("ignores case distinctions in patterns", "ignore case distinctions in patterns");
    a description already in the third person ("Forces ssh to use IPv4") has no base form."""
    first = split_sentences(desc)[0] if desc else ""
    first = re.split(r"[;(]|, (?:so|which|and|but|unless|otherwise|e\.g\.)\b|\. ", first)[0].strip(" .,:")
    words = first.split()
    if not (3 <= len(words) <= 18) or not re.fullmatch(r"[A-Za-z]+", words[0]):
        return None
    w0 = words[0].lower()
    if w0 in _NOT_VERBS or not words[0][:1].isalpha():
        return None
    rest = " ".join(words[1:])
    if w0 in _BASE_VERBS or (w0 in {"do", "don't"}):
        if w0 == "do" and words[1].lower() == "not":
            return "does not " + " ".join(words[2:]), "not " + " ".join(words[2:])
        return f"{third_person(w0)} {rest}", f"{w0} {rest}"
    if (w0.endswith("s") and w0[:-1] in _BASE_VERBS or w0.endswith("es") and w0[:-2] in _BASE_VERBS
            or w0.endswith("ies") and w0[:-3] + "y" in _BASE_VERBS) \
            and words[1].lower() not in {"that", "which", "are", "is", "were", "of", "and", "with", "in", "for"}:
        return f"{w0} {rest}", ""  # "Forces ssh to use IPv4"; not the noun of "Commits that are ..."
    return None


OPT_RE = re.compile(r"(?<![\w-])(--?[A-Za-z0-9?#@][\w.-]*|\+[A-Za-z0-9][\w-]*)")


def option_names(tag: str) -> list[str]:
    names = []
    for part in re.split(r",\s*|\s+or\s+|\s*\|\s*", tag):
        m = OPT_RE.match(part.strip().strip("‘’'`\"[]"))
        if m:
            names.append(m.group(1).rstrip(".=,"))
    return list(dict.fromkeys(n for n in names if len(n) > 1))


TECH_ANTONYMS = dict(p.split("/") for p in (
    "install/remove enable/disable create/delete compress/decompress encrypt/decrypt start/stop add/remove "
    "mount/unmount upload/download read/write push/pull lock/unlock show/hide encode/decode include/exclude "
    "allow/deny accept/reject connect/disconnect ascending/descending upgrade/downgrade local/remote "
    "client/server input/output uppercase/lowercase absolute/relative hard/soft import/export before/after "
    "first/last maximum/minimum increase/decrease enabled/disabled visible/hidden older/newer oldest/newest "
    "suppress/force shorter/longer faster/slower larger/smaller "
    "beginning/end leading/trailing".split()))
TECH_ANTONYMS.update({v: k for k, v in list(TECH_ANTONYMS.items())})
ANTONYMS = {**make_data.ANTONYMS, **TECH_ANTONYMS}
_AUX = re.compile(r"\b(is|was|are|does|do|can|could|has|should|will|would)\b", re.I)
_ENTITY = re.compile(r"(?<!^)(?<![\w-])([A-Z][\w+.-]*[A-Za-z0-9+]|[a-z]+_[\w_]+|[\w.]+\(\)|‘[^’]{1,30}’|`[^`']{1,30}'|"
                     r"\.\w{2,12}|/[\w./-]{2,40})")


_NOT_ENTITIES = set("Why How What When Where Which Who Whom Whose Is Are Can Could Do Does Did Should Would Will "
                    "I I'm I've My The A An If In On Of For To It This That There Yes No Not And Or But With".split())


def near_miss(q: str, answer: str, rng: random.Random, options=(), programs=(), program: str = "",
              entities=(), negation: float = 0.0) -> tuple[str, str] | None:
    """A near-miss of q that `answer` no longer answers, the way SQuAD-2's were written: one
    option / program / entity swapped for a sibling's that `answer` does not mention, an antonym
    whose counterpart the answer does not hold, or (rarely) a negation. None if nothing applies."""
    low = answer.lower()
    ops = []

    def absent(x: str) -> bool:
        return re.search(_WORD % re.escape(x.lower()), low) is None

    q_opts = [o for o in OPT_RE.findall(q) if o.lower() in low]
    opt_cands = [o for o in dict.fromkeys(options) if absent(o) and o not in q]
    if q_opts and opt_cands:
        ops.append("option")
    prog_cands = [p for p in dict.fromkeys(programs) if p != program and absent(p)]
    if program and re.search(_WORD % re.escape(program), q) and prog_cands:
        ops.append("program")
    q_ents = [e for e in _ENTITY.findall(q) if e.lower() in low and e != program and e not in q_opts
              and e not in _NOT_ENTITIES]
    ent_cands = [e for e in dict.fromkeys(entities) if absent(e) and e not in q and e not in _NOT_ENTITIES]
    if q_ents and ent_cands:
        ops.append("entity")
    ants = [w for w in re.findall(r"\b[a-z]+\b", q) if w in ANTONYMS and absent(ANTONYMS[w])]
    if ants:
        ops.append("antonym")
    neg = re.search(r"\b(is|are|does|do|can|could|should|will|would)\s+(I|you|we|they|it|he|she|one)\b", q)
    if negation and neg and " not " not in q and "n't" not in q and rng.random() < negation:
        ops.append("negation")  # "How do I X?" → "How do I not X?"; rare, so "not" is no shortcut
    if not ops:
        return None
    weights = {"option": 2, "entity": 2, "antonym": 3, "program": 1, "negation": 1}
    op = rng.choices(ops, [weights[o] for o in ops])[0]
    if op == "option":
        return re.sub(r"(?<![\w-])" + re.escape(rng.choice(q_opts)) + r"(?![\w-])",
                      rng.choice(opt_cands).replace("\\", "\\\\"), q, count=1), op
    if op == "program":
        return re.sub(_WORD % re.escape(program), rng.choice(prog_cands).replace("\\", "\\\\"), q, count=1), op
    if op == "entity":
        e = rng.choice(q_ents)
        return q.replace(e, rng.choice(ent_cands), 1), op
    if op == "antonym":
        w = rng.choice(ants)
        return re.sub(rf"\b{re.escape(w)}\b", ANTONYMS[w], q, count=1), op
    return q[: neg.end()] + " not" + q[neg.end():], op


# ---- HTML: blocks and sections -------------------------------------------------------------------
_BLOCK_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "pre", "li", "dt", "dd", "blockquote", "div", "section",
               "ul", "ol", "dl", "body", "article", "main", "br", "hr", "tr", "table"}
_SKIP_TAGS = {"script", "style", "nav", "table", "noscript", "svg", "form", "select", "button"}
_SKIP_CLASSES = {"sphinxsidebar", "related", "footer", "navheader", "navfooter", "toc", "headerlink", "contents",
                 "toctree-wrapper", "menu", "nosearch", "fancy_toc", "list-of-tables", "list-of-examples",
                 "breadcrumb", "lot"}
_VOID = {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "wbr"}


@dataclass
class Block:
    kind: str  # h, p, pre, li
    text: str
    level: int = 0


class _HtmlBlocks(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []
        self.blocks: list[Block] = []
        self.title = ""
        self._buf: list[str] = []
        self._bold = 0
        self._in_title = False

    def _skipping(self) -> bool:
        return any(s for _, s in self.stack)

    def _kind(self) -> str:
        for tag, _ in reversed(self.stack):
            if tag in {"pre"}:
                return "pre"
            if tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
                return tag
            if tag in {"p", "li", "dt", "dd", "blockquote"}:
                return tag
        return "p"

    def flush(self):
        if not self._buf:
            return
        raw = "".join(self._buf)
        kind = self._kind()
        self._buf, bold = [], self._bold
        self._bold = 0
        if kind == "pre":
            text = raw.strip("\n").rstrip()
            if text.strip():
                self.blocks.append(Block("pre", text))
            return
        text = norm_ws(raw)
        if not text:
            return
        if kind.startswith("h"):
            self.blocks.append(Block("h", text, int(kind[1])))
        elif kind in {"p", "dt"} and (text.endswith("?") or re.match(r"\(\d+\) ", text)) and \
                bold >= 0.8 * len(text.replace(" ", "")):
            self.blocks.append(Block("h", text, 7))  # a bold question: SQLite's FAQ
        else:
            self.blocks.append(Block("pre" if kind == "pre" else "p", text))

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self._in_title = True
            return
        if tag in _BLOCK_TAGS:
            self.flush()
        if tag in _VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        role = dict(attrs).get("role") or ""
        skip = tag in _SKIP_TAGS or tag == "head" or bool(classes & _SKIP_CLASSES) or role == "navigation"
        self.stack.append((tag, skip))

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
            return
        if tag in _BLOCK_TAGS:
            self.flush()
        if tag in _VOID:
            return
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if self._in_title:
            self.title += data
            return
        if self._skipping():
            return
        self._buf.append(data)
        if any(t in {"b", "strong"} for t, _ in self.stack):
            self._bold += len(data.replace(" ", "").replace("\n", ""))


def html_blocks(text: str) -> tuple[str, list[Block]]:
    p = _HtmlBlocks()
    p.feed(text)
    p.close()
    p.flush()
    return norm_ws(html.unescape(p.title)), p.blocks


@dataclass
class Entry:
    """One question and the text that answers it, inside a document."""
    question: str
    units: list[Unit]
    heading: str = ""
    names: list[str] = field(default_factory=list)  # option names (man / info)
    program: str = ""
    clause: tuple[str, str] | None = None
    tag: str = ""


def blocks_units(blocks: list[Block]) -> list[Unit]:
    units: list[Unit] = []
    for b in blocks:
        if b.kind == "pre":
            units.append(Unit(b.text, code=True))
        else:
            units += prose_units(b.text)
    return units


def proper_words(blocks_or_text) -> set[str]:
    """Words the document capitalises in mid-sentence more often than not (Python, Debian, ...)."""
    text = blocks_or_text if isinstance(blocks_or_text, str) else " ".join(b.text for b in blocks_or_text)
    up, lowc = Counter(), Counter()
    for m in re.finditer(r"(?<=[a-z,;] )([A-Za-z][a-z]+)\b", text):
        w = m.group(1)
        (up if w[0].isupper() else lowc)[w.lower()] += 1
    return {w for w in up if up[w] > lowc[w]}


def html_sections(text: str, questions_only: bool) -> tuple[str, list[Entry]]:
    """FAQ / guide entries of an HTML page: a question or task heading and the blocks up to the
    next heading. `questions_only`: FAQs keep only headings that end in '?'."""
    title, blocks = html_blocks(text)
    proper = proper_words(blocks)
    entries = []
    for i, b in enumerate(blocks):
        if b.kind != "h" or b.level == 1:  # h1 is the page's own title
            continue
        body = []
        for nb in blocks[i + 1:]:
            if nb.kind == "h":
                break
            body.append(nb)
        if not body:
            continue
        head = clean_heading(b.text)
        q = (head if head.endswith("?") and len(head.split()) >= 3 else None) if questions_only \
            else heading_question(b.text, proper)
        if q:
            entries.append(Entry(q, blocks_units(body), heading=head))
    h1 = next((clean_heading(b.text) for b in blocks if b.kind == "h" and b.level == 1), "")
    title = re.split(r"\s+[—|–-]\s+", title)[0].strip() if title else ""
    return clean_heading(title or h1), entries


# ---- plain-text FAQs ------------------------------------------------------------------------------
_TXT_Q = re.compile(r"^(?:(?:\d+(?:\.\d+)*[.:)]|Q[.:]|Question\s*\d*[.:])\s*)?(\S.*\?)(?:\s+\([^()]*\))?\s*$")
_TXT_NUMBERED = re.compile(r"^\d+(?:\.\d+)*[.:)]?\s+\S")


def parse_text_faq(text: str) -> list[Entry]:
    """Plain-text FAQ: a question on a line of its own at column 0 (optionally numbered "2.3:" or
    "Q:"), with a blank line after it; the answer runs to the next question or numbered heading.
    Paragraphs indented 4+ columns deeper than the answer's least indent are code, kept whole."""
    lines = text.expandtabs(8).splitlines()
    n = len(lines)

    def is_heading(i: int) -> bool:
        line = lines[i]
        if not line.strip() or line[0].isspace():
            return False
        prev_blank = i == 0 or not lines[i - 1].strip()
        next_blank = i + 1 >= n or not lines[i + 1].strip() or lines[i + 1].startswith(("\t", "    "))
        return prev_blank and next_blank and (bool(_TXT_Q.match(line)) or bool(_TXT_NUMBERED.match(line)))

    heads = [i for i in range(n) if is_heading(i) and len(lines[i]) <= 160]
    entries = []
    for k, i in enumerate(heads):
        m = _TXT_Q.match(lines[i])
        end = heads[k + 1] if k + 1 < len(heads) else n
        if not m:
            continue
        q = clean_heading(m.group(1))
        if len(q.split()) < 3:
            continue
        body = [ln for ln in lines[i + 1:end]]
        body = [re.sub(r"^A[.:]\s*", "", ln) for ln in body]
        indents = [len(ln) - len(ln.lstrip()) for ln in body if ln.strip()]
        if not indents:
            continue
        base = min(indents)
        units: list[Unit] = []
        para: list[str] = []

        def flush():
            if not para:
                return
            ind = min(len(x) - len(x.lstrip()) for x in para)
            if ind >= base + 4:
                units.append(Unit("\n".join(x[ind:].rstrip() for x in para), code=True))
            else:
                units.extend(prose_units(" ".join(x.strip() for x in para)))
            para.clear()

        for ln in body:
            if not ln.strip():
                flush()
            else:
                para.append(ln)
        flush()
        if units:
            entries.append(Entry(q, units, heading=q))
    return entries


# ---- man pages (man(7) and mdoc(7)) ----------------------------------------------------------------
_NAMED = {"aq": "'", "cq": "'", "oq": "'", "dq": '"', "lq": '"', "rq": '"', "em": "—", "en": "–", "bu": "•",
          "co": "©", "rg": "®", "ga": "`", "ti": "~", "ha": "^", "hy": "-", "mi": "-", "pl": "+", "mu": "×",
          "di": "÷", "<=": "<=", ">=": ">=", "->": "->", "<-": "<-", "sl": "/", "rs": "\\", "ba": "|",
          "Aq": "'", "Lq": '"', "Rq": '"', "tm": "™", "de": "°", "fm": "'", "sq": "□", "dg": "†", "ct": "¢",
          "br": "|", "ul": "_", "rn": "‾", "bv": "|", "lh": "", "rh": "", "u2014": "—", "u2013": "–"}


def roff_unescape(s: str) -> str:
    s = re.sub(r"\\f(?:\[[^\]]*\]|\(..|.)", "", s)
    s = re.sub(r"\\s[+-]?(?:\d|\(\d\d|\[\d+\])", "", s)
    s = re.sub(r"\\[hvwlLxoDbkZX]'[^']*'", "", s)
    s = re.sub(r"\\\*(?:\[([^\]]*)\]|\((..)|(.))",
               lambda m: {"lq": '"', "rq": '"', "R": "®", "Tm": "™", "Aq": "'", "aq": "'"}.get(
                   m.group(1) or m.group(2) or m.group(3), ""), s)
    s = re.sub(r"\\\((..)", lambda m: _NAMED.get(m.group(1), ""), s)
    s = re.sub(r"\\\[([^\]]*)\]", lambda m: _NAMED.get(m.group(1), ""), s)
    s = re.sub(r"\\n(?:\[[^\]]*\]|\(..|.)", "", s)
    s = re.sub(r"\\[&^|,/%:!)]|\\c$", "", s)
    s = s.replace("\\-", "-").replace("\\e", "\\").replace("\\ ", " ").replace("\\~", " ").replace("\\0", " ")
    s = s.replace("\\'", "'").replace("\\`", "`").replace('\\"', "").replace("\\.", ".")
    s = re.sub(r"\\(.)", r"\1", s)
    return s


def _roff_args(s: str) -> list[str]:
    out, cur, quoted, i = [], "", False, 0
    while i < len(s):
        c = s[i]
        if c == '"' and (quoted or not cur):
            if quoted and i + 1 < len(s) and s[i + 1] == '"':
                cur += '"'
                i += 2
                continue
            quoted = not quoted
            if not quoted:
                out.append(cur)
                cur = ""
        elif c.isspace() and not quoted:
            if cur:
                out.append(cur)
                cur = ""
        elif c == "\\" and i + 1 < len(s):
            cur += s[i: i + 2]
            i += 2
            continue
        else:
            cur += c
        i += 1
    if cur:
        out.append(cur)
    return out


_MDOC_WORDS = {"Ux": "UNIX", "Bx": "BSD", "Ox": "OpenBSD", "Nx": "NetBSD", "Fx": "FreeBSD", "Dx": "DragonFly",
               "Bsx": "BSD/OS", "At": "AT&T UNIX", "Lb": "", "Ta": " ", "Ns": "", "No": "", "Pf": ""}
_MDOC_KEEP = set("Ar Cm Ic Pa Va Ev Em Sy Li Dv Er Fn Fa Ft Cd Ms Tn Sx Ad An Lk Mt Dl Fo Fc Va Vt Ot Ql Li "
                 "Ic In Xo Xc".split())
_MDOC_WRAP = {"Dq": ('"', '"'), "Qq": ('"', '"'), "Sq": ("'", "'"), "Pq": ("(", ")"), "Op": ("[", "]"),
              "Aq": ("<", ">"), "Brq": ("{", "}"), "Bq": ("[", "]"), "Ql": ("'", "'")}
_PUNCT = set(".,:;)]?!")


def mdoc_render(args: list[str], name: str) -> str:
    """Render an mdoc macro line's arguments: Fl x → -x, Xr a 1 → a(1), Dq x → "x", Nm → name."""
    out: list[str] = []
    nospace = False
    closers: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        piece = None
        if a == "Fl":
            nxt = args[i] if i < len(args) else ""
            if nxt and nxt not in _MDOC_KEEP and nxt not in _MDOC_WRAP and nxt not in _PUNCT and nxt[:1] != "|" \
                    and not re.fullmatch(r"[A-Z][a-z]{1,2}", nxt):
                piece = "-" + roff_unescape(nxt)
                i += 1
            else:
                piece = "-"
        elif a == "Xr" and i + 1 < len(args) + 1:
            piece = roff_unescape(args[i]) + (f"({args[i + 1]})" if i + 1 < len(args) and args[i + 1].isdigit() else "")
            i += 2 if i + 1 < len(args) and args[i + 1].isdigit() else 1
        elif a == "Nm":
            nxt = args[i] if i < len(args) else ""
            if nxt and not re.fullmatch(r"[A-Z][a-z]{1,2}", nxt) and nxt not in _PUNCT:
                piece = roff_unescape(nxt)
                i += 1
            else:
                piece = name
        elif a in ("Ns", "Pf"):
            nospace = True
            continue
        elif a in _MDOC_WORDS:
            piece = _MDOC_WORDS[a]
            if not piece:
                continue
        elif a in _MDOC_WRAP:
            o, c = _MDOC_WRAP[a]
            out.append(("" if nospace or not out else " ") + o)
            nospace = True
            closers.append(c)
            continue
        elif a in ("Oo", "Oc", "Do", "Dc", "Po", "Pc", "Qo", "Qc", "So", "Sc", "Bo", "Bc"):
            piece = {"Oo": "[", "Oc": "]", "Do": '"', "Dc": '"', "Po": "(", "Pc": ")", "Qo": '"', "Qc": '"',
                     "So": "'", "Sc": "'", "Bo": "[", "Bc": "]"}[a]
            if a.endswith("o"):
                out.append(("" if not out else " ") + piece)
                nospace = True
                continue
            out.append(piece)
            continue
        elif a in _MDOC_KEEP:
            continue
        elif re.fullmatch(r"[A-Z][a-z]{1,2}", a) and a not in {"On", "In", "At", "Be", "No"}:
            continue  # an unknown macro name
        else:
            piece = roff_unescape(a)
        if piece is None:
            continue
        if closers and piece in _PUNCT:
            out.append("".join(reversed(closers)))
            closers = []
        sep = "" if (nospace or not out or piece in _PUNCT or piece in {")", "]"}) else " "
        out.append(sep + piece)
        nospace = False
    if closers:
        out.append("".join(reversed(closers)))
    return "".join(out).strip()


@dataclass
class ManItem:
    tag: str
    section: str
    text: list[Unit]


@dataclass
class ManPage:
    name: str
    section: str
    items: list[ManItem]
    paragraphs: list[tuple[str, list[Unit]]]


def parse_man(text: str, name: str = "", section: str = "") -> ManPage:
    """A man page (man(7) or mdoc(7) source) → its tagged items (.TP / .IP "tag" / .It, and the
    ".PP tag .RS body .RE" shape asciidoc writes) with their descriptions, and its untagged
    paragraphs by section. Enough roff for option lists; not a typesetter."""
    items: list[ManItem] = []
    paras: list[tuple[str, list[Unit]]] = []
    sect = ""
    cur_tag: str | None = None
    tag_pending = False
    buf: list[str] = []
    code: list[str] = []
    units: list[Unit] = []
    nofill = False
    rs = 0
    item_rs = 0
    bl = 0
    skip_until: str | None = None

    def text_flush():
        nonlocal buf, code
        if buf:
            units.extend(prose_units(" ".join(buf)))
            buf = []
        if code:
            units.append(Unit("\n".join(code).rstrip(), code=True))
            code = []

    def end_item():
        nonlocal cur_tag, units
        text_flush()
        if cur_tag is not None:
            if units:
                items.append(ManItem(norm_ws(cur_tag), sect, units))
        elif units:
            paras.append((sect, units))
        cur_tag, units = None, []

    def add_text(t: str, join: bool = False):
        nonlocal tag_pending, cur_tag
        if tag_pending:
            end_item()
            cur_tag, tag_pending = t, False
            return
        if nofill:
            code.append(t)
        else:
            if code:
                text_flush()
            if join and buf:
                buf[-1] += t
            else:
                buf.append(t)

    lines = text.splitlines()
    i = 0
    joined_prev = False
    while i < len(lines):
        raw = lines[i]
        i += 1
        if skip_until is not None:
            if raw.strip() == skip_until or (skip_until == "\\}" and "\\}" in raw):
                skip_until = None
            continue
        if raw.startswith((".\\\"", "'\\\"", '\\"')) or raw.strip() in (".", "'"):
            continue
        line = raw
        if line.startswith((".", "'")):
            req = line[1:].lstrip()
            mname, _, rest = req.partition(" ")
            mname = mname.strip()
            rest = rest.strip()
            # conditionals: take the nroff branch, drop the troff one
            if mname in ("ie", "if"):
                m = re.match(r"(!?)(\S+)\s*(.*)$", rest)
                cond, body = (m.group(2), m.group(3)) if m else ("", "")
                take = (cond == "n") != bool(m and m.group(1))
                if body.startswith("\\{"):
                    if not take:
                        skip_until = "\\}"
                    body = body[2:].lstrip("\\").strip()
                if take and body:
                    lines.insert(i, body)
                continue
            if mname == "el":
                if rest.startswith("\\{"):
                    if "\\}" not in rest:
                        skip_until = "\\}"
                continue
            if mname in ("de", "de1", "ig", "am"):
                skip_until = ".."
                continue
            if mname.startswith("\\}") or mname == "\\}":
                continue
            args = _roff_args(rest)
            if mname in ("SH", "Sh"):
                end_item()
                tag_pending = False
                sect = norm_ws(roff_unescape(" ".join(args))).upper()
                rs = item_rs = bl = 0
                continue
            if mname in ("SS", "Ss"):
                end_item()
                tag_pending = False
                continue
            if mname == "TP":
                if cur_tag is not None and rs > item_rs:  # a list inside an item's description
                    text_flush()
                    tag_pending = False
                    continue
                end_item()
                tag_pending = True
                continue
            if mname in ("IP", "TQ"):
                tag = roff_unescape(args[0]).strip() if args else ""
                is_bullet = not tag or tag in {"o", "•", "*", "-", "·"} or bool(re.fullmatch(r"\(?\d+[.)]?|[a-z][.)]", tag))
                if is_bullet or (cur_tag is not None and rs > item_rs):
                    text_flush()
                    if tag and not is_bullet:
                        buf.append(tag + ":")
                    continue
                end_item()
                cur_tag, item_rs = tag, rs
                continue
            if mname == "It":
                if bl <= 1 and sect not in ("NAME", "SYNOPSIS", "SEE ALSO"):
                    end_item()
                    cur_tag, item_rs = mdoc_render(args, name), rs
                else:
                    text_flush()
                    buf.append(mdoc_render(args, name))
                continue
            if mname == "Bl":
                bl += 1
                if bl > 1:
                    text_flush()
                continue
            if mname == "El":
                bl = max(0, bl - 1)
                if bl == 0:
                    end_item()
                continue
            if mname in ("PP", "P", "LP", "Pp", "sp", "br", "nl", "PD"):
                if mname in ("sp", "br", "PD", "Pp") or (cur_tag is not None and (rs > item_rs or bl >= 1)):
                    text_flush()
                    continue
                end_item()
                joined_prev = False
                # asciidoc's ".PP\nTAG\n.RS 4\nBODY\n.RE": read ahead for the shape
                j = i
                tag_lines = []
                while j < len(lines) and not lines[j].startswith((".", "'")) and len(tag_lines) < 3:
                    tag_lines.append(lines[j])
                    j += 1
                if tag_lines and j < len(lines) and lines[j].startswith(".RS") and \
                        len(norm_ws(roff_unescape(" ".join(tag_lines)))) <= 160:
                    cur_tag = norm_ws(roff_unescape(" ".join(tag_lines)))
                    item_rs = rs
                    i = j
                continue
            if mname == "RS":
                text_flush()
                rs += 1
                continue
            if mname == "RE":
                text_flush()
                rs = max(0, rs - 1)
                if cur_tag is not None and rs <= item_rs and bl == 0:
                    end_item()
                continue
            if mname in ("nf", "EX", "Bd"):
                text_flush()
                nofill = mname != "Bd" or "-literal" in rest or "-unfilled" in rest
                continue
            if mname in ("fi", "EE", "Ed"):
                text_flush()
                nofill = False
                continue
            if mname == "Dl":
                text_flush()
                code.append(mdoc_render(args, name))
                text_flush()
                continue
            if mname in ("B", "I", "SM", "SB"):
                if not args and i < len(lines):
                    continue
                add_text(roff_unescape(" ".join(args)))
                continue
            if mname in ("BR", "RB", "IR", "RI", "BI", "IB"):
                add_text(roff_unescape("".join(args)))
                continue
            if mname in ("UR", "MT"):
                continue
            if mname in ("UE", "ME"):
                if args:
                    add_text(roff_unescape(" ".join(args)), join=True)
                continue
            if re.fullmatch(r"[A-Z][a-z]{1,2}", mname) and mname not in ("TH", "Dd", "Dt", "Os", "Nd"):
                rendered = mdoc_render([mname] + args, name)
                if rendered:
                    add_text(rendered, join=rendered[:1] in _PUNCT)
                continue
            if mname == "Nd":
                continue
            continue  # any other request (.TH, .ft, .in, .ne, .ad, .hy, .ds, .so, ...)
        t = roff_unescape(line)
        joined = line.rstrip().endswith("\\c")
        if nofill:
            add_text(t.rstrip())
        elif t.strip():
            add_text(t.strip(), join=joined_prev)
        joined_prev = joined
    end_item()
    return ManPage(name, section, items, paras)


def man_name(path: str) -> tuple[str, str]:
    base = Path(path).name
    base = re.sub(r"\.gz$", "", base)
    m = re.match(r"(.+)\.(\d\w*)$", base)
    return (m.group(1), m.group(2)) if m else (base, "")


def man_program(name: str) -> str:
    return f"git {name[4:]}" if name.startswith("git-") else name


# ---- GNU info files --------------------------------------------------------------------------------
@dataclass
class InfoNode:
    name: str
    up: str
    lines: list[str]


def parse_info(text: str) -> tuple[dict[str, InfoNode], list[tuple[str, str, int]]]:
    """An info file (its parts concatenated) → nodes by name, and index entries
    (entry, node, line) from its index nodes. Line 1 of a node is its header line."""
    nodes: dict[str, InfoNode] = {}
    entries = []
    for chunk in text.split("\x1f"):
        chunk = chunk.lstrip("\n")
        m = re.match(r"File: [^,]+,\s+Node: ([^,\t\n]+)(.*)", chunk)
        if not m:
            continue
        up = re.search(r"Up: ([^,\t\n]+)", m.group(2))
        node = InfoNode(m.group(1).strip(), up.group(1).strip() if up else "", chunk.split("\n"))
        nodes[node.name] = node
        if "\x00\x08[index\x00\x08]" in chunk or re.search(r"^\* Menu:", chunk, re.M) and "(line " in chunk:
            for em in re.finditer(r"^\* ([^\n]+?):[ \t]+([^\n]+?)\.\s+\(line\s+(\d+)\)", chunk, re.M):
                entry = re.sub(r"\s*<\d+>$", "", norm_ws(em.group(1)))
                entries.append((entry, norm_ws(em.group(2)), int(em.group(3))))
    return nodes, entries


def info_paragraph(node: InfoNode, line: int) -> tuple[str, list[Unit]] | None:
    """(tag, units) of the paragraph an index entry points at: the paragraph holding line `line`
    (or the next one). A table item's tag lines (‘-i’ / ‘--ignore-case’) become its tag;
    indented example blocks become code units."""
    lines = node.lines
    k = max(0, line - 1)
    while k < len(lines) and not lines[k].strip():
        k += 1
    if k >= len(lines):
        return None
    start = k
    while start > 2 and lines[start - 1].strip():
        start -= 1
    end = k
    while end < len(lines) and lines[end].strip():
        end += 1
    para = lines[start:end]
    if not para or re.match(r"^[*=-]{3,}$", para[-1].strip()):
        return None
    ind = [len(x) - len(x.lstrip()) for x in para]
    tag_lines = []
    while len(tag_lines) < len(para) - 1 and ind[len(tag_lines)] < max(ind[len(tag_lines) + 1:]) and \
            len(para[len(tag_lines)].strip()) < 60 and ind[len(tag_lines)] <= 3:
        tag_lines.append(para[len(tag_lines)].strip())
    tag = ", ".join(t.strip("‘’'`") for t in tag_lines)
    body = para[len(tag_lines):]
    units = prose_units(" ".join(x.strip() for x in body))
    # an example after a colon: the next indented block
    if body and body[-1].rstrip().endswith(":") and end + 1 < len(lines):
        j = end + 1
        blk = []
        while j < len(lines) and lines[j].strip():
            blk.append(lines[j])
            j += 1
        if blk:
            cut = min(len(x) - len(x.lstrip()) for x in blk)
            units.append(Unit("\n".join(x[cut:].rstrip() for x in blk), code=True))
    if not units or sum(len(u.text) for u in units) < 25:
        return None
    return tag, units


def info_program(nodes: dict[str, InfoNode], node: str, default: str) -> str:
    seen = set()
    while node and node not in seen:
        seen.add(node)
        m = re.match(r"(?:Invoking\s+)?([a-z][\w+.-]*)\s+invocation$", node) or re.match(r"Invoking\s+([a-z][\w+.-]*)$", node)
        if m:
            return m.group(1)
        node = nodes[node].up if node in nodes else ""
    return default


def info_chapter(nodes: dict[str, InfoNode], node: str) -> str:
    seen = set()
    while node in nodes and nodes[node].up not in ("Top", "(dir)", "") and node not in seen:
        seen.add(node)
        node = nodes[node].up
    return node


def entry_question(entry: str, program: str, rng: random.Random, clause=None) -> str:
    """An index entry as a question about `program`."""
    if OPT_RE.fullmatch(entry):
        if clause and rng.random() < 0.5:
            return f"Which {program} option {clause[0]}?"
        return rng.choice([f"What does {entry} do in {program}?", f"What is the {entry} option of {program} for?",
                           f"What does the {entry} option do in {program}?"])
    e = entry
    m = re.match(r"(.+?),\s+(.+)$", e)
    if m:  # "files, removing" → "removing files"; "command not found, handling of" → "handling of …"
        x, y = m.group(1), m.group(2)
        e = f"{y} {x}" if len(y.split()) == 1 or re.search(r"\b(of|with|in|for|to|on|by)$", y) else f"{x} ({y})"
    words = e.split()
    if words and words[0].lower() in GERUNDS and len(words) >= 2 and words[1].lower() not in _NOT_OBJECTS:
        return f"How do I {GERUNDS[words[0].lower()]} {' '.join(words[1:])} in {program}?"
    return rng.choice([f"What is {e} in {program}?", f"How does {program} handle {e}?",
                       f"What does the {program} documentation say about {e}?", f"{e} in {program}"])


# ---- rows -------------------------------------------------------------------------------------------
Row = tuple[str, str, str, int, str]  # task, a, b, label, kind


@dataclass
class Doc:
    package: str
    path: str
    source: str
    title: str
    entries: list[Entry]
    program: str = ""
    extra_sentences: list[str] = field(default_factory=list)


def _first_text(units: list[Unit]) -> str:
    return units_text(units[:3])


def doc_rows(doc: Doc, rng: random.Random, programs: list[str], guard: Guard, ov: Overlap) -> list[list[Row]]:
    """Rows for one document, grouped by question (a group is kept or dropped whole)."""
    groups: list[list[Row]] = []
    src = doc.source
    all_sents = [(k, u.text) for k, e in enumerate(doc.entries) for u in e.units if not u.code]
    all_sents += [(-1, s) for s in doc.extra_sentences]
    entity_pool = [x for e in doc.entries for x in _ENTITY.findall(e.question)]
    option_pool = [n for e in doc.entries for n in e.names]
    for k, e in enumerate(doc.entries):
        if not guard.allows(e.question, "entry") or (e.heading and not guard.allows(e.heading, "entry")):
            continue
        q = e.question
        prog = e.program or doc.program
        answer_text = units_text(e.units)
        # the sibling that shares most with the question (same document, another entry)
        sibs = [(ov(q, _first_text(s.units)), j) for j, s in enumerate(doc.entries)
                if j != k and not set(s.names) & set(e.names) and _first_text(s.units) != _first_text(e.units)
                and ov(_first_text(s.units), _first_text(e.units)) < 0.8]
        sibs.sort(reverse=True)
        nm = near_miss(q, answer_text, rng, options=[n for j in (s for _, s in sibs[:8]) for n in doc.entries[j].names]
                       or option_pool, programs=programs, program=prog, entities=entity_pool,
                       negation=0.15 if src in ("faq", "howto") else 0.0)
        qs = [q] + ([nm[0]] if nm and nm[0] != q else [])
        title = doc.title
        pos = fit(title, e.units, qs)
        if not pos:
            continue
        rows: list[Row] = [("answers", q, pos, 1, f"{src}/positive")]
        if sibs:
            s = doc.entries[sibs[0][1]]
            neg = fit(title, s.units, [q])
            if neg and neg != pos:
                rows.append(("answers", q, neg, 0, f"{src}/sibling"))
        own = set(u.text for u in e.units)
        cands = [(ov(q, s), s) for j, s in all_sents if j != k and s not in own and len(s) > 40
                 and not s.rstrip().endswith(":") and s[:1].isalnum()]
        if cands and rng.random() < 0.5:
            score, best = max(cands)
            if score > 0.2:
                t = fit(title, [Unit(best)], [q])
                if t and t != pos:
                    rows.append(("answers", q, t, 0, f"{src}/topical"))
        if nm and nm[0] != q:
            rows.append(("answers", nm[0], pos, 0, f"{src}/nearmiss_{nm[1]}"))
        # supports: an option description supports "The -x option of PROG <does what it says>"
        if e.names and e.clause and rng.random() < 0.35:
            name = rng.choice(e.names)
            claim = f"The {name} option of {prog} {e.clause[0]}."
            srcs = fit("", e.units, [claim], task="supports", max_sents=2)
            if srcs:
                rows.append(("supports", claim, srcs, 1, f"{src}/supports_option"))
                others = [n for n in option_pool if n not in e.names and n.lower() not in answer_text.lower()]
                if others:
                    rows.append(("supports", f"The {rng.choice(others)} option of {prog} {e.clause[0]}.", srcs, 0,
                                 f"{src}/supports_swap"))
                if sibs:
                    s = doc.entries[sibs[0][1]]
                    other = fit("", s.units, [claim], task="supports", max_sents=2)
                    if other:
                        rows.append(("supports", claim, other, 0, f"{src}/supports_sibling"))
        groups.append(rows)
    return groups


# ---- documents from the extracted packages ----------------------------------------------------------
def read_text(path: Path, cache: Path) -> str:
    p = assert_in_cache(path, cache)
    data = gzip.open(p).read() if p.suffix == ".gz" else p.read_bytes()
    return data.decode("utf-8", errors="replace")


def man_entries(page: ManPage, program: str, rng: random.Random) -> tuple[list[Entry], list[str]]:
    """Option and keyword items of a man page as entries (question chosen by template)."""
    entries = []
    for it in page.items:
        if it.section in ("NAME", "SYNOPSIS", "SEE ALSO", "AUTHOR", "AUTHORS", "COPYRIGHT", "REPORTING BUGS",
                          "HISTORY", "BUGS"):
            continue
        desc = units_text(it.text)
        if len(desc) < 20:
            continue
        if it.section.startswith("EXAMPLE") and re.match(r"To [a-z]", it.tag) and it.tag.endswith(":"):
            q = heading_question(it.tag.rstrip(":"))
            if q and not re.search(_WORD % re.escape(program), q):
                q = q[:-1] + f" with {program}?"
            if q:
                entries.append(Entry(q, [Unit(it.tag)] + [Unit(units_text(it.text), code=True)], heading=it.tag,
                                     program=program))
            continue
        names = option_names(it.tag) if it.tag[:1] in "-+" else []
        clause = option_clause(desc)
        if names:
            name = rng.choice(names)
            longs = [n for n in names if n.startswith("--")]
            templates = [f"What does {name} do in {program}?", f"What does the {name} option of {program} do?"]
            if longs:
                templates.append(f"What is {program}'s {longs[0]} option for?")
            if clause:
                templates += [f"Which {program} option {clause[0]}?"] * 2
                if clause[1]:
                    templates += [f"How do I make {program} {clause[1]}?"]
            if rng.random() < 0.08:
                templates = [f"{program} {name}"]
            q = rng.choice(templates)
        elif re.fullmatch(r"[A-Za-z_][\w.<>*-]{2,40}", it.tag) and not it.tag.isdigit() and \
                (it.tag[:1].isupper() or "." in it.tag or "_" in it.tag):
            q = rng.choice([f"What does {it.tag} do in {program}?", f"What is {it.tag} in {program}?",
                            f"What does the {it.tag} setting control in {program}?"])
        else:
            continue
        units = list(it.text)
        units[0] = Unit(f"{it.tag}: {units[0].text}" if not units[0].code else it.tag + ":", False) \
            if not units[0].code else units[0]
        if units[0].code:
            units.insert(0, Unit(f"{it.tag}:"))
        entries.append(Entry(q, units, heading=it.tag, names=names, program=program, clause=clause, tag=it.tag))
    extra = [u.text for _, us in page.paragraphs for u in us if not u.code]
    return entries, extra


def load_docs(pkg_root: dict[str, Path], cache: Path, guard: Guard, rng: random.Random, used: dict) -> list[Doc]:
    docs: list[Doc] = []
    seen_paths = set()
    for pkg, pattern, parser, source, collection in DOCUMENTS:
        guard.check_package(pkg)
        root = pkg_root[pkg]
        paths = sorted(p for p in root.glob(pattern) if p.is_file() and not p.is_symlink())
        if parser == "info":
            # an indirect info file: the parts in order; the tag-table file alone holds no text
            parts = [p for p in paths if re.search(r"\.info(-\d+)?(\.gz)?$", p.name)]
            parts.sort(key=lambda p: int(re.search(r"-(\d+)", p.name).group(1)) if re.search(r"info-(\d+)", p.name) else 0)
            paths = [parts] if parts else []
        for path in paths:
            files = path if isinstance(path, list) else [path]
            rel = "/" + str(files[0].relative_to(root))
            key = (pkg, rel, source)
            if key in seen_paths or (parser == "html" and source == "howto" and "/faq/" in rel):
                continue
            seen_paths.add(key)
            if not guard.allows(rel, "document"):
                continue
            text = "".join(read_text(f, cache) for f in files)
            doc = None
            if parser == "html":
                title, entries = html_sections(text, questions_only=source == "faq")
                if not guard.allows(title, "document"):
                    continue
                if collection.split()[0].lower() not in title.lower():
                    title = f"{collection} — {title}"
                doc = Doc(pkg, rel, source, title, entries)
            elif parser == "textfaq":
                doc = Doc(pkg, rel, source, collection, parse_text_faq(text))
            elif parser in ("man", "manfaq", "mansections"):
                name, sec = man_name(rel)
                if not guard.allows(name, "document"):
                    continue
                page = parse_man(text, name, sec)
                title = f"{name}({sec})"
                if parser == "manfaq":
                    entries = [Entry(it.tag, it.text, heading=it.tag) for it in page.items if it.tag.endswith("?")]
                    doc = Doc(pkg, rel, source, f"{collection} — gitfaq({sec})", entries)
                elif parser == "mansections":
                    doc = Doc(pkg, rel, source, title, man_section_entries(text, name))
                else:
                    entries, extra = man_entries(page, man_program(name), rng)
                    doc = Doc(pkg, rel, source, title, entries, program=man_program(name), extra_sentences=extra)
            elif parser == "info":
                stem = re.sub(r"\.info.*$", "", files[0].name)
                docs += info_docs(text, pkg, rel, collection, INFO_MAIN_PROGRAM.get(stem, stem), guard, rng)
                used[pkg]["documents"].append(rel)
                continue
            if doc and doc.entries:
                docs.append(doc)
                used[pkg]["documents"].append(rel)
    return docs


def man_section_entries(text: str, name: str) -> list[Entry]:
    """Guides written as man pages (gittutorial(7), ...): .SH/.SS headings that are tasks or
    questions, with the text up to the next heading."""
    out = []
    heads = list(re.finditer(r"^\.S[HS] (.+)$", text, re.M))
    for k, m in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        body = text[m.end(): end]
        page = parse_man(".SH BODY\n" + body, name)
        units = [u for _, us in page.paragraphs for u in us]
        q = heading_question(roff_unescape(m.group(1).strip('"')).title() if m.group(1).isupper()
                             else roff_unescape(m.group(1).strip('"')))
        if q and units:
            out.append(Entry(q, units, heading=clean_heading(roff_unescape(m.group(1).strip('"')))))
    return out


def info_docs(text: str, pkg: str, rel: str, collection: str, main_prog: str, guard: Guard,
              rng: random.Random) -> list[Doc]:
    """One Doc per chapter-ish group of an info manual: an index entry is a question, the
    paragraph it points at the answer; sibling entries are other entries of the same manual."""
    nodes, entries = parse_info(text)
    by_target: dict[tuple[str, int], list[str]] = defaultdict(list)
    for entry, node, line in entries:
        if node in nodes:
            by_target[(node, line)].append(entry)
    targets = list(by_target.items())
    rng.shuffle(targets)
    out_entries: list[Entry] = []
    out_nodes: list[str] = []
    seen_para = set()
    for (node, line), names in targets:
        if re.search(r"(?i)copying|licen[cs]e|index$|reporting bugs|^top$", node):
            continue
        if not guard.allows(node, "entry"):
            continue
        got = info_paragraph(nodes[node], line)
        if not got:
            continue
        tag, units = got
        key = (node, units[0].text)
        if key in seen_para:
            continue
        seen_para.add(key)
        prog = info_program(nodes, node, main_prog)
        entry = rng.choice(names)
        opts = [n for n in names if OPT_RE.fullmatch(n)] or option_names(tag)
        clause = option_clause(units_text(units)) if opts else None
        q = entry_question(entry, prog, rng, clause)
        if tag:
            units = [Unit(f"{tag}: {units[0].text}")] + units[1:]
        e = Entry(q, units, heading=entry, names=opts, program=prog, clause=clause if opts else None, tag=tag)
        out_entries.append(e)
        out_nodes.append(node)
    # siblings come from the same program and chapter, so the overlap search stays small and
    # the siblings topical
    chapters: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for e, node in zip(out_entries, out_nodes):
        chapters[(e.program, info_chapter(nodes, node))].append(e)
    docs = []
    for (prog, _chapter), es in sorted(chapters.items()):
        for s in range(0, len(es), 150):
            docs.append(Doc(pkg, rel, "info", collection, es[s: s + 150], program=prog))
    return docs


# ---- packages ---------------------------------------------------------------------------------------
def fetch_package(name: str, version: str, cache: Path, guard: Guard, use_candidate: bool = False) -> tuple[Path, str]:
    """apt-get download NAME=VERSION into cache/debs (kept), dpkg-deb -x into cache/root/NAME."""
    guard.check_package(name)
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    ver_file = version.split(":", 1)[-1]
    found = [p for p in debs.glob(f"{name}_*.deb") if p.name.split("_")[1].replace("%3a", ":").split(":")[-1] == ver_file]
    if not found:
        spec = name if use_candidate else f"{name}={version}"
        r = subprocess.run(["apt-get", "download", "-q", spec], cwd=debs, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"apt-get download {spec} failed (run apt-get update; if the pinned version left the "
                             f"archive, use --candidate and update PACKAGES/DATA_SOURCES.md):\n{r.stderr[-800:]}")
        found = sorted(debs.glob(f"{name}_*.deb"), key=lambda p: p.stat().st_mtime)[-1:]
    deb = found[0]
    real_version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True,
                                  check=True).stdout.strip()
    root = cache / "root" / name
    stamp = root / ".extracted"
    if not stamp.exists() or stamp.read_text() != deb.name:
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        stamp.write_text(deb.name)
    return root, real_version


def licence_of(root: Path, name: str, cache: Path) -> dict:
    """The licence(s) a package's copyright file states: DEP-5 "License:" short names (the
    Files: * stanza first), or for a free-form file the licences it names."""
    doc = root / "usr" / "share" / "doc" / name
    cp = doc / "copyright"
    if doc.is_symlink():  # zsh-doc → zsh-common: the copyright file is the target package's
        target = doc.readlink().name
        cp = cache / "root" / target / "usr" / "share" / "doc" / target / "copyright"
    if not cp.exists():
        return {"licence": "unknown", "copyright": None}
    text = read_text(cp, cache)
    rel = str(cp.relative_to(cache))
    if text.startswith("Format:"):
        main, names = None, []
        for stanza in re.split(r"\n\s*\n", text):
            files = re.search(r"^Files:\s*(.+)$", stanza, re.M)
            lic = re.search(r"^License:\s*(.+)$", stanza, re.M)
            if lic:
                short = lic.group(1).strip()
                if len(short) <= 60:
                    names.append(short)
                    if files and files.group(1).strip() == "*" and main is None:
                        main = short
        names = list(dict.fromkeys(names))
        docs = [re.search(r"^License:\s*(.+)$", s, re.M).group(1).strip() for s in re.split(r"\n\s*\n", text)
                if re.search(r"^Files:.*(doc|man|\.texi|\.info|FAQ|html)", s, re.M) and re.search(r"^License:", s, re.M)]
        return {"licence": main or (names[0] if names else "unknown"), "documentation_licence": list(dict.fromkeys(docs)),
                "all_licences": names, "copyright": rel}
    found = []
    for pat, label in ((r"GNU Free Documentation License|GFDL", "GFDL"),
                       (r"GNU General Public License[^.]*?version 3|GPL-3", "GPL-3+"),
                       (r"GNU General Public License[^.]*?version 2|GPL-2|GPL version 2", "GPL-2+"),
                       (r"\bGPL\b", "GPL"), (r"PYTHON SOFTWARE FOUNDATION LICENSE|Python License", "PSF-2.0"),
                       (r"public domain", "public-domain"), (r"Open Publication License", "OPL"),
                       (r"permission to use, copy, modify", "permissive")):
        if re.search(pat, text, re.I | re.S):
            found.append(label)
    if "GPL-3+" in found or "GPL-2+" in found:
        found = [f for f in found if f != "GPL"]
    if "PSF-2.0" in found:  # the Python licence stack; its GPL mentions are a compatibility table
        found = ["PSF-2.0"]
    if not found and re.search(r"Permission is granted to make and distribute verbatim copies", text):
        found = ["verbatim-copying permission notice"]
    return {"licence": " / ".join(found) or "see copyright", "copyright": rel}


# ---- balance, output --------------------------------------------------------------------------------
def cap_groups(groups_by_source: dict[str, list[list[Row]]], max_rows: int | None, max_share: float,
               rng: random.Random) -> dict[str, list[list[Row]]]:
    out = {}
    for s, gs in groups_by_source.items():
        gs = list(gs)
        rng.shuffle(gs)
        if max_rows:
            keep, n = [], 0
            for g in gs:
                if n + len(g) > max_rows:
                    break
                keep.append(g)
                n += len(g)
            gs = keep
        out[s] = gs
    for _ in range(5):  # no source above max_share of the rows
        sizes = {s: sum(len(g) for g in gs) for s, gs in out.items()}
        total = sum(sizes.values())
        big = max(sizes, key=sizes.get)
        if not total or sizes[big] <= max_share * total + 1:
            break
        limit = int(max_share / (1 - max_share) * (total - sizes[big]))
        keep, n = [], 0
        for g in out[big]:
            if n + len(g) > limit:
                break
            keep.append(g)
            n += len(g)
        out[big] = keep
    return out


def dedup(rows: list[Row]) -> tuple[list[Row], int]:
    """One row per (task, a, b); where both labels occur, the positive stays."""
    best: dict[tuple[str, str, str], Row] = {}
    conflicts = 0
    for r in rows:
        k = (r[0], r[1], r[2])
        if k in best:
            if best[k][3] != r[3]:
                conflicts += 1
                if r[3] == 1:
                    best[k] = r
            continue
        best[k] = r
    return list(best.values()), conflicts


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", required=True, help="package cache, outside the repository")
    ap.add_argument("--out", required=True, help="JSONL of pairs; the sources JSON is written beside it")
    ap.add_argument("--max-per-source", type=int, default=None, help="at most N rows per source (faq/howto/info/man)")
    ap.add_argument("--max-per-package", type=int, default=2400, help="at most N rows per package and source")
    ap.add_argument("--max-share", type=float, default=0.4, help="no source above this share of all rows")
    ap.add_argument("--candidate", action="store_true", help="download apt's candidate versions instead of the pins")
    ap.add_argument("--seed", type=int, default=25)
    args = ap.parse_args(argv)
    cache = Path(args.cache).resolve()
    if ROOT.resolve() in cache.parents or cache == ROOT.resolve():
        raise SystemExit("--cache must lie outside the repository")
    guard = Guard()
    rng = random.Random(args.seed)
    pkg_root, used = {}, {}
    for name, version in PACKAGES.items():
        root, real = fetch_package(name, version, cache, guard, args.candidate)
        pkg_root[name] = root
        used[name] = {"package": name, "version": real, "pinned": version, **licence_of(root, name, cache),
                      "documents": [], "pairs": 0, "pairs_by_kind": {}}
    docs = load_docs(pkg_root, cache, guard, rng, used)
    programs = sorted({d.program for d in docs if d.program} | {e.program for d in docs for e in d.entries if e.program})
    neighbours = {}
    for line in NEIGHBOURS:
        names = line.split()
        for n in names:
            neighbours.setdefault(n, []).extend(x for x in names if x != n)

    by_source_pkg: dict[tuple[str, str], list[list[Row]]] = defaultdict(list)
    corpus_ov: dict[tuple[str, str], Overlap] = {}
    for d in docs:
        key = (d.package, d.source)
        if key not in corpus_ov:
            texts = [units_text(e.units) for dd in docs if (dd.package, dd.source) == key for e in dd.entries]
            corpus_ov[key] = Overlap(texts)
        progs = set()
        for e in d.entries[:1]:
            progs.add(e.program or d.program)
        prog = next(iter(progs), "") or d.program
        near = neighbours.get(prog, []) + [p for p in programs if p != prog and not p.startswith("git ")]
        near = list(dict.fromkeys(neighbours.get(prog, []) or near))
        if prog.startswith("git "):
            near = [p for p in programs if p.startswith("git ") and p != prog]
        if len(near) < 3:
            near = list(dict.fromkeys(near + [p for p in programs if p != prog]))
        rng.shuffle(near)
        for g in doc_rows(d, rng, near[:12], guard, corpus_ov[key]):
            by_source_pkg[key].append(g)
    # per package: at most --max-per-package rows per source, so no one manual dominates a source
    by_source: dict[str, list[list[Row]]] = defaultdict(list)
    group_pkg: dict[int, str] = {}
    for (pkg, src), gs in sorted(by_source_pkg.items()):
        rng.shuffle(gs)
        n = 0
        for g in gs:
            if n + len(g) > args.max_per_package:
                break
            n += len(g)
            by_source[src].append(g)
            group_pkg[id(g)] = pkg
    capped = cap_groups(by_source, args.max_per_source, args.max_share, rng)
    rows: list[Row] = []
    row_pkg: list[str] = []
    for src, gs in capped.items():
        for g in gs:
            rows += g
            row_pkg += [group_pkg[id(g)]] * len(g)
    pkg_of = {}
    for r, p in zip(rows, row_pkg):
        pkg_of.setdefault((r[0], r[1], r[2]), p)
    rows, conflicts = dedup(rows)
    rng.shuffle(rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for task, a, b, y, kind in rows:
            fh.write(json.dumps({"task": task, "a": a, "b": b, "label": y, "kind": kind}) + "\n")
    for r in rows:
        p = pkg_of[(r[0], r[1], r[2])]
        used[p]["pairs"] += 1
        used[p]["pairs_by_kind"][r[4]] = used[p]["pairs_by_kind"].get(r[4], 0) + 1
    c = Counter((r[4], r[3]) for r in rows)
    by_src = Counter(r[4].split("/")[0] for r in rows)
    labels = Counter(r[3] for r in rows if r[0] == "answers")
    over = sum(1 for r in rows if ntok(f"{r[0]}: {r[1]}") + ntok(r[2]) + 3 > MAX_LEN[r[0]])
    summary = {
        "rows": len(rows), "by_source": dict(sorted(by_src.items())),
        "by_kind_label": {f"{k}/{y}": v for (k, y), v in sorted(c.items())},
        "answers_labels": {str(k): v for k, v in sorted(labels.items())},
        "supports_rows": sum(1 for r in rows if r[0] == "supports"),
        "label_conflicts_dropped": conflicts, "over_token_limit": over,
        "skipped_by_evaluation_guard": dict(guard.skipped),
        "skipped_names": guard.skipped_names,
        "refused_packages": sorted(guard.packages), "refused_programs": sorted(guard.programs),
    }
    sources = {"summary": summary, "packages": [used[p] for p in PACKAGES],
               "command": " ".join(["python", "training/reader/mine_docs.py"] + (argv if argv is not None else sys.argv[1:]))}
    side = out.with_name(out.stem + ".sources.json")
    side.write_text(json.dumps(sources, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=1))
    print("per package:", json.dumps({p: used[p]["pairs"] for p in PACKAGES}))
    print(f"wrote {out} and {side}")


if __name__ == "__main__":
    main()
