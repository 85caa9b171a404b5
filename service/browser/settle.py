"""When a rendered page has settled enough to be read.

``load`` fires before a client-side app has fetched its data and drawn it. A :class:`PageWatch`
follows the page's requests from the moment it is created; :meth:`PageWatch.settle` then waits,
within a limit, until no request has been in flight and the DOM has not changed for a short
quiet period. It also remembers the last main-frame navigation, so that a failed navigation can
be matched with what the egress guard saw.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError

if TYPE_CHECKING:
    from playwright.async_api import Page
    from playwright.async_api import Request as PlaywrightRequest

# Streams that stay open by design never let a page look idle.
_LONG_LIVED = frozenset({"eventsource", "websocket"})

_DOM_QUIET = """([quiet, limit]) => new Promise((resolve) => {
  let timer;
  const done = () => { observer.disconnect(); resolve(); };
  const observer = new MutationObserver(() => {
    clearTimeout(timer);
    timer = setTimeout(done, quiet);
  });
  const all = {subtree: true, childList: true, attributes: true, characterData: true};
  observer.observe(document, all);
  // quiet since the end of the load event, not since this evaluation reached the page
  const nav = performance.getEntriesByType("navigation")[0];
  const calm = nav && nav.loadEventEnd > 0 ? performance.now() - nav.loadEventEnd : 0;
  timer = setTimeout(done, Math.max(0, quiet - calm));
  setTimeout(done, limit);
})"""


class PageWatch:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.in_flight: set[PlaywrightRequest] = set()
        self.changed = asyncio.Event()
        self.last_change = 0.0  # the loop's time of the last request that began or ended
        self.last_navigation: str | None = None
        self.last_navigated = 0.0  # the loop's time of the last main-frame navigation request
        page.on("request", self._began)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    def _began(self, request: PlaywrightRequest) -> None:
        if request.resource_type in _LONG_LIVED:
            return
        self.in_flight.add(request)
        self._change()
        with suppress(PlaywrightError):
            if request.is_navigation_request() and request.frame == self.page.main_frame:
                self.last_navigation = request.url
                self.last_navigated = self.last_change

    def _ended(self, request: PlaywrightRequest) -> None:
        self.in_flight.discard(request)
        self._change()

    def _change(self) -> None:
        self.last_change = asyncio.get_running_loop().time()
        self.changed.set()

    def navigated_since(self, since: float) -> bool:
        return self.last_navigated > since

    async def first_change(self, *, since: float, limit: float) -> None:
        """Wait, at most ``limit`` s, until a request has begun or ended after ``since``."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while self.last_change <= since and (left := end - loop.time()) > 0:
            self.changed.clear()
            with suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)

    async def network_quiet(self, *, since: float, quiet: float, limit: float) -> None:
        """Wait, at most ``limit`` s, until no request is in flight and none has begun or ended
        for ``quiet`` s; nothing to wait for when no request began or ended after ``since``."""
        if self.last_change <= since and not self.in_flight:
            return
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while (left := end - loop.time()) > 0:
            self.changed.clear()
            wait = left if self.in_flight else quiet - (loop.time() - self.last_change)
            if wait <= 0:
                return
            try:
                await asyncio.wait_for(self.changed.wait(), min(wait, left))
            except TimeoutError:
                if not self.in_flight:
                    return

    async def settle(self, *, quiet: float, limit: float, loaded_at: float | None = None) -> None:
        """Wait until the network and the DOM have been quiet for ``quiet`` s, or ``limit`` s.

        Quiet counts from ``loaded_at`` (the loop's time when the page's load was seen) or the
        last request that began or ended, whichever is later; the DOM's, in the page, from the
        end of its load event or its last change."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        dom = asyncio.ensure_future(
            self.page.evaluate(_DOM_QUIET, [int(quiet * 1000), int(limit * 1000)])
        )
        calm_from = max(loaded_at if loaded_at is not None else loop.time(), self.last_change)
        try:
            while (left := end - loop.time()) > 0:
                self.changed.clear()
                if self.in_flight:
                    wait = left
                else:
                    wait = min(quiet - (loop.time() - calm_from), left)
                    if wait <= 0:
                        break
                try:
                    await asyncio.wait_for(self.changed.wait(), wait)
                    calm_from = self.last_change
                except TimeoutError:
                    if not self.in_flight:
                        break
            with suppress(PlaywrightError, TimeoutError):
                await asyncio.wait_for(dom, max(end - loop.time(), 0.0))
        finally:
            # Not awaited: swallowing a cancellation here would defeat the request's timeout.
            dom.cancel()
            dom.add_done_callback(_consume)


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
