"""A "perfect reader" LLM for benchmarks: an OpenAI-compatible chat server on loopback that
knows the gold answers. This is a benchmark harness, not a product feature: nothing in
rag_core/ uses it, and it answers only the questions it was given golds for.

Pointed at by the product's own LLM mode (Settings.openai_base_url = server.base_url), it
isolates what the rest of the pipeline loses: the model never fails to read a passage, so
every answerable question that still goes wrong was lost by retrieval, context selection,
a gate, a check or the verifier (benchmarks/perfect_reader.py attributes each one).

    from benchmarks.oracle_llm import Gold, oracle_server
    golds = {qnorm("Who wrote it?"): Gold(evidence=["Smith wrote it in 1990."], answers=["Smith"])}
    with oracle_server(golds) as srv:          # srv.base_url = "http://127.0.0.1:PORT/v1"
        settings = get_settings(DIR, openai_base_url=srv.base_url, openai_api_key="oracle", llm_model=srv.model)
        ...
        srv.log                                 # one dict per answer request

Endpoints: GET /v1/models; POST /v1/chat/completions, "stream": false (chat.completion) or
true (SSE chat.completion.chunk lines, then a usage chunk when stream_options asks, then
"data: [DONE]"). Unknown request fields are ignored.

How it reads a request (all message texts; the prompts are rag_core/generation/prompts.py):
- answer prompt (ANSWER_REMINDER, no RELEVANCE_TASK): the question after the sources; the
  first shown source that is gold gets the answer "<gold sentence> [N]."; none shown, or an
  unknown question: "I don't have information about that in the selected knowledge bases."
  A gold source is, for a SQuAD-like Gold, one whose text holds a gold evidence sentence (or,
  for a passage cut from the gold paragraph, the gold answer: its text is inside
  Gold.paragraph); for a manual-like Gold, a source of a gold file whose page range overlaps
  a gold page and whose text holds an expect phrase (as written, then whitespace-normalised,
  then case-insensitively). The manual answer is the sentence holding the phrase, or, when
  the phrase sits on a code line (inside ``` fences, or a prompt line such as "> x"), that
  line with the sentence introducing it.
- relevance task (RELEVANCE_TASK): "yes" when a gold source is shown, else "no".
- verify prompt: "SUPPORTED" when the claim (markers removed) is in the sources, or holds a
  gold evidence sentence / answer that the sources hold; else "UNSUPPORTED".
- condense: the follow-up verbatim; paraphrases: the question twice; HyDE: the question;
  anything else: the decline sentence.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rag_core.generation.prompts import (  # noqa: E402
    ANSWER_REMINDER, CONDENSE_PROMPT, EVIDENCE_CLOSE, EVIDENCE_OPEN, HYDE_PROMPT, RELEVANCE_TASK, neutralise)
from rag_core.generation.judge import JUDGE_PROMPT  # noqa: E402

DECLINE = "I don't have information about that in the selected knowledge bases."
MODES = ("perfect", "realistic")

# What tells the prompts apart (each is the prompt's own wording, taken from prompts.py where it lives there).
_RELEVANCE_MARK = "Reply with one word: yes or no"
_VERIFY_MARK = JUDGE_PROMPT.split("\n", 1)[0].split(".")[0]  # "Check each numbered sentence of an answer …"
_CONDENSE_MARK = "rewrite the follow-up as one standalone question"
_PARAPHRASE_MARK = "Write two alternative phrasings"  # rag_core/generation/chain.py: _paraphrases
_HYDE_MARK = HYDE_PROMPT.split("(", 1)[0].strip()  # "Write a short passage"
assert _RELEVANCE_MARK in RELEVANCE_TASK and _CONDENSE_MARK in CONDENSE_PROMPT

_SOURCE = re.compile(r'<source id="(\d+)" file="([^"]*)" page="(\d+)(?:-(\d+))?">\n(.*?)\n</source>', re.S)
_MARKER = re.compile(r"\s*\[\d{1,3}\]")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+")
_BLOCK_SPLIT = re.compile(r"\n[ \t]*\n|\n(?=[ \t]*(?:#{1,6} |- |```))")  # blank lines, headings, bullets, fences
_PROMPT_LINE = re.compile(r"^\s*(?:>|\$ |# |% |\(%i\d+\)|gnuplot>|R>|\+ )")
_MAX_SENTENCE = 400  # characters of an answer sentence; a longer one is cut around the phrase


@dataclass
class Gold:
    """One question's gold. SQuAD-like: evidence sentences + answers (+ the paragraph, so a
    passage cut from it is recognised); manual-like: files, 1-based pages and expect phrases."""

    evidence: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    paragraph: str = ""
    files: set[str] = field(default_factory=set)
    pages: set[int] = field(default_factory=set)
    expect: list[str] = field(default_factory=list)
    # realistic mode (benchmarks/data/paraphrase_harness/): the answer in the model's own words,
    # an extra sentence it adds that no source states, and for a near-miss its confident answer
    # from general knowledge and the sentence of the passage it cites for it
    paraphrase: str = ""
    extra: str = ""
    confident: str = ""
    cites: str = ""

    @property
    def manual(self) -> bool:
        return bool(self.files)


def qnorm(question: str) -> str:
    """The key of `golds`: lowercase, whitespace collapsed."""
    return " ".join(question.lower().split())


def _ws(text: str) -> str:
    return " ".join(text.split())


def _loose(text: str) -> str:
    """Lowercase, punctuation and markers dropped, whitespace collapsed: for containment."""
    text = _MARKER.sub(" ", text).lower()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def _body(sid: str, text: str) -> str:
    """A source block's text without its "[N] heading" first line."""
    first, _, rest = text.partition("\n")
    return rest if first.startswith(f"[{sid}]") else text


