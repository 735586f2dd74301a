"""What is wrong with a JSON request body, in words, before FastAPI parses it. Without this,
invalid UTF-8 and very deep nesting reach FastAPI's json.loads as UnicodeDecodeError or
RecursionError, which it reports as "There was an error parsing the body", and a lone UTF-16
surrogate escape ("\\ud800", valid JSON) parses into a string that no UTF-8 writer (SQLite,
the tokenizer, the log) can take."""

from __future__ import annotations

import json
import re

MAX_DEPTH = 64  # no request of ours nests deeper than 4; 64 leaves room and stays far from recursion limits

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")
# a UTF-16 surrogate escape (\uD800-\uDFFF): only a body holding one is parsed here (FastAPI
# parses every body anyway; a pair is fine and passes)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def problem(body: bytes) -> str | None:
    """None when the body is well-formed UTF-8 JSON text we can hold; else why not. Malformed
    JSON itself is left to FastAPI, whose message names the position."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        return (f"the request body is not valid UTF-8 (byte {e.start}: {body[e.start:e.start + 4]!r}); "
                "send text encoded as UTF-8")
    depth = deepest = 0
    for b in _BRACKETS.findall(_STRINGS.sub('""', text)):
        depth += 1 if b in "[{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        return f"the request body nests {deepest} levels deep; the limit is {MAX_DEPTH}"
    if not _SURROGATE_ESCAPE.search(text):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    where = _surrogate(value, "")
    if where is not None:
        return (f"{where or 'the body'} holds a lone UTF-16 surrogate escape (such as \\ud800), which is not a "
                "character: send valid Unicode text")
    return None


def _surrogate(value, path: str) -> str | None:
    """The path of the first string (key or value) that cannot be encoded as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if _surrogate(k, path) is not None:
                return f"a key of {path}" if path else "a key"
            where = _surrogate(v, f"{path}.{k}" if path else str(k))
            if where is not None:
                return where
    elif isinstance(value, list):
        for i, v in enumerate(value):
            where = _surrogate(v, f"{path}[{i}]")
            if where is not None:
                return where
    return None
