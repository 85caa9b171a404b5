"""Where a scrape's time went: the ``timings`` of a result (docs/api.md), measured where each
phase happens, on ``time.monotonic()``.

A :class:`Clock` rides on the scrape's order and in its request's meta (``CLOCK`` of
service.scrape.meta; a redirect's request copies the meta, not the clock, so every hop adds to
the same one):

- the static download handler wraps each of its downloads in :class:`StaticDownload`, which
  notes when the first one began (the end of ``queue``) and, from Scrapy's own
  ``download_latency`` (the request sent to the response's headers), ``first_byte`` and
  ``download``; :class:`TimedConnectionPool`, the handler's connection pool, adds ``connect``
  for a connection it opens (0 for one it reuses);
- the js engine notes the navigation's start (the end of ``queue``) and its end, once the DOM
  has been read (``render``): :func:`render_started`, :func:`rendered`;
- the fields pipeline notes the parse (``extraction``).

A phase that did not happen for this scrape is None (``render`` for static, ``connect`` to
``download`` for js, what comes after the point where a scrape failed).
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field
from twisted.web.client import HTTPConnectionPool
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from scrapy import Request
    from twisted.internet.defer import Deferred


# the request.meta key of the scrape's Clock (named with the others in service.scrape.meta)
CLOCK = "scrapespy_clock"


class Timings(TypedDict):
    """Where the scrape's time went, in milliseconds; null: the phase did not happen for
    this scrape."""

    queue: Annotated[
        float | None,
        Field(
            ge=0,
            description="from the scrape's acceptance until its download (static) or its "
            "navigation (js) began: robots.txt, the proxy, a page of the browser",
        ),
    ]
    connect: Annotated[
        float | None,
        Field(ge=0, description="static: resolving and connecting, 0 on a kept connection"),
    ]
    first_byte: Annotated[
        float | None,
        Field(ge=0, description="static: the request sent (TLS included) until the headers"),
    ]
    download: Annotated[
        float | None,
        Field(ge=0, description="static: the response's headers until its body was complete"),
    ]
    render: Annotated[
        float | None,
        Field(ge=0, description="js: the navigation until the rendered page was read"),
    ]
    extraction: Annotated[
        float | None,
        Field(ge=0, description="the parse of the page's fields and outputs, after elapsed_ms"),
    ]


# The clock of the static download under way in this asyncio task: the pool reads it while the
# handler asks it for a connection, within the same synchronous call.
_DOWNLOADING: ContextVar[Clock | None] = ContextVar("scrapespy_downloading", default=None)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


class Clock:
    """A scrape's phases so far, in seconds (None: not happened)."""

    __slots__ = (
        "connect",
        "download",
        "extraction",
        "fetch_started",
        "first_byte",
        "hop_connect",
        "render",
    )

    def __init__(self) -> None:
        self.fetch_started: float | None = None  # the first download or navigation began
        self.connect: float | None = None
        self.first_byte: float | None = None
        self.download: float | None = None
        self.render: float | None = None
        self.extraction: float | None = None
        self.hop_connect = 0.0  # the connect time of the download under way

    def began(self, now: float) -> None:
        if self.fetch_started is None:
            self.fetch_started = now

    def timings(self, started: float) -> Timings:
        """The result's ``timings``, in milliseconds; ``started`` is when the order began."""
        fetched = self.fetch_started
        return {
            "queue": _ms(fetched - started) if fetched is not None else None,
            "connect": _ms(self.connect),
            "first_byte": _ms(self.first_byte),
            "download": _ms(self.download),
            "render": _ms(self.render),
            "extraction": _ms(self.extraction),
        }


def _add(total: float | None, seconds: float) -> float:
    return seconds if total is None else total + seconds


class StaticDownload:
    """``with StaticDownload(request):`` around one static download of the HTTP/1.1 handler."""

    __slots__ = ("clock", "meta", "started", "token")

    def __init__(self, request: Request) -> None:
        self.meta = request.meta
        self.clock: Clock | None = self.meta.get(CLOCK)

    def __enter__(self) -> None:
        self.started = time.monotonic()
        clock = self.clock
        if clock is not None:
            clock.began(self.started)
            clock.hop_connect = 0.0
            # a redirect's request carries the previous hop's figure; Scrapy sets it afresh
            self.meta.pop("download_latency", None)
        self.token = _DOWNLOADING.set(clock)

    def __exit__(self, *exc_info: object) -> None:
        _DOWNLOADING.reset(self.token)
        clock = self.clock
        latency = self.meta.get("download_latency")
        if clock is None or latency is None:  # no response's headers arrived
            return
        ended = time.monotonic()
        clock.first_byte = _add(clock.first_byte, max(latency - clock.hop_connect, 0.0))
        clock.download = _add(clock.download, max(ended - self.started - latency, 0.0))


class TimedConnectionPool(HTTPConnectionPool):
    """Twisted's pool that times the connections it opens for a static download under way
    (:class:`StaticDownload`): ``connect`` is the name's resolution and the TCP connection (to
    the proxy, and through its tunnel for https, when there is one); a TLS handshake with the
    target is counted in ``first_byte``. A reused connection adds 0."""

    def getConnection(self, key: Any, endpoint: Any) -> Deferred[Any]:
        got: Deferred[Any] = super().getConnection(key, endpoint)
        clock = _DOWNLOADING.get()
        if clock is not None:
            if got.called:  # a kept connection: nothing to connect
                clock.connect = _add(clock.connect, 0.0)
            else:
                got.addBoth(_connected, clock, time.monotonic())
        return got

    @classmethod
    def install(cls, handler: Any) -> None:
        """Replace the pool of Scrapy's HTTP/1.1 ``handler`` with one configured the same."""
        pool: HTTPConnectionPool = handler._pool
        timed = cls(pool._reactor, persistent=pool.persistent)
        timed.maxPersistentPerHost = pool.maxPersistentPerHost
        timed.cachedConnectionTimeout = pool.cachedConnectionTimeout
        timed.retryAutomatically = pool.retryAutomatically
        timed._factory = pool._factory
        handler._pool = timed


def _connected(result: Any, clock: Clock, started: float) -> Any:
    seconds = time.monotonic() - started
    clock.connect = _add(clock.connect, seconds)
    clock.hop_connect = seconds
    return result


def render_started(meta: MutableMapping[str, Any]) -> float:
    """The js engine's navigation begins: the end of ``queue``."""
    now = time.monotonic()
    clock: Clock | None = meta.get(CLOCK)
    if clock is not None:
        clock.began(now)
    return now


def rendered(meta: MutableMapping[str, Any], started: float) -> None:
    """The rendered page's DOM has been read: ``render`` is the navigation until now."""
    clock: Clock | None = meta.get(CLOCK)
    if clock is not None:
        clock.render = time.monotonic() - started
