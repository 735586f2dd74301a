"""What stops a model's stream: the one place that decides an answer being written must end now,
and records why.

A small local model can loop (Qwen2.5 0.5B repeated one sentence for 17 minutes in a
newcomer's trial), echo the prompt's own markup ("</source>"), or run past any sensible length on
an endpoint that ignores `max_tokens`. Each is stopped as it happens, not after the fact:

- **markup**: the prompt's tags (`<source …>`, `</source>`, `<retrieved_context>`) are ours,
  never an answer's: the text is cut where one starts (the endpoint is also asked to stop there,
  but not every server honours stop sequences);
- **repeating**: a sentence of six words or more said a second time, or the same run of
  characters three times over at the end (a loop without full stops): the text is cut before
  the repeat;
- **length**: more characters than `max_tokens` tokens can hold (8 characters a token, more than
  any language averages): the endpoint did not cap it;
- **time**: the whole answer took longer than the time limit: the stream is abandoned and the
  offline answer stands in (`AnswerTimeLimit`), saying so.

The first three keep what was written before the stop (the verifier then judges it like any
answer); the last is a failure of the model, handled like an endpoint error.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from .prompts import EVIDENCE_OPEN

MARKUP = re.compile(r"</?\s*(?:source|retrieved_context|system|instructions?)\b", re.I)
# the stop sequences sent to the endpoint (OpenAI takes at most four)
STOP_SEQUENCES = ["</source>", "<source ", "</retrieved_context>", "<retrieved_context>"]
CHARS_PER_TOKEN = 8
MIN_REPEAT_WORDS = 6
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]")
_WORD = re.compile(r"\w+", re.U)
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s)")


class AnswerTimeLimit(RuntimeError):
    """The model's answer took longer than the time limit."""


@dataclass
class StreamGuard:
    max_chars: int
    seconds: float
    started: float = field(default_factory=time.perf_counter)
    text: str = ""
    reason: str = ""  # why the stream was stopped ("" while it runs)
    _seen: dict = field(default_factory=dict)  # normalised sentence -> where it ended
    _scanned: int = 0  # sentences are looked for from here

    def feed(self, piece: str) -> str:
        """Add a piece of the stream; returns the part to show (maybe less than the piece, when
        it is stopped: then `reason` says why and `text` holds what is kept)."""
        if time.perf_counter() - self.started > self.seconds:
            raise AnswerTimeLimit(f"no complete answer after {self.seconds:.0f} s")
        before = len(self.text)
        self.text += piece
        cut = self._cut()
        if cut is not None:
            self.text = self.text[:cut].rstrip()
            return self.text[before:] if len(self.text) > before else ""
        return piece

    def _cut(self) -> int | None:
        """The earliest place to stop (a piece may be long: a server can send the whole reply
        at once), and its reason; None while the text is fine."""
        found: list[tuple[int, str]] = []
        # an evidence block quotes the sources (and so may repeat the answer's words): only the
        # answer before it is read for loops and markup; the limits hold for all of it
        end = self.text.find(EVIDENCE_OPEN)
        body = self.text if end < 0 else self.text[:end]
        m = MARKUP.search(body, max(0, self._scanned - 40))
        if m:
            found.append((m.start(), "it began to repeat the prompt's markup"))
        for s in _SENTENCE.finditer(body, self._scanned):
            self._scanned = s.end()
            words = _WORD.findall(s.group().lower())
            if len(words) < MIN_REPEAT_WORDS:
                continue
            key = " ".join(words)
            if key in self._seen:
                found.append((s.start(), "it began to repeat itself"))
                break
            self._seen[key] = s.end()
        loop = _tail_loop(body) if end < 0 else None
        if loop is not None:
            found.append((loop, "it began to repeat itself"))
        if len(self.text) > self.max_chars:
            found.append((self.max_chars, f"it passed the length limit ({self.max_chars // CHARS_PER_TOKEN} tokens)"))
        if not found:
            return None
        at, self.reason = min(found)
        return at


def _tail_loop(text: str, shortest: int = 12, longest: int = 300) -> int | None:
    """Where a loop starts when the text ends in the same run of characters three times over
    ("the device the device the device "): the end of the first run."""
    n = len(text)
    for size in range(shortest, min(longest, n // 3) + 1):
        a, b, c = text[n - size:], text[n - 2 * size:n - size], text[n - 3 * size:n - 2 * size]
        if a == b == c and len(_WORD.findall(a)) >= 2:
            cut = n - 2 * size
            # the loop's phase is arbitrary: end the text at the last sentence end in its first run
            ends = [m.end() for m in _SENTENCE_END.finditer(text, cut - size, cut)]
            return ends[-1] if ends else cut
    return None