def with_marker(text: str, n: int | str) -> str:
    """"… text [N]." — the marker before the final full stop (or ! ?)."""
    s = _ws(text).rstrip(" ,;:")
    if s[-1:] in ("!", "?"):
        return f"{s[:-1]} [{n}]{s[-1]}"
    return f"{s.rstrip('.').rstrip()} [{n}]."


# ------------------------------------------------------------------------------ gold sources

def _tier(text: str, phrase: str) -> int:
    """How `phrase` is found in `text`: 1 as written, 2 whitespace-normalised, 3 also
    case-insensitively; 0 not at all."""
    p = _ws(phrase)
    if not p:
        return 0
    if phrase in text:
        return 1
    norm = _ws(text)
    if p in norm:
        return 2
    return 3 if p.lower() in norm.lower() else 0


def _has(text: str, phrase: str, tier: int) -> bool:
    """Whether `text` holds `phrase` at `tier` or a stricter one."""
    return 0 < _tier(text, phrase) <= tier


def _find_phrase(text: str, phrase: str, tier: int = 3) -> tuple[str, int] | None:
    """(whitespace-normalised text, offset of the phrase in it), or None when absent at `tier`."""
    if not _has(text, phrase, tier):
        return None
    norm, p = _ws(text), _ws(phrase)
    i = norm.find(p)
    return norm, (i if i >= 0 else norm.lower().find(p.lower()))


