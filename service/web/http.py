"""What every route of every HTTP front shares: reading a JSON body and the caller's key, and
rendering a JSON answer or an error (``{"error": message}``, its code in ``X-Error-Code``); and
the Klein app of a front whose errors are those JSON errors."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from klein import Klein
from twisted.python.failure import Failure
from twisted.web.server import Request
from werkzeug.exceptions import MethodNotAllowed as WerkzeugMethodNotAllowed
from werkzeug.exceptions import NotFound as WerkzeugNotFound

from service.core.errors import ApiError, BadRequest, MethodNotAllowed, NotFound

MAX_BODY_BYTES = 256 * 1024

log = logging.getLogger(__name__)


def render_json(request: Request, body: Any, status: int = 200) -> bytes:
    request.setResponseCode(status)
    request.setHeader(b"Content-Type", b"application/json")
    request.setHeader(b"Cache-Control", b"no-store")
    return orjson.dumps(body)


def render_error(request: Request, error: ApiError) -> bytes:
    """An error answer: ``{"error": message}``, its code in the X-Error-Code header."""
    for name, value in error.answer_headers().items():
        request.setHeader(name.encode(), value.encode())
    return render_json(request, error.body(), error.status)


def read_json_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    content_type = (request.getHeader(b"Content-Type") or b"").split(b";")[0].strip().lower()
    if content_type != b"application/json":
        raise BadRequest("Content-Type must be application/json")
    content = request.content  # type: ignore[attr-defined]
    body: bytes = content.read(limit + 1) if content is not None else b""
    if len(body) > limit:
        raise BadRequest(f"the body is larger than {limit} bytes")
    return body


def url_is_utf8(request: Request) -> bool:
    """Whether the host name and the (percent-decoded) path are UTF-8, as routing needs."""
    try:
        request.getRequestHostname().decode("utf-8")
        b"/".join(request.postpath or ()).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def api_key_of(request: Request) -> str | None:
    raw = request.getHeader(b"X-API-Key")
    return raw.decode("utf-8", "replace").strip() if raw else None


def query_of(request: Request) -> dict[bytes, list[bytes]]:
    """The query string's parameters (Twisted parses a GET's into ``args``)."""
    args: dict[bytes, list[bytes]] | None = request.args  # type: ignore[assignment]
    return args or {}


def bearer_token_of(request: Request) -> bytes:
    scheme, _, token = (request.getHeader(b"Authorization") or b"").strip().partition(b" ")
    return token.strip() if scheme.lower() == b"bearer" else b""


def render_bad_method(request: Request, failure: Any) -> bytes:
    """A 405 for werkzeug's MethodNotAllowed, listing the methods the resource supports (RFC
    9110)."""
    allowed = getattr(failure.value, "valid_methods", None)
    if allowed:
        request.setHeader(b"Allow", ", ".join(sorted(allowed)).encode())
    return render_error(request, MethodNotAllowed())


def render_unexpected(request: Request, failure: Any) -> bytes:
    """A 500 for anything else: the traceback goes to the log, never to the caller."""
    log.error(
        "unexpected error on %s %s",
        request.method.decode(errors="replace"),
        request.uri.decode(errors="replace")[:200],
        exc_info=(failure.type, failure.value, failure.getTracebackObject()),
    )
    return render_error(request, ApiError())


def render_failure(request: Request, failure: Failure) -> bytes:
    """The answer to a route's failure: an ApiError as itself, anything else as a 500."""
    if failure.check(ApiError):
        return render_error(request, failure.value)  # type: ignore[arg-type]
    return render_unexpected(request, failure)


def json_routes() -> Klein:
    """A front's Klein app, whose errors are the JSON errors every front answers: an ApiError
    as itself, an unknown path as a 404, a known path asked with another method as a 405, and
    anything else as a 500 whose traceback goes to the log."""
    app = Klein()
    # werkzeug answers "//" in a path with a redirect to a URL built from the Host header
    app.url_map.merge_slashes = False
    app.handle_errors(ApiError)(_api_error)
    app.handle_errors(WerkzeugNotFound)(_not_found)
    app.handle_errors(WerkzeugMethodNotAllowed)(_bad_method)
    app.handle_errors(Exception)(_unexpected)
    return app


# Klein calls a handler with the front's instance first, as it calls a method


def _api_error(self: Any, request: Any, failure: Failure) -> bytes:
    return render_error(request, failure.value)  # type: ignore[arg-type]


def _not_found(self: Any, request: Any, failure: Failure) -> bytes:
    return render_error(request, NotFound())


def _bad_method(self: Any, request: Any, failure: Failure) -> bytes:
    return render_bad_method(request, failure)


def _unexpected(self: Any, request: Any, failure: Failure) -> bytes:
    return render_unexpected(request, failure)
