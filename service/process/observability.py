"""What an operator reads: the event logs, one JSON object a line.

``ObservedSite`` gives every HTTP request an id (a sane incoming ``X-Request-Id`` is kept),
returns it in the ``X-Request-Id`` header with the service's security headers, counts the
request by endpoint and status, and writes one JSON access-log line when it ends. Event logs go
through the standard ``logging`` module; :class:`JsonFormatter` renders them one JSON object a
line.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

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
