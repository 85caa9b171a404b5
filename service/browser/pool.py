"""``SCRAPESPY_BROWSER_ENDPOINTS``: the js engine's contexts spread over browser servers.

Each endpoint is one Playwright browser server (``scrapespy browser``,
:mod:`service.browser.server`) that the service connects to once and keeps. A render takes
the endpoint with the fewest contexts open for renders (ties go round the list, so sequential
scrapes alternate), and gives its count back when its context has closed.

An endpoint whose connection goes (its server killed, its host gone) is taken out at once: the
renders on it fail (:class:`service.browser.failures.BrowserUnavailable`, unbilled) or are
tried again on another endpoint by the handler, within their deadline. It is tried again after
0.5 s, then after twice as long each time it is still down, up to
``SCRAPESPY_BROWSER_ENDPOINT_RETRY_SECONDS``, and taken back once it answers. An endpoint that
cannot be reached at start is treated the same way.

``SCRAPESPY_BROWSER_ENDPOINT_TOKEN`` goes to every server as ``Authorization: Bearer <token>``.
The log names an endpoint by its scheme, host, port and path only, and an error's message is
logged with the token cut out of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from service.browser.failures import BrowserUnavailable
from service.scrape.metrics import BROWSER_ENDPOINT_RENDERS, BROWSER_ENDPOINT_UP, series

if TYPE_CHECKING:
    from patchright.async_api import Browser, BrowserType

__all__ = ["BrowserPool", "Endpoint", "endpoint_label", "parse_endpoints"]

log = logging.getLogger(__name__)

FIRST_RETRY = 0.5  # seconds before a lost endpoint is tried again, doubling each time
CONNECT_TIMEOUT = 30.0  # a server that does not answer the handshake within it is down
UNAVAILABLE = "no browser of the js engine is reachable; retry later"


def parse_endpoints(entries: Iterable[str]) -> tuple[str, ...]:
    """``["ws://a:1/x", " ws://b:2/ "]`` -> the ws URLs, checked; a bad one raises."""
    urls = []
    for entry in entries:
        url = entry.strip()
        if not url:
            continue
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            shown = endpoint_label(url)
            raise ValueError(
                f"SCRAPESPY_BROWSER_ENDPOINTS: expected ws://host:port/path, not {shown!r}"
            )
        urls.append(url)
    return tuple(urls)


def endpoint_label(url: str) -> str:
    """The endpoint as the log names it: no credentials, no query."""
    try:
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port:
            netloc = f"{netloc}:{parts.port}"
    except ValueError:
        return "<an endpoint that is not a URL>"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@dataclass(eq=False)
class Endpoint:
    url: str
    label: str
    browser: Browser | None = None
    contexts: int = 0  # contexts open for renders on its browser
    failures: int = 0  # connections that failed in a row
    checking: asyncio.Future[None] | None = None

    @property
    def up(self) -> bool:
        return self.browser is not None and self.browser.is_connected()


class BrowserPool:
    def __init__(
        self,
        urls: Iterable[str],
        *,
        token: str = "",
        max_retry: float = 15.0,
        connect_timeout: float = CONNECT_TIMEOUT,
        stats: Any = None,
    ) -> None:
        self.endpoints = [Endpoint(url, endpoint_label(url)) for url in parse_endpoints(urls)]
        self.token = token
        self.max_retry = max_retry
        self.connect_timeout = connect_timeout
        self.stats = stats
        self._browser_type: BrowserType | None = None
        self._started: asyncio.Future[list[None]] | None = None
        self._next = 0  # where ties start, so that equal endpoints take turns
        self._closed = False
        self.on_connected: Callable[[Browser], None] | None = None

    def __bool__(self) -> bool:
        return bool(self.endpoints)

    @property
    def browsers(self) -> list[Browser]:
        return [e.browser for e in self.endpoints if e.browser is not None and e.up]

    async def start(self, browser_type: BrowserType) -> None:
        """Connect to every endpoint, at once; those that fail are tried again later. Waits
        for the first attempts, so the first render sees every endpoint that answers."""
        if self._started is None:
            self._browser_type = browser_type
            self._started = asyncio.ensure_future(
                asyncio.gather(*(self._connect(e) for e in self.endpoints))
            )
        started = self._started
        await asyncio.shield(started)

    def pick(self) -> tuple[Endpoint, Browser]:
        """The endpoint with the fewest open contexts among those up, counted as one more."""
        count = len(self.endpoints)
        up = [(i, e) for i, e in enumerate(self.endpoints) if e.up]
        if not up:
            self._inc("scrapespy/browser_pool/unavailable")
            raise BrowserUnavailable(UNAVAILABLE)
        index, endpoint = min(up, key=lambda one: (one[1].contexts, (one[0] - self._next) % count))
        self._next = (index + 1) % count
        endpoint.contexts += 1
        series(BROWSER_ENDPOINT_RENDERS, endpoint.label).inc()
        assert endpoint.browser is not None
        return endpoint, endpoint.browser

    def release(self, endpoint: Endpoint, browser: Browser | None) -> None:
        """A render on ``browser`` let go of its context; one on a connection since lost is
        not counted (the endpoint's count started again at 0 when it came back)."""
        if endpoint.browser is browser:
            endpoint.contexts = max(endpoint.contexts - 1, 0)

    def owns(self, browser: Browser) -> bool:
        return any(e.browser is browser for e in self.endpoints)

    def lost(self, browser: Browser) -> None:
        """``browser``'s connection went: its endpoint is out until it answers again."""
        for endpoint in self.endpoints:
            if endpoint.browser is browser:
                endpoint.browser = None
                series(BROWSER_ENDPOINT_UP, endpoint.label).set(0)
                if not self._closed:
                    log.warning("browser endpoint %s down: the connection went", endpoint.label)
                    self._inc("scrapespy/browser_pool/down")
                    self._check_later(endpoint)

    async def _connect(self, endpoint: Endpoint) -> None:
        assert self._browser_type is not None
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        try:
            browser = await asyncio.wait_for(
                self._browser_type.connect(
                    endpoint.url, headers=headers, timeout=self.connect_timeout * 1000
                ),
                self.connect_timeout + 5,
            )
        except Exception as error:  # refused, a wrong token, a timeout: down, tried again later
            series(BROWSER_ENDPOINT_UP, endpoint.label).set(0)
            endpoint.failures += 1
            if endpoint.failures == 1 or endpoint.failures % 10 == 0:
                log.warning(
                    "browser endpoint %s down: %s", endpoint.label, self._without_token(error)
                )
            self._check_later(endpoint)
            return
        if self._closed:
            with suppress(Exception):
                await browser.close()
            return
        endpoint.browser = browser
        endpoint.contexts = 0  # the contexts counted on the server that went are gone with it
        endpoint.failures = 0
        browser.on("disconnected", self.lost)
        if self.on_connected is not None:
            self.on_connected(browser)
        series(BROWSER_ENDPOINT_UP, endpoint.label).set(1)
        log.info("browser endpoint %s up (Chromium %s)", endpoint.label, browser.version)
        self._inc("scrapespy/browser_pool/up")

    def _check_later(self, endpoint: Endpoint) -> None:
        if self._closed or (endpoint.checking is not None and not endpoint.checking.done()):
            return
        ceiling = max(self.max_retry, FIRST_RETRY)
        delay = min(FIRST_RETRY * 2 ** max(endpoint.failures - 1, 0), ceiling)
        endpoint.checking = asyncio.ensure_future(self._check(endpoint, delay))

    async def _check(self, endpoint: Endpoint, delay: float) -> None:
        await asyncio.sleep(delay)
        endpoint.checking = None
        if not self._closed and not endpoint.up:
            await self._connect(endpoint)

    def _without_token(self, error: BaseException) -> str:
        text = str(getattr(error, "message", None) or error).splitlines()[0] if str(error) else ""
        text = text or error.__class__.__name__
        if self.token:
            text = text.replace(self.token, "***")
        for endpoint in self.endpoints:
            if endpoint.url != endpoint.label:
                text = text.replace(endpoint.url, endpoint.label)
        return text

    async def close(self) -> None:
        self._closed = True
        for endpoint in self.endpoints:
            if endpoint.checking is not None:
                endpoint.checking.cancel()
        if self._started is not None and not self._started.done():
            self._started.cancel()
        browsers = [e.browser for e in self.endpoints if e.browser is not None]
        for endpoint in self.endpoints:
            endpoint.browser = None
        for browser in browsers:
            with suppress(Exception):
                await asyncio.wait_for(browser.close(), 5.0)

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)
