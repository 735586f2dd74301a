"""The door every request passes before any route runs (plain ASGI, so it also sees streamed
responses untouched): credentials (401 with WWW-Authenticate before the body is even read, let
alone validated), the key's rate limit (429 with Retry-After), and the request size (413, from
Content-Length or by counting a chunked body as it arrives), and a JSON body's encoding and
depth (400 invalid_json, rag_core/api/json_body.py)."""

from __future__ import annotations

import anyio
from fastapi import HTTPException

from . import json_body
from .auth import Authenticator, RateLimiter, Unauthorized
from .errors import error_response

OPEN_PATHS = {"/v1/health", "/v1/ready", "/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc"}


class TooLarge(HTTPException):
    """Raised from inside the body read; an HTTPException so FastAPI passes it on as is (it
    turns any other error while parsing a body into a generic 400)."""

    def __init__(self, message: str = "the request body is larger than the server accepts"):
        super().__init__(413, message)


class Gate:
    def __init__(self, app, auth: Authenticator, limiter: RateLimiter, max_body: int, max_upload: int):
        self.app = app
        self.auth = auth
        self.limiter = limiter
        self.max_body = max_body
        self.max_upload = max_upload

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS":  # a CORS preflight carries no credentials by design
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            principal = await anyio.to_thread.run_sync(self.auth.resolve, headers.get("authorization"))
        except Unauthorized as exc:
            challenge = 'Bearer realm="groundwork"' + (', error="invalid_token"' if exc.invalid else "")
            await error_response(401, "unauthorized", str(exc), {"WWW-Authenticate": challenge})(scope, receive, send)
            return
        wait = self.limiter.take(principal.key)
        if wait > 0:
            after = RateLimiter.retry_after(wait)
            await error_response(429, "rate_limited", f"too many requests for this key: try again in {after} s",
                                 {"Retry-After": after})(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        upload = scope["method"] == "POST" and scope["path"].endswith("/documents")
        limit = self.max_upload if upload else self.max_body
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await error_response(413, "too_large", _too_large(limit, upload))(scope, receive, send)
            return
        seen = 0
        started = False

        async def counted_receive():
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise TooLarge(_too_large(limit, upload))
            return msg

        async def tracked_send(msg):
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        app_receive = counted_receive
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if scope["method"] in ("POST", "PUT", "PATCH") and (not kind or kind.endswith("json")):
            # A JSON body is small (max_body): read it whole and check what json.loads would
            # choke on without saying why, then hand the same bytes on.
            try:
                body = await _read_all(counted_receive)
            except TooLarge:
                await error_response(413, "too_large", _too_large(limit, upload))(scope, receive, send)
                return
            why = json_body.problem(body)
            if why is not None:
                await error_response(400, "invalid_json", why)(scope, receive, send)
                return
            app_receive = _replay(body, receive)
        try:
            await self.app(scope, app_receive, tracked_send)
        except TooLarge:
            if not started:
                await error_response(413, "too_large", _too_large(limit, upload))(scope, receive, send)


async def _read_all(receive) -> bytes:
    parts = []
    while True:
        msg = await receive()
        if msg["type"] != "http.request":
            break
        parts.append(msg.get("body", b""))
        if not msg.get("more_body", False):
            break
    return b"".join(parts)


def _replay(body: bytes, receive):
    """A receive that gives `body` once, then what the client sends next (its disconnect)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _too_large(limit: int, upload: bool) -> str:
    what = "upload" if upload else "request body"
    return f"the {what} is larger than the server accepts ({limit / 2**20:.1f} MB)"
