"""Gemini through its OpenAI-compatible endpoint (README: "Gemini"), the documented way to use it:
`OPENAI_BASE_URL=https://generativelanguage.googleapis.com/v1beta/openai/`, the Gemini API key
as `OPENAI_API_KEY`, and a Gemini model name as `RAG_LLM_MODEL`.

Gemini's API is paid and out of reach here, so a scripted server on loopback speaks its dialect
in its place (a test double, as the developers' guide allows): the path under `/v1beta/openai/`,
the key as a Bearer token, streamed `chat.completion.chunk` events with Gemini's model name, a
final chunk carrying `usage`, and errors as Gemini's compatibility layer returns them, a JSON
*list* holding one `{"error": {...}}` object rather than OpenAI's single object. The chain, the
store, the reader and the verifier are the real ones."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OP = Caller.operator()
KEY = "gm-test-key"
MODEL = "gemini-2.0-flash"
PREFIX = "/v1beta/openai"


class GeminiLike:
    """Answers every question with `reply` (or fails with `error_status`); records each request."""

    def __init__(self, reply: str, error_status: int = 0):
        self.reply, self.error_status = reply, error_status
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _json(self, status: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                if self.path != f"{PREFIX}/chat/completions":
                    return self._json(404, [{"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}])
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    return self._json(400, [{"error": {"code": 400, "message": "API key not valid. Please pass a "
                                                       "valid API key.", "status": "INVALID_ARGUMENT"}}])
                if outer.error_status:
                    return self._json(outer.error_status, [{"error": {
                        "code": outer.error_status, "message": "Resource has been exhausted (e.g. check quota).",
                        "status": "RESOURCE_EXHAUSTED"}}])
                text = outer.reply
                if "yes or no" in json.dumps(body):
                    text = "yes"
                created = int(time.time())
                if not body.get("stream"):
                    return self._json(200, {
                        "choices": [{"finish_reason": "stop", "index": 0,
                                     "message": {"content": text, "role": "assistant"}}],
                        "created": created, "model": MODEL, "object": "chat.completion",
                        "usage": {"completion_tokens": 9, "prompt_tokens": 90, "total_tokens": 99}})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                pieces = re.findall(r"\S+\s*", text)
                for i, piece in enumerate(pieces):
                    last = i == len(pieces) - 1
                    chunk = {"choices": [{"delta": {"content": piece, "role": "assistant"},
                                          "finish_reason": "stop" if last else None, "index": 0}],
                             "created": created, "model": MODEL, "object": "chat.completion.chunk"}
                    if last:
                        chunk["usage"] = {"completion_tokens": len(pieces), "prompt_tokens": 90,
                                          "total_tokens": 90 + len(pieces)}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}{PREFIX}/"  # as Google documents it
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def kettle(tmp_path):
    doc = tmp_path / "kettle.md"
    doc.write_text("# Kettle care\n\nDescale the kettle every four weeks with white vinegar.\n\n"
                   "## Safety\n\nNever immerse the base in water.\n")
    return doc


def workspace(tmp_path, base_url: str, kettle) -> Workspace:
    # the README's settings, as environment variables would give them
    ws = Workspace(get_settings(tmp_path / "data", openai_base_url=base_url, openai_api_key=KEY, llm_model=MODEL,
                                llm_crag=False, answer_cache=False))
    ws.create_kb("home", caller=OP)
    ws.ingest("home", [kettle], caller=OP)
    return ws


def test_gemini_answers_through_its_openai_compatible_endpoint(tmp_path, kettle):
    srv = GeminiLike("Descale the kettle every four weeks with white vinegar [1].")
    try:
        ws = workspace(tmp_path, srv.base_url, kettle)
        try:
            events = list(ws.answers.chain.stream(ws.answer_request(["home"], "How often should I descale the kettle?",
                                                                    caller=OP)))
        finally:
            ws.close()
    finally:
        srv.stop()
    a = events[-1].answer
    assert a.mode == "llm" and not a.abstained, a.reason
    assert "every four weeks" in a.text and a.citations[0].source == "kettle.md"
    assert a.models["llm"] == MODEL and "llm_error" not in a.models
    assert sum(e.kind == "token" for e in events) > 3  # streamed, piece by piece
    answer_calls = [r for r in srv.requests if r["body"].get("stream")]
    assert answer_calls and all(r["path"] == f"{PREFIX}/chat/completions" for r in srv.requests)
    assert all(r["auth"] == f"Bearer {KEY}" for r in srv.requests)
    assert answer_calls[-1]["body"]["model"] == MODEL


def test_a_gemini_error_in_its_own_shape_is_reported_and_the_answer_is_composed_offline(tmp_path, kettle):
    srv = GeminiLike("never sent", error_status=429)
    try:
        ws = workspace(tmp_path, srv.base_url, kettle)
        try:
            a = ws.ask(["home"], "How often should I descale the kettle?", caller=OP)
        finally:
            ws.close()
    finally:
        srv.stop()
    assert a.mode == "extractive" and "every four weeks" in a.text
    assert "did not answer" in a.models["llm_error"] and srv.base_url in a.models["llm_error"]