def _cut(sentence: str, phrase: str) -> str:
    if len(sentence) <= _MAX_SENTENCE:
        return sentence
    i = max(sentence.lower().find(phrase.lower()), 0)
    lo = max(0, i - _MAX_SENTENCE // 2)
    hi = min(len(sentence), lo + _MAX_SENTENCE)
    lo = sentence.rfind(" ", 0, lo) + 1 if lo else 0
    hi = sentence.find(" ", hi) if sentence.find(" ", hi) > 0 else len(sentence)
    return sentence[lo:hi].strip()


def _sentences(text: str) -> list[str]:
    """Sentences (ending at . ! ? before a space or newline; blank lines, Markdown headings,
    bullets and fences break too), whitespace-normalised."""
    out = []
    for block in _BLOCK_SPLIT.split(text):
        if block.lstrip().startswith("#"):  # a heading is its own line
            head, _, block = block.lstrip().partition("\n")
            out.append(_ws(head))
        out += [_ws(s) for s in _SENT_SPLIT.split(block) if s.strip()]
    return [s for s in out if s]


def _sentence_with(text: str, phrase: str, tier: int = 3) -> str | None:
    """The sentence of `text` holding `phrase` (sentences end at . ! ? before a space or a
    newline), whitespace-normalised; the phrase may span a line break. Only matches at
    `tier` or stricter count (_tier)."""
    for s in _sentences(text):
        if _has(s, phrase, tier):
            return _cut(s, phrase)
    # the phrase runs across a sentence split: the window of the joined text around it
    found = _find_phrase(text, phrase, tier)
    if not found:
        return None
    norm, i = found
    start = max(norm.rfind(". ", 0, i) + 2, 0) if norm.rfind(". ", 0, i) >= 0 else 0
    end = norm.find(". ", i + len(_ws(phrase)))
    return _cut(norm[start: end + 1 if end >= 0 else len(norm)], phrase)


def _is_code(lines: list[str], k: int) -> bool:
    fences = sum(1 for ln in lines[:k] if ln.strip().startswith("```"))
    return fences % 2 == 1 or bool(_PROMPT_LINE.match(lines[k]))


def manual_answer(text: str, expect: list[str]) -> str | None:
    """The answer a perfect reader gives from a manual passage: the sentence holding an
    expect phrase, or the code line holding it with the sentence introducing it."""
    # the strictest match of any phrase wins: "declare -A" as written before "declare -a"
    found = sorted((t, i) for i, phrase in enumerate(expect) if (t := _tier(text, phrase)))
    for tier, i in found:
        phrase = expect[i]
        lines = text.split("\n")
        for k, line in enumerate(lines):
            if not _has(line, phrase, tier) or line.strip().startswith("```") or not _is_code(lines, k):
                continue
            before = "\n".join(ln for ln in lines[:k] if not ln.strip().startswith("```"))
            # the sentence introducing it: the last sentence of the prose just before the block
            intro = [s for s in _sentences(before) if not s.startswith(("#", "```"))]
            if len(intro) > 1 and len(intro[-1].split()) < 6:  # "For example" after a full stop: take the one before too
                intro[-2:] = [f"{intro[-2]} {intro[-1]}"]
            code = _cut(_ws(line), phrase)
            return f"{intro[-1][-_MAX_SENTENCE:].lstrip()} {code}" if intro else code
        return _sentence_with(text, phrase, tier)
    return None


def gold_answer(gold: Gold, file: str, first: int, last: int, text: str) -> str | None:
    """What a perfect reader answers from this source (marker-free), or None when the source
    is not gold. `text` is the source's text as shown (neutralised) or as stored."""
    text = neutralise(text)
    if gold.manual:
        if file not in gold.files or not any(first <= p <= last for p in gold.pages):
            return None
        return manual_answer(text, gold.expect)
    norm = _ws(text)
    for ev in gold.evidence:
        e = _ws(neutralise(ev))
        if e and e in norm:
            return e
    # a passage cut from the gold paragraph: the sentence holding a gold answer
    if gold.paragraph and norm and norm in _ws(neutralise(gold.paragraph)):
        for a in gold.answers:
            s = _sentence_with(text, a) if a.strip() else None
            if s:
                return s
    return None


# ------------------------------------------------------------------------------ the reader

@dataclass
class _Reply:
    text: str
    kind: str
    entry: dict | None = None
    pace: float = 0.0  # seconds between stream pieces (a slow model, for tests of time limits)
    wait: float = 0.0  # seconds before the first piece (a model silent while it reads its prompt)


class OracleReader:
    """The request → reply logic, apart from HTTP (usable directly in tests)."""

    def __init__(self, golds: dict[str, Gold], mode: str = "perfect"):
        if mode not in MODES:
            raise ValueError(f"unknown oracle mode {mode!r} (known: {', '.join(MODES)})")
        self.mode = mode
        self.golds = {qnorm(neutralise(k)): g for k, g in golds.items()}
        self.golds.update({qnorm(k): g for k, g in golds.items()})

    def _read(self, user: str) -> tuple[str | None, list[tuple[str, str, int, int, str]]]:
        ctx_end = user.rfind("</retrieved_context>")
        sources = [(m.group(1), m.group(2), int(m.group(3)), int(m.group(4) or m.group(3)), _body(m.group(1), m.group(5)))
                   for m in _SOURCE.finditer(user[:ctx_end] if ctx_end >= 0 else user)]
        tail = user[ctx_end:] if ctx_end >= 0 else user
        m = re.search(r"\nQuestion:(.*?)(?:\n\n" + re.escape(ANSWER_REMINDER) + r"|$)", tail, re.S)
        return (m.group(1).strip() if m else None), sources

    def _judge(self, user: str) -> dict:
        question, sources = self._read(user)
        gold = self.golds.get(qnorm(question or ""))
        found = []
        for sid, file, first, last, text in sources:
            ans = gold_answer(gold, file, first, last, text) if gold else None
            if ans:
                found.append((sid, ans))
        answer = with_marker(found[0][1], found[0][0]) if found else None
        quotes = [(found[0][0], found[0][1])] if found else []
        if self.mode == "realistic" and gold is not None:
            answer = self._realistic(gold, found, sources)
            if gold.confident:
                n = next((sid for sid, _, _, _, t in sources if _ws(gold.cites) in _ws(t)), None)
                quotes = [(n, gold.cites)] if n is not None else []
            elif found:
                quotes = [(found[0][0], ev) for ev in gold.evidence]
        return {"question": question, "known": gold is not None, "shown": [int(s[0]) for s in sources],
                "gold_ids": [int(s) for s, _ in found], "gold_shown": bool(found), "_answer": answer,
                "_quotes": quotes}

    @staticmethod
    def _realistic(gold: Gold, found, sources) -> str | None:
        """A capable model that writes in its own words: the paraphrase (and its extra sentence)
        citing the gold passage when one is shown; for a near-miss, its confident answer citing
        the shown passage that holds the sentence it leans on (else the first shown)."""
        if gold.confident:
            n = next((sid for sid, _, _, _, text in sources if _ws(gold.cites) in _ws(text)),
                     sources[0][0] if sources else None)
            return None if n is None else " ".join(with_marker(x, n) for x in _sentences(gold.confident))
        if not found or not gold.paraphrase:
            return None
        n = found[0][0]
        said = _sentences(gold.paraphrase) + (_sentences(gold.extra) if gold.extra else [])
        return " ".join(with_marker(x, n) for x in said)

    def reply(self, messages: list[dict]) -> _Reply:
        texts = [_content(m) for m in messages]
        users = [t for m, t in zip(messages, texts) if m.get("role") in ("user", "human")] or texts
        user = next((t for t in reversed(users) if "<retrieved_context>" in t), users[-1] if users else "")
        if "<retrieved_context>" in user and _RELEVANCE_MARK in user:
            j = self._judge(user)
            j.pop("_quotes", None)
            said = j.pop("_answer")
            yes = j["gold_shown"] or (self.mode == "realistic" and said is not None)  # it believes it knows
            return _Reply("yes" if yes else "no", "relevance", j)
        if "<retrieved_context>" in user and ANSWER_REMINDER in user:
            j = self._judge(user)
            quotes = j.pop("_quotes", [])
            text = j.pop("_answer") or DECLINE
            j["answered"] = text != DECLINE
            if text != DECLINE and EVIDENCE_OPEN in user and quotes:
                # asked for its evidence, it quotes the source sentences it rests on, as a capable
                # model does: the gold sentence for an answer, and for a near-miss answer from
                # general knowledge the sentence of the passage it leans on
                text += f"\n{EVIDENCE_OPEN}\n" + "\n".join(f'[{n}] "{q}"' for n, q in quotes) + f"\n{EVIDENCE_CLOSE}"
            return _Reply(text, "answer", j)
        if _VERIFY_MARK in user:
            return _Reply(self._verify(user), "verify")
        if _CONDENSE_MARK in user:
            m = re.search(r"Follow-up question:(.*?)\n\s*Standalone question:", user, re.S)
            return _Reply(_ws(m.group(1)) if m else DECLINE, "condense")
        if _PARAPHRASE_MARK in user:
            q = _ws(user.split("\n", 1)[1]) if "\n" in user else ""
            return _Reply(f"{q}\n{q}" if q else DECLINE, "paraphrase")
        if _HYDE_MARK in user:
            m = re.search(r"Question:(.*?)\n\s*Passage:", user, re.S)
            return _Reply(_ws(m.group(1)) if m else DECLINE, "hyde")
        return _Reply(DECLINE, "other")

    def _verify(self, user: str) -> str:
        """The judge's JSON: a sentence is supported, quoting the source sentence it is in, when it
        is verbatim in a source or holds a gold evidence sentence or answer that source holds."""
        m = re.search(r"<sources>\n(.*)\n</sources>\s*<sentences>\n(.*)\n</sentences>", user, re.S)
        if not m:
            return "{}"
        srcs = {int(k): t for k, t in re.findall(r"^\[(\d+)\] (.*?)(?=^\[\d+\] |\Z)", m.group(1), re.S | re.M)}
        out = []
        for k, sent in re.findall(r"^(\d+)\. (.*)$", m.group(2), re.M):
            claim = _loose(re.sub(r" \(cites [\d, ]+\)$", "", sent))
            verdict = {"n": int(k), "verdict": "unsupported"}
            for n, text in srcs.items():
                held = claim and claim in _loose(text)
                held = held or any((e := _loose(x)) and e in claim and e in _loose(text)
                                   for g in self.golds.values() for x in [*g.evidence, *g.answers, *g.expect])
                if held:
                    quote = next((x for x in _sentences(text) if _loose(x) and (_loose(x) in claim or claim in _loose(x))),
                                 _sentences(text)[0] if _sentences(text) else "")
                    verdict = {"n": int(k), "verdict": "supported", "source": n, "quote": quote}
                    break
            out.append(verdict)
        return json.dumps({"verdicts": out})


def _content(message: dict) -> str:
    c = message.get("content")
    if isinstance(c, list):  # content parts
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in c)
    return c if isinstance(c, str) else ""


