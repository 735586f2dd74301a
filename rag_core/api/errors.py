"""The API's one error shape, `{"error": {"code", "message"}}` with a stable code: for the gate's
refusals, the app's exception handlers, and the `error` event of a stream that fails after its
status line was sent."""

from __future__ import annotations

import logging

from fastapi.responses import JSONResponse

from ..access import PermissionDenied
from ..errors import GroundworkError, LoadError, MissingDependency, NotFound

log = logging.getLogger("groundwork.api")


def error_response(status: int, code: str, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def classify(exc: GroundworkError) -> tuple[int, str]:
    """(HTTP status, code) of an error the library raised with a message meant for the user."""
    if isinstance(exc, NotFound):
        return 404, "not_found"
    if isinstance(exc, PermissionDenied):
        return 403, "forbidden"
    if isinstance(exc, MissingDependency):
        return 503, "unavailable"
    return 400, "bad_file" if isinstance(exc, LoadError) else "bad_request"


def error_payload(exc: Exception) -> dict:
    """The body of a stream's `error` event: the library's message with its code, anything else
    as an internal error (its details go to the server log, not to the client)."""
    if isinstance(exc, GroundworkError):
        return {"error": {"code": classify(exc)[1], "message": str(exc)}}
    log.error("a streamed answer failed", exc_info=exc)
    return {"error": {"code": "internal_error", "message": "the answer failed on the server"}}
