"""The HTTP front's site: every request carries an id and the security headers, is counted by
endpoint and status, and is logged as one JSON access-log line when it ends.

``ObservedSite`` gives every HTTP request an id (a sane incoming ``X-Request-Id`` is kept) and
returns it in the ``X-Request-Id`` header with the service's security headers.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from typing import Any

from prometheus_client import Counter, Histogram
from twisted.web import http
from twisted.web.server import Request, Site

from service.core.headers import NOSNIFF
from service.scrape.metrics import series

access_log = logging.getLogger("scrapespy.access")

HTTP_REQUESTS = Counter(
    "scrapespy_http_requests_total", "HTTP requests by endpoint and status", ["endpoint", "status"]
)
HTTP_LATENCY = Histogram(
    "scrapespy_http_request_seconds",
    "HTTP request latency by endpoint",
    ["endpoint"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
KNOWN_ENDPOINTS = (
    "/scrape",
    "/credits/buy",
    "/webhooks/stripe",
    "/pricing",
    "/openapi.json",
    "/healthz",
    "/metrics",
)
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def endpoint_of(path: bytes) -> str:
    """A bounded label: known API endpoints by name, the dashboard as one, the rest as other."""
    text = path.split(b"?", 1)[0].decode("utf-8", "replace")
    if text in KNOWN_ENDPOINTS:
        return text
    if text == "/dashboard" or text.startswith("/dashboard/"):
        return "/dashboard"
    if text.startswith("/payments/demo/"):
        return "/payments/demo"
    return "other"


def request_id_of(request: Any) -> str | None:
    return getattr(request, "scrapespy_request_id", None)


# Twisted parses the Content-Type of every POST with the email package, to find form bodies;
# that was 2% of the reactor thread per scrape. Only the dashboard's forms need it.
_FORM_TYPES = (b"application/x-www-form-urlencoded", b"multipart/form-data")
# Twisted says ``TwistedWeb/<version>`` on every answer, which tells anyone the release whose
# advisories to look up; the service names itself, without a version.
SERVER_NAME = b"scrapespy"


class FormAwareRequest(Request):
    """A Request that parses a POST body into ``args`` only when it is a form, and whose
    answer's ``Server`` header has no version."""

    def write(self, data: bytes) -> None:
        # Every answer's headers go out with its first write (``finish`` writes an empty one),
        # errors and ``OPTIONS *`` included, whatever set the header before.
        if not self.startedWriting:
            self.responseHeaders.setRawHeaders(b"Server", [SERVER_NAME])
        super().write(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:  # noqa: N802
        ctype = self.requestHeaders.getRawHeaders(b"Content-Type") or ()
        self._parsePOSTFormSubmission = bool(ctype) and (
            ctype[0].split(b";", 1)[0].strip().lower() in _FORM_TYPES
        )
        super().requestReceived(command, path, version)


class ObservedSite(Site):
    """A Site whose requests carry an id and the security headers, are counted, and are logged
    as JSON lines."""

    requestFactory = FormAwareRequest

    def __init__(
        self, resource: Any, headers: tuple[tuple[bytes, bytes], ...] = (NOSNIFF,), **kwargs: Any
    ) -> None:
        super().__init__(resource, **kwargs)
        self.answer_headers = headers

    def getResourceFor(self, request: Request) -> Any:  # noqa: N802 - Twisted's name
        incoming = request.getHeader(b"X-Request-Id")
        text = incoming.decode("ascii", "replace") if incoming else ""
        request_id = text if _REQUEST_ID.match(text) else secrets.token_hex(8)
        request.scrapespy_request_id = request_id  # type: ignore[attr-defined]
        request.scrapespy_started = time.monotonic()  # type: ignore[attr-defined]
        request.setHeader(b"X-Request-Id", request_id.encode())
        for name, value in self.answer_headers:
            request.setHeader(name, value)
        return super().getResourceFor(request)

    def log(self, request: http.Request) -> None:
        started = getattr(request, "scrapespy_started", None)
        took = time.monotonic() - started if started is not None else 0.0
        endpoint = endpoint_of(request.uri)
        status = request.code
        series(HTTP_REQUESTS, endpoint, str(status)).inc()
        series(HTTP_LATENCY, endpoint).observe(took)
        if access_log.isEnabledFor(logging.INFO):
            access_log.info(
                "%s %s %d",
                request.method.decode("ascii", "replace"),
                endpoint,
                status,
                extra={
                    "event": "access",
                    "request_id": request_id_of(request),
                    "method": request.method.decode("ascii", "replace"),
                    "path": request.path.decode("utf-8", "replace")[:300],
                    "status": status,
                    "duration_ms": round(took * 1000, 2),
                    "bytes": request.sentLength,
                    "client": request.getClientAddress().host
                    if hasattr(request.getClientAddress(), "host")
                    else None,
                },
            )
