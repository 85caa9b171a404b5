"""When a rendered page has settled enough to be read.

``load`` fires before a client-side app has fetched its data and drawn it. The page's isolated
world (:mod:`service.browser.world`, which the page cannot see) notes the time of the DOM's last
change, and a :class:`PageWatch` follows the page's requests (its documents, scripts, fetches and
in-process frames) on the page's CDP session of the service's from the moment it is created;
requests of its workers and of its cross-site frames (other processes, whose documents a scrape
does not read) are not heard there. The page's timers are not watched: that
needs the page's own functions replaced, which the page can see. Instead a page that can run
scripts is given a short grace period after load (:data:`GRACE_MS`: a timer or animation frame
set on load, a request it starts), and one whose DOM changed after load is watched for
:data:`WATCH_MS` after load (the short timers it set on load, one after the other).

:meth:`PageWatch.settle` then answers once, after ``load``, no request is in flight or has
begun and either the DOM has not changed since the load event ended (the change a ``load``
listener makes is read) and the grace period is over, or the DOM changed after load, the watch
period is over and the DOM has been quiet for a short quiet period. The service waits, not the
page (no timer of the service in the page: timer ids are the window's). It also remembers the
last main-frame navigation, so that a failed navigation can be matched with what the egress
guard saw.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from patchright.async_api import Error as PlaywrightError

if TYPE_CHECKING:
    from patchright.async_api import Page

    from service.browser.world import PageWorld

# Streams that stay open by design never let a page look idle.
_LONG_LIVED = frozenset({"eventsource", "websocket"})

# A page that can run scripts may change its DOM a little after load: a timer of up to
# TIMER_MS or an animation frame its load listener set, the answer of a request it started
# (reported to the service a little after the page made it). Chromium runs a timer up to
# LEEWAY_MS after its time (its tasks' leeway): read at 50 ms, a page's 50 ms timer was missed
# 2 times in 60 on a quiet machine; at 66, never in 100.
TIMER_MS = 50
LEEWAY_MS = 16
GRACE_MS = TIMER_MS + LEEWAY_MS
# A page whose DOM changed after load is watched this long after load: the short timers it set
# on load, one after another (the settle tests' page: 50 and 300 ms).
WATCH_MS = 500

# ([quiet, grace, watch, read]) -> {wait: ms} until the page may have settled, else {settled}
# or, with read, {html} (what page.content() returns) in the same round trip. Asked in the page's
# isolated world, where WORLD_SCRIPT keeps the time of the DOM's last change.
_PROBE = """async ([quiet, grace, watch, read]) => {
  // after the page's tasks that are due (a timer of the page that is late on a busy machine)
  await scheduler.postTask(() => 0, {priority: "background"});
  const state = globalThis.activity;
  const nav = performance.getEntriesByType("navigation")[0];
  const end = nav && nav.loadEventEnd > 0 ? nav.loadEventEnd : null;
  const at = performance.now();
  let wait = 0;
  if (end === null) wait = 10;  // the load event on its way (Playwright hears it begin)
  else if (state.last > end) wait = Math.max(watch - (at - end), quiet - (at - state.last));
  else if (document.querySelector("script, iframe, frame, object, embed, [onload]")) {
    wait = grace - (at - end);
  }
  if (wait > 0) return {wait};
  if (!read) return {settled: true};
  try {
    const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : "";
    return {html: doctype + (document.documentElement ? document.documentElement.outerHTML : "")};
  } catch (error) {
    return {settled: true};  // a page that broke the DOM's methods is read another way
  }
}"""


class PageWatch:
    def __init__(self, page: Page, world: PageWorld) -> None:
        self.page = page
        self.world = world
        self.in_flight: set[str] = set()  # CDP request ids
        self.changed = asyncio.Event()
        self.last_change = 0.0  # the loop's time of the last request that began or ended
        self.last_navigation: str | None = None
        self.last_navigated = 0.0  # the loop's time of the last main-frame navigation request
        # The page's requests as its CDP session of the service's hears them (its Network
        # agent is on for the download meter): Playwright's request events would cost the
        # driver a Request object and its events a request, most of them for the images the
        # engine fails (docs/decisions/0049).
        session = world.session
        session.on("Network.requestWillBeSent", self._began)
        session.on("Network.loadingFinished", self._ended)
        session.on("Network.loadingFailed", self._ended)

    def _began(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type") or "").lower()
        if kind in _LONG_LIVED:
            return
        self.in_flight.add(str(event.get("requestId")))  # a redirect keeps its id
        self._change()
        if self.world.main_document(event):
            self.last_navigation = str((event.get("request") or {}).get("url"))
            self.last_navigated = self.last_change

    def _ended(self, event: dict[str, Any]) -> None:
        self.in_flight.discard(str(event.get("requestId")))
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

    async def settle(
        self, *, quiet: float, limit: float, loaded_at: float | None = None, read: bool = False
    ) -> str | None:
        """Wait, at most ``limit`` s, until the page has settled (the module says when); with
        ``read``, the settled page's HTML when the page could give it in the same round trip.

        The network is quiet when no request is in flight and none has begun or ended for
        ``quiet`` s, or none has since ``loaded_at`` (the loop's time when the page's load was
        seen); the page's world is asked about its DOM once the network is quiet, and again
        after the wait it names or when a request began meanwhile."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        since = loaded_at if loaded_at is not None else loop.time()
        asked = [int(quiet * 1000), GRACE_MS, WATCH_MS, read]
        while (left := end - loop.time()) > 0:
            await self.network_quiet(since=since, quiet=quiet, limit=left)
            since = self.last_change
            left = end - loop.time()
            if left <= 0:
                return None
            try:
                answer = await asyncio.wait_for(self.world.evaluate(_PROBE, asked), left)
            except (PlaywrightError, TimeoutError):
                return None  # a navigation replaced the page's document, or the limit came
            if self.last_change != since or self.in_flight:
                continue  # a request began or ended while the page was asked: wait for it
            if not isinstance(answer, dict):
                return None
            if "wait" not in answer:
                html = answer.get("html")
                return html if isinstance(html, str) else None
            self.changed.clear()
            wait = min(float(answer["wait"]) / 1000, end - loop.time())
            with suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), max(wait, 0.0))
        return None
