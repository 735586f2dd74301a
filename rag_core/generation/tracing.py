"""Tracing the answer chain through LangChain callbacks (RAG_TRACE).

- "console": LangChain's own ConsoleCallbackHandler prints every step with its input/output.
- "jsonl:/path/trace.jsonl": one JSON line per step start and end — run name, kind, run and
  parent ids, milliseconds — appended by any process (the app, `ask`, a benchmark), so a
  person or a test can see which runnables answered a question.
LangSmith needs nothing here: LangChain sends traces when LANGSMITH_TRACING=true and
LANGSMITH_API_KEY are set (README)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from ..errors import InputError


class JsonlTracer(BaseCallbackHandler):
    """Step names and timings to a JSON-lines file; inputs and outputs are not written (they
    hold document text and questions, which do not belong in a log by default)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._start: dict[UUID, float] = {}

    def _write(self, event: str, kind: str, run_id: UUID, parent_run_id: UUID | None, name: str | None = None,
               **extra: Any) -> None:
        now = time.perf_counter()
        row: dict[str, Any] = {"event": event, "kind": kind, "run_id": str(run_id),
                               "parent_run_id": str(parent_run_id) if parent_run_id else None}
        if event == "start":
            self._start[run_id] = now
            row["name"] = name
        else:
            row["ms"] = round((now - self._start.pop(run_id, now)) * 1000, 2)
        row.update(extra)
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")

    @staticmethod
    def _name(serialized: dict | None, kwargs: dict) -> str:
        return kwargs.get("name") or (serialized or {}).get("name") or "?"

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kw):
        self._write("start", "chain", run_id, parent_run_id, self._name(serialized, kw))

    def on_chain_end(self, outputs, *, run_id, parent_run_id=None, **kw):
        self._write("end", "chain", run_id, parent_run_id, **_decision(outputs))

    def on_chain_error(self, error, *, run_id, parent_run_id=None, **kw):
        self._write("error", "chain", run_id, parent_run_id)

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kw):
        self._write("start", "retriever", run_id, parent_run_id, self._name(serialized, kw))

    def on_retriever_end(self, documents, *, run_id, parent_run_id=None, **kw):
        self._write("end", "retriever", run_id, parent_run_id)

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kw):
        self._write("start", "chat_model", run_id, parent_run_id, self._name(serialized, kw))

    def on_llm_end(self, response, *, run_id, parent_run_id=None, **kw):
        self._write("end", "chat_model", run_id, parent_run_id)

    def on_llm_error(self, error, *, run_id, parent_run_id=None, **kw):
        self._write("error", "chat_model", run_id, parent_run_id)


def _decision(outputs) -> dict:
    """The answer policy's rule, where a step's output carries one (the gate's Context, the
    final answer): names only, no text."""
    answer = getattr(outputs, "answer", None)
    if answer is not None and getattr(answer, "decided_by", ""):
        return {"decided_by": answer.decided_by, "policy": answer.policy, "abstained": answer.abstained}
    decision = getattr(outputs, "decision", None)
    if decision is not None:
        return {"decided_by": decision.decided_by, "action": decision.action}
    return {}


def make_callbacks(trace: str | None) -> list[BaseCallbackHandler]:
    if not trace:
        return []
    if trace == "console":
        from langchain_core.tracers.stdout import ConsoleCallbackHandler

        return [ConsoleCallbackHandler()]
    if trace.startswith("jsonl:") and len(trace) > 6:
        return [JsonlTracer(trace[6:])]
    raise InputError(f"RAG_TRACE={trace!r}: use 'console' or 'jsonl:/path/to/trace.jsonl'")


def read_trace(path: str | Path) -> list[dict]:
    p = Path(path)
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()] if p.exists() else []
