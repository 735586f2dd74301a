"""The HTTP API service (DESIGN.md §6b): FastAPI over the same Workspace and LCEL chain as the
pages and the CLI. `python -m rag_core serve` runs it on uvicorn (rag_core/api/server.py).

Layers, outside in: metrics (counts every request, refused ones too) → CORS (only when origins are
configured) → the gate (credentials, rate limit, size) → FastAPI's routes. Errors are always JSON
`{"error": {"code", "message"}}` with a stable code."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..config import Settings, get_settings
from ..errors import GroundworkError
from .auth import Authenticator, RateLimiter
from .errors import classify
from .errors import error_response as _error
from .gate import Gate
from .metrics import Metrics, MetricsMiddleware
from .routes import ApiError

log = logging.getLogger("groundwork.api")

_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "too_large", 415: "unsupported_media_type", 422: "invalid_request",
               429: "rate_limited"}


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors()[:5]:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def create_app(settings: Settings | None = None, workspace=None, no_auth: bool = False) -> FastAPI:
    """The app. `workspace`: use this one (tests; the caller closes it) instead of opening the
    data folder at startup. `no_auth`: every request is the local operator (loopback only)."""
    from ..workspace import Workspace

    settings = settings or (workspace.settings if workspace is not None else get_settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        own = workspace is None
        app.state.ws = Workspace(settings) if own else workspace
        app.state.auth.keys = app.state.ws.api_keys
        try:
            yield
        finally:
            if own:
                app.state.ws.close()

    app = FastAPI(title="Groundwork API", version="1",
                  description="Chat with your documents: grounded answers with citations, two honest scores, "
                              "abstention, and an OpenAI-compatible endpoint per knowledge base.",
                  lifespan=lifespan)
    app.state.metrics = Metrics()
    app.state.auth = Authenticator(settings, keys=None, no_auth=no_auth)

    from . import openai_compat, routes

    app.include_router(routes.router)
    app.include_router(openai_compat.router)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError):
        return _error(exc.status, exc.code, exc.message)

    @app.exception_handler(GroundworkError)
    async def groundwork_error(request: Request, exc: GroundworkError):
        return _error(*classify(exc), str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        bad_json = [e for e in exc.errors() if e.get("type") == "json_invalid"]
        if bad_json:
            why = (bad_json[0].get("ctx") or {}).get("error", "")
            return _error(400, "invalid_json", f"the request body is not valid JSON{f' ({why})' if why else ''}")
        return _error(422, "invalid_request", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path}"
        return _error(exc.status_code, _HTTP_CODES.get(exc.status_code, "error"), message,
                      getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception):
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return _error(500, "internal_error", "the server failed on this request (see its log)")

    # Middleware: added innermost first.
    app.add_middleware(Gate, auth=app.state.auth, limiter=RateLimiter(settings.api_rate_limit),
                       max_body=int(settings.api_max_body_mb * 2**20), max_upload=int(settings.api_max_upload_mb * 2**20))
    origins = [o.strip() for o in settings.api_cors_origins.split(",") if o.strip()]
    if origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["*"],
                           allow_headers=["Authorization", "Content-Type"])
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    return app
