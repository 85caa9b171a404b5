"""What an operator sees: Prometheus metrics, request ids, JSON access and event logs.

``ObservedSite`` gives every HTTP request an id (a sane incoming ``X-Request-Id`` is kept),
returns it in the ``X-Request-Id`` header with the service's security headers, counts the
request by endpoint and status, and writes one JSON access-log line when it ends. Event logs go
through the standard ``logging`` module; :class:`JsonFormatter` renders them one JSON object a
line.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest
from twisted.web import http
from twisted.web.server import Request, Site

from service.scrape.results import ScrapeResult

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
SCRAPES = Counter(
    "scrapespy_scrapes_total",
    "Scrapes by engine, tier asked, tier used and outcome",
    ["engine", "tier_requested", "tier_used", "success", "blocked"],
)
SCRAPE_LATENCY = Histogram(
    "scrapespy_scrape_seconds",
    "Scrape time (elapsed_ms) by engine",
    ["engine"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 60, 120),
)
CREDITS_CAPTURED = Counter("scrapespy_credits_captured_total", "Credits billed for scrapes")
HOLDS_OPEN = Gauge("scrapespy_holds_open", "Credit holds of this process not yet settled")
BROWSER_PAGES = Gauge("scrapespy_browser_pages_open", "Browser pages open")
BROWSER_CONTEXTS = Gauge("scrapespy_browser_contexts_open", "Browser contexts open")

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

NOSNIFF = (b"X-Content-Type-Options", b"nosniff")
# A year, the common floor; no includeSubDomains nor preload: the operator's other hosts under
# the same domain are not the service's to commit to HTTPS.
HSTS = (b"Strict-Transport-Security", b"max-age=31536000")


def security_headers(public_url: str) -> tuple[tuple[bytes, bytes], ...]:
    """The headers of every answer: HSTS only when the service is reached over HTTPS."""
    if public_url.lower().startswith("https://"):
        return (NOSNIFF, HSTS)
    return (NOSNIFF,)


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


# (metric, label values) -> the labelled series; labels() costs a lock and a validation per call.
# The label values are drawn from small fixed sets (endpoints, statuses, engines, tiers).
_SERIES: dict[tuple[Any, tuple[str, ...]], Any] = {}


def series(metric: Any, *labels: str) -> Any:
    found = _SERIES.get((metric, labels))
    if found is None:
        found = _SERIES[metric, labels] = metric.labels(*labels)
    return found


def record_scrape(result: ScrapeResult, tier_requested: str, tier_used: str, charged: int) -> None:
    engine = result.engine
    success = "true" if result.success else "false"
    blocked = "true" if result.blocked else "false"
    series(SCRAPES, engine, tier_requested, tier_used, success, blocked).inc()
    series(SCRAPE_LATENCY, engine).observe(result.elapsed_ms / 1000)
    if charged:
        CREDITS_CAPTURED.inc(charged)


def watch_browser(handler: Any) -> None:
    """Report the js engine's open contexts and pages, read when /metrics is scraped."""

    def contexts() -> int:
        browser = getattr(handler, "browser", None)
        return len(browser.contexts) if browser is not None else 0

    def pages() -> int:
        browser = getattr(handler, "browser", None)
        if browser is None:
            return 0
        return sum(len(context.pages) for context in browser.contexts)

    BROWSER_CONTEXTS.set_function(contexts)
    BROWSER_PAGES.set_function(pages)


def metrics_page() -> tuple[bytes, str]:
    return generate_latest(), CONTENT_TYPE_LATEST


def request_id_of(request: Any) -> str | None:
    return getattr(request, "scrapespy_request_id", None)


# Twisted parses the Content-Type of every POST with the email package, to find form bodies;
# that was 2% of the reactor thread per scrape. Only the dashboard's forms need it.
_FORM_TYPES = (b"application/x-www-form-urlencoded", b"multipart/form-data")


class FormAwareRequest(Request):
    """A Request that parses a POST body into ``args`` only when it is a form."""

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


# the record's own fields, and the objects Scrapy attaches to its records for its own handlers
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "crawler", "spider"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and any ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "pid": record.process,
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_") and key not in body:
                body[key] = value
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(body, default=str).decode()


class TwistedLogHandler(logging.Handler):
    """Python logging into Twisted's log (``twistd``'s log file), without a loop back."""

    def __init__(self) -> None:
        super().__init__()
        from twisted.logger import Logger

        self._log = Logger(namespace="scrapespy")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._log.info("{line}", line=self.format(record))
        except Exception:
            self.handleError(record)


def lean_log_records() -> None:
    """Log records without what no format of the service prints: the caller's file and line
    (a walk up the stack for every record), the thread and the multiprocessing process name.
    The Logging HOWTO's own optimisations; the pid stays (it is in every JSON line)."""
    logging._srcfile = None  # type: ignore[attr-defined]
    logging.logThreads = False
    logging.logMultiprocessing = False


def log_through(
    handler: logging.Handler,
    level: str,
    fmt: str,
    text: str = "%(asctime)s %(levelname)s %(name)s: %(message)s",
) -> None:
    """The service's logging: ``handler`` alone on the root logger, JSON lines unless ``fmt``
    asks for ``text``."""
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(text))
    lean_log_records()
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # Scrapy leaves the root logger at NOTSET and its own at DEBUG: every debug line (two a
    # scrape) would be built as a record, only for the handler to drop it.
    root.setLevel(level)
    logging.getLogger("scrapy").setLevel(level)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    # An unreachable target's robots.txt is the caller's business, not an operator's error.
    logging.getLogger("scrapy.downloadermiddlewares.robotstxt").setLevel(logging.CRITICAL)


def log_to_twisted(level: str, fmt: str) -> None:
    # twistd's log file puts its own time on every line
    log_through(TwistedLogHandler(), level, fmt, "%(levelname)s %(name)s: %(message)s")