def _pieces(text: str, n: int = 4) -> list[str]:
    """The reply in a few stream pieces, split at spaces."""
    words = text.split(" ")
    step = max(1, -(-len(words) // n))
    out = [" ".join(words[i: i + step]) for i in range(0, len(words), step)]
    return [p + (" " if i < len(out) - 1 else "") for i, p in enumerate(out)]


# ------------------------------------------------------------------------------ HTTP

class OracleServer:
    def __init__(self, golds: dict[str, Gold], mode: str = "perfect", host: str = "127.0.0.1", port: int = 0):
        self.reader = OracleReader(golds, mode)
        self.model = "oracle"
        self.log: list[dict] = []  # one dict per answer request
        self.calls: list[dict] = []  # every request: {"kind", ...}; relevance checks carry their judgement
        self.dropped = 0  # streams the client closed before the end (a cancelled answer)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _handler(self))
        self._httpd.daemon_threads = True
        self.base_url = f"http://{host}:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="oracle-llm", daemon=True)
        self._thread.start()

    def set_golds(self, golds: dict[str, Gold]) -> None:
        """Replace the golds (a run may need the server's URL before it knows its questions)."""
        self.reader = OracleReader(golds, self.reader.mode)

    def record(self, reply: _Reply, model: str | None = None) -> None:
        with self._lock:
            self.calls.append({"kind": reply.kind, "model": model, **(reply.entry or {})})
            if reply.kind == "answer":
                self.log.append(dict(reply.entry))

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OracleServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


@contextmanager
def oracle_server(golds: dict[str, Gold], mode: str = "perfect") -> Iterator[OracleServer]:
    srv = OracleServer(golds, mode)
    try:
        yield srv
    finally:
        srv.stop()


def _usage(messages: list[dict], text: str) -> dict:
    p = sum(len(_content(m).split()) for m in messages)
    c = len(text.split())
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def _handler(server: OracleServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection; a stream ends when it closes

        def log_message(self, *args) -> None:  # quiet
            pass

        def _json(self, code: int, obj: dict) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [
                    {"id": server.model, "object": "model", "created": 0, "owned_by": "benchmark"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                messages = list(req.get("messages") or [])
            except (ValueError, TypeError) as exc:
                self._json(400, {"error": {"message": f"bad request: {exc}", "type": "invalid_request_error"}})
                return
            reply = server.reader.reply(messages)
            server.record(reply, req.get("model"))
            cid, created, model = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time()), req.get("model") or server.model
            usage = _usage(messages, reply.text)
            if not req.get("stream"):
                self._json(200, {"id": cid, "object": "chat.completion", "created": created, "model": model,
                                 "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                              "message": {"role": "assistant", "content": reply.text}}],
                                 "usage": usage})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()

            def send(obj) -> None:
                data = obj if isinstance(obj, str) else json.dumps(obj)
                self.wfile.write(f"data: {data}\n\n".encode())
                self.wfile.flush()

            def chunk(delta: dict, finish: str | None = None) -> dict:
                return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

            try:
                send(chunk({"role": "assistant", "content": ""}))
                time.sleep(reply.wait)
                for i, piece in enumerate(_pieces(reply.text)):
                    if i and reply.pace:
                        time.sleep(reply.pace)
                    send(chunk({"content": piece}))
                send(chunk({}, "stop"))
                if (req.get("stream_options") or {}).get("include_usage"):
                    send({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                          "choices": [], "usage": usage})
                send("[DONE]")
            except (BrokenPipeError, ConnectionResetError):
                with server._lock:
                    server.dropped += 1

    return Handler
