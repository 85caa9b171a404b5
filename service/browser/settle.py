"""When a rendered page has settled enough to be read.

``load`` fires before a client-side app has fetched its data and drawn it. Every context runs
:data:`ACTIVITY_SCRIPT` in its pages before their own scripts: it notes the time of the DOM's
last change and counts the work the page has pending: its ``fetch`` and ``XMLHttpRequest``
calls (their end counts as a change of the DOM) and its short timers (``setTimeout`` of at
most :data:`SHORT_TIMER_MS`, ``requestAnimationFrame``; a timer a timer started counts too, up
to :data:`TIMER_DEPTH` deep, so that a timer loop does not hold the page until the limit). A
:class:`PageWatch` follows all of the page's requests (scripts, frames) from the moment it is
created.

:meth:`PageWatch.settle` then answers at once when, after ``load``, no request is in flight or
has begun, no short timer is pending and the DOM has not changed since the load event ended
(the change a ``load`` listener makes is read). Otherwise it waits, within a limit, until the
requests have ended, the timers have fired and network and DOM have been quiet for a short
quiet period. It also remembers the last main-frame navigation, so that a failed navigation can
be matched with what the egress guard saw.

The page can see that ``setTimeout``, ``fetch`` and their kin are wrapped (they are proxies of
the browser's own functions: their name and length are the same, their source text is not).
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

SHORT_TIMER_MS = 500
TIMER_DEPTH = 3

# Run in every frame before the page's own scripts (BrowserContext.add_init_script).
ACTIVITY_SCRIPT = """(() => {
  const KEY = "__scrapespyActivity";
  if (Object.prototype.hasOwnProperty.call(window, KEY)) return;
  const SHORT = SHORT_TIMER_MS, DEEP = TIMER_DEPTH;
  const setT = window.setTimeout, clearT = window.clearTimeout, clearI = window.clearInterval;
  const frame = window.requestAnimationFrame, unframe = window.cancelAnimationFrame;
  const now = () => performance.now();
  const timers = new Set(), frames = new Set();
  let depth = 0;
  const state = {pending: 0, last: 0};
  const track = (target, self, args, ids) => {
    const callback = args[0];
    if (typeof callback !== "function" || depth >= DEEP) return Reflect.apply(target, self, args);
    const level = depth + 1;
    let id;
    args[0] = function () {
      if (ids.delete(id)) state.pending--;
      const outer = depth;
      depth = level;
      try { return callback.apply(this, arguments); } finally { depth = outer; }
    };
    id = Reflect.apply(target, self, args);
    ids.add(id);
    state.pending++;
    return id;
  };
  const forget = (ids) => ({apply(target, self, args) {
    if (ids.delete(args[0])) state.pending--;
    return Reflect.apply(target, self, args);
  }});
  window.setTimeout = new Proxy(setT, {apply(target, self, args) {
    return (+args[1] || 0) <= SHORT ? track(target, self, args, timers)
      : Reflect.apply(target, self, args);
  }});
  window.clearTimeout = new Proxy(clearT, forget(timers));
  window.clearInterval = new Proxy(clearI, forget(timers));
  if (frame) {
    window.requestAnimationFrame = new Proxy(frame, {apply(target, self, args) {
      return track(target, self, args, frames);
    }});
    window.cancelAnimationFrame = new Proxy(unframe, forget(frames));
  }
  // A request the page makes is pending until it ends, and its end counts as a change: what
  // the page does with the answer comes after it.
  const ended = () => { state.pending--; state.last = now(); };
  if (window.fetch) {
    window.fetch = new Proxy(window.fetch, {apply(target, self, args) {
      const answer = Reflect.apply(target, self, args);
      state.pending++;
      answer.then(ended, ended);
      return answer;
    }});
  }
  if (window.XMLHttpRequest) {
    const proto = XMLHttpRequest.prototype;
    proto.send = new Proxy(proto.send, {apply(target, self, args) {
      state.pending++;
      try {
        self.addEventListener("loadend", ended, {once: true});
        return Reflect.apply(target, self, args);
      } catch (error) {
        self.removeEventListener("loadend", ended);
        ended();
        throw error;
      }
    }});
  }
  new MutationObserver(() => { state.last = now(); }).observe(document,
    {subtree: true, childList: true, attributes: true, characterData: true});
  // Resolves true once, after the load event, no short timer is pending and the DOM has not
  // changed since the load event ended, or not for quiet ms; false after limit ms.
  state.settled = (quiet, limit) => new Promise((resolve) => {
    const started = now();
    const check = () => {
      const nav = performance.getEntriesByType("navigation")[0];
      const end = nav && nav.loadEventEnd > 0 ? nav.loadEventEnd : null;
      const at = now();
      if (end !== null && state.pending === 0) {
        if (state.last <= end || at - state.last >= quiet) return resolve(true);
      }
      if (at - started >= limit) return resolve(false);
      // the load event may still be on its way (Playwright's load is heard as it begins)
      const calm = state.pending > 0 ? 10 : end === null ? 0 : quiet - (at - state.last);
      setT(check, Math.max(0, Math.min(calm, limit - (at - started))));
    };
    check();
  });
  Object.defineProperty(window, KEY, {value: state});
})()""".replace("SHORT_TIMER_MS", str(SHORT_TIMER_MS)).replace("TIMER_DEPTH", str(TIMER_DEPTH))

# With read, a settled page's HTML (what page.content() returns) comes in the same round trip.
_SETTLED = """async ([quiet, limit, read]) => {
  const activity = window.__scrapespyActivity;
  if (!activity) return null;
  const settled = await activity.settled(quiet, limit);
  if (!read || !settled) return settled;
  try {
    const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : "";
    return doctype + (document.documentElement ? document.documentElement.outerHTML : "");
  } catch (error) {
    return true;  // a page that broke the DOM's methods is read another way
  }
}"""

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

    async def settle(
        self, *, quiet: float, limit: float, loaded_at: float | None = None, read: bool = False
    ) -> str | None:
        """Wait, at most ``limit`` s, until the page has settled (the module says when); with
        ``read``, the settled page's HTML when the page could give it in the same round trip.

        The network is quiet when no request is in flight and none has begun or ended for
        ``quiet`` s, or none has since ``loaded_at`` (the loop's time when the page's load was
        seen); the page is asked about its timers and its DOM once the network is quiet, and
        again if a request began meanwhile."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        since = loaded_at if loaded_at is not None else loop.time()
        while (left := end - loop.time()) > 0:
            await self.network_quiet(since=since, quiet=quiet, limit=left)
            mark = self.last_change
            left = end - loop.time()
            if left <= 0:
                return None
            asked = [int(quiet * 1000), int(left * 1000), read]
            try:
                settled = await asyncio.wait_for(self.page.evaluate(_SETTLED, asked), left)
            except (PlaywrightError, TimeoutError):
                return None  # a navigation replaced the page's world, or the limit came
            if settled is None:  # no activity script in this page (it replaced its window)
                await self._dom_quiet(quiet=quiet, limit=end - loop.time())
                return None
            if self.last_change == mark and not self.in_flight:
                return settled if isinstance(settled, str) else None
            since = mark  # a request began or ended while the page was asked: wait for it
        return None

    async def _dom_quiet(self, *, quiet: float, limit: float) -> None:
        if limit <= 0:
            return
        dom = asyncio.ensure_future(
            self.page.evaluate(_DOM_QUIET, [int(quiet * 1000), int(limit * 1000)])
        )
        try:
            with suppress(PlaywrightError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(dom), limit)
        finally:
            # Not awaited: swallowing a cancellation here would defeat the request's timeout.
            dom.cancel()
            dom.add_done_callback(_consume)


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
