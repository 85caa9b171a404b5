"""Fresh browser contexts made ahead of demand, each given to one request and never reused.

Most of a ``js`` request's own time goes into creating its context and page (a new renderer
process) before navigation starts. :class:`Spares` keeps a few of them ready, each with its own
egress route and the pause of its skippable resources already in place, so a request takes one
and navigates at once; the request's proxy, if any, is set on the route then, and what its page
skips (and, for a navigation it adds to, its request handler) on the spare, since nothing has
gone through either yet. Isolation is the same as creating
the context on demand: a spare has never loaded anything. The pool refills in the background and
drops spares of a browser that is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from patchright.async_api import Error as PlaywrightError

from service.browser.launch import HEAVY_RESOURCE_TYPES, IMAGE_TYPES, blocked_addresses

if TYPE_CHECKING:
    from patchright.async_api import Browser, BrowserContext, CDPSession, Page, Route
    from patchright.async_api import Request as PlaywrightRequest

    from service.browser.egress import EgressRoute
    from service.browser.identity import Identity
    from service.browser.meter import DownloadMeter
    from service.browser.world import PageWorld

# the resource types a page may be told to skip: heavy ones, and images unless a screenshot or
# steps need them (Playwright's names are CDP's Network.ResourceType, lower-cased)
SKIPPABLE = HEAVY_RESOURCE_TYPES | IMAGE_TYPES

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 5.0
# Closes that outlived CLOSE_TIMEOUT, kept until the browser gets to them: a cancelled close
# leaves its context open for good (a page that pushed 100,000 history entries kept its
# renderer busy past 5 s; its context then stayed open as long as the browser).
_late_closes: set[asyncio.Future[None]] = set()


@dataclass(eq=False)
class Spare:
    """A context with one blank page, reaching out only through its own route."""

    browser: Browser
    route: EgressRoute
    context: BrowserContext
    page: Page
    meter: DownloadMeter
    world: PageWorld  # the page's isolated world (service.browser.world)
    identity: Identity  # what the context presents (service.browser.identity)
    # the page's session of the service's: it keeps the identity's overrides in force, and the
    # world and the meter use it (its network agent on)
    session: CDPSession
    # Set by the request that takes the spare: the resource types its page skips (failed in
    # the browser, :meth:`pause_skippable`), and, for a navigation the request adds to (a
    # caller's headers, a method or body of its own), the handler the page's interception
    # (``intercept``, routed then) hands it to. A plain navigation goes untouched, in Chrome's
    # own header order, and with no route the page keeps the cache Playwright turns off on
    # every page it intercepts (``Cache-Control``/``Pragma: no-cache`` on each request).
    handler: Callable[[Route, PlaywrightRequest], Awaitable[Any]] | None = None
    skipped: frozenset[str] = frozenset()
    blocked: list[dict[str, Any]] = field(default_factory=list)  # the addresses failed at once

    async def block(self) -> None:
        """Fail the page's requests for addresses with the extensions of the skipped types in
        the browser, before they are sent (service.browser.launch.blocked_addresses), on the
        page's session, whose network agent the meter turned on; sent only when that list
        changes."""
        blocked = blocked_addresses(self.skipped)
        if blocked != self.blocked:
            await self.session.send("Network.setBlockedURLs", {"urlPatterns": blocked})
            self.blocked = blocked

    async def pause_skippable(self) -> None:
        """Have the browser pause the page's requests of the types a request may skip (on the
        page's own session, which the page cannot see), and fail those it skips: one message
        each way for such a request and none for the others, where a route takes every request
        of the page through the driver."""
        self.session.on("Fetch.requestPaused", self._paused)
        patterns = [{"resourceType": kind.capitalize()} for kind in sorted(SKIPPABLE)]
        await self.session.send("Fetch.enable", {"patterns": patterns})

    async def _paused(self, event: dict[str, Any]) -> None:
        request = {"requestId": event["requestId"]}
        try:
            if str(event.get("resourceType", "")).lower() in self.skipped:
                await self.session.send("Fetch.failRequest", {**request, "errorReason": "Aborted"})
            else:
                await self.session.send("Fetch.continueRequest", request)
        except PlaywrightError as error:  # a page or context closed meanwhile
            log.debug("a paused request of a closing page was not let go: %s", error)

    async def intercept(self, route: Route, request: PlaywrightRequest) -> None:
        """The route of a page whose request adds to its navigations."""
        try:
            if request.is_navigation_request() and self.handler is not None:
                await self.handler(route, request)
            else:
                await route.continue_()
        except PlaywrightError as error:  # a page or context closed meanwhile
            log.debug("a request of a closing page was not let through: %s", error)

    def usable(self, browser: Browser) -> bool:
        return self.browser is browser and browser.is_connected() and not self.page.is_closed()

    async def close(self) -> None:
        closing = asyncio.ensure_future(self.context.close())
        try:
            await asyncio.wait_for(asyncio.shield(closing), CLOSE_TIMEOUT)
        except Exception:
            if not closing.done():
                _late_closes.add(closing)
                closing.add_done_callback(_late_closed)
        finally:
            self.route.close()


def _late_closed(closing: asyncio.Future[None]) -> None:
    _late_closes.discard(closing)
    if not closing.cancelled() and closing.exception() is not None:
        log.debug("a browser context closed late with an error: %s", closing.exception())


class Spares:
    def __init__(self, size: int, make: Callable[[Browser], Awaitable[Spare]]) -> None:
        self.size = size
        self.make = make
        self.ready: list[Spare] = []
        self._making: set[asyncio.Task[None]] = set()
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    def take(self, browser: Browser) -> Spare | None:
        while self.ready:
            spare = self.ready.pop()
            if spare.usable(browser):
                return spare
            self._close_later(spare)
        return None

    def refill(self, browser: Browser) -> None:
        if self._closed or not browser.is_connected():
            return
        for _ in range(self.size - len(self.ready) - len(self._making)):
            task = asyncio.ensure_future(self._make_one(browser))
            self._making.add(task)
            task.add_done_callback(self._making.discard)

    async def _make_one(self, browser: Browser) -> None:
        try:
            spare = await self.make(browser)
        except Exception as error:  # a dying browser; the next request will notice
            log.debug("could not make a spare browser context: %s", error)
            return
        if self._closed or not spare.usable(browser):
            await spare.close()
        else:
            self.ready.append(spare)

    def _close_later(self, spare: Spare) -> None:
        task = asyncio.ensure_future(spare.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close every spare; the browser is about to go, so spares being made are dropped."""
        self._closed = True
        for task in self._making:
            task.cancel()
        ready, self.ready = self.ready, []
        pending = [*(spare.close() for spare in ready), *self._making, *self._closing]
        with suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), CLOSE_TIMEOUT)
