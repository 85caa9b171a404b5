"""The ``js`` engine's download handler: one Chromium for the service, one context per request.

scrapy-playwright's handler names contexts and keeps them until someone closes them, launches one
browser per handler instance (Scrapy builds one per scheme) and is bounded by nothing but the
navigation timeout. This subclass keeps its navigation, header and abort code, reads the page in
fewer round trips (:mod:`service.browser.read`) and changes the lifecycle around it:

* one handler (and so one browser) for ``http`` and ``https``, started on the first ``js``
  request; a crashed browser is launched again by the next request;
* every request gets a fresh browser context, with its own route through the browser egress
  guard (:mod:`service.browser.egress`), closed when the request ends, whatever the outcome;
  ``SCRAPESPY_BROWSER_SPARES`` of them are made ahead of demand (:mod:`service.browser.spares`),
  never reused;
* the request's deadline (``meta["scrapespy_deadline"]``) bounds everything: waiting for one of
  the ``SCRAPESPY_MAX_PAGES`` page slots, context creation, navigation, settling, ``content()``;
* after ``load`` the page is read once it has no request in flight and its DOM has not changed
  since (at once without scripts, after a short grace with them), else given up to
  ``SCRAPESPY_BROWSER_SETTLE_SECONDS`` to settle (no request in flight and no DOM change for a
  short quiet period: the request's ``settle_ms``, else ``SCRAPESPY_BROWSER_QUIET_SECONDS``;
  :mod:`service.browser.settle`) before the DOM is read, all of it asked in the page's isolated
  world (:mod:`service.browser.world`);
* then a request's ``wait_for`` and action steps run on the page
  (:mod:`service.browser.actions`), within the same deadline, less the time kept for reading;
* a request with ``meta["scrapespy_screenshot"]`` gets a PNG of the page once it has been read
  (:mod:`service.browser.screenshot`), within the same deadline;
* ``meta["scrapespy_device"] == "mobile"`` renders in a fresh phone context (spares are desktop
  ones); ``meta["scrapespy_cookies"]`` are added to the request's context before navigation;
* a request whose order has a session (service.scrape.sessions) starts from the session's
  storage (``storage_state`` in its context's options) and leaves the page's storage in it;
* in every context dialogs are dismissed, popups closed and downloads refused;
* failures are raised as the exceptions a ``static`` download raises (refused, unresolvable,
  timed out, egress blocked), so results and billing read the same for both engines.

Requests without ``meta["playwright"]`` go straight to Scrapy's HTTP/1.1 handler. Switch it on::

    DOWNLOAD_HANDLERS = {
        "http": "service.browser.handler.BrowserDownloadHandler",
        "https": "service.browser.handler.BrowserDownloadHandler",
    }

How the browser is launched or reached, and what it may load, is :mod:`service.browser.launch`;
its start, relaunch and close, and the contexts made on it, :mod:`service.browser.lifecycle`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from patchright.async_api import Error as PlaywrightError
from patchright.async_api import TimeoutError as PlaywrightTimeoutError
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.exceptions import DownloadTimeoutError

from service.browser.actions import after_actions, run_actions, wants_actions
from service.browser.egress import EgressRoute
from service.browser.failures import (
    BrowserError,
    BrowserUnavailable,
    TooLarge,
    navigation_failure,
    refused_navigation,
)
from service.browser.identity import Identity
from service.browser.launch import explicit_headers
from service.browser.lifecycle import BrowserLifecycle
from service.browser.read import read_rendered
from service.browser.render import Navigations, Render, browser_cookies, upstream_of, went_away
from service.browser.renderers import MESSAGE as RENDERER_OVER_CAP
from service.browser.screenshot import (
    SCREENSHOT_RESERVE,
    ScreenshotLimits,
    add_screenshot,
    wants_screenshot,
)
from service.browser.settle import PageWatch
from service.browser.slots import PageSlots
from service.browser.spares import Spare, Spares
from service.browser.world import PageWorld
from service.scrape import meta as scrape_meta
from service.scrape.meta import PLAYWRIGHT_CONTEXT
from service.scrape.metrics import watch_browser
from service.scrape.timings import StaticDownload, TimedConnectionPool

if TYPE_CHECKING:
    from patchright.async_api import Page
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["BrowserDownloadHandler", "BrowserError"]

log = logging.getLogger(__name__)

READ_RESERVE = 0.5  # seconds of a request's time kept for content() after settling
# kept for answering a render that timed out (failure, release of the hold) by its deadline,
# on a loop that a page can keep busy (100,000 history.pushState calls answered 2.7 s late)
ANSWER_RESERVE = 0.25
# A finished render's context closes, and its spare is replaced, once no other page is
# navigating (a navigation that shared the browser with them took 55-63 ms instead of 27-31 ms,
# js c=1), unless a request waits for a page slot; NEXT_NAVIGATION is how long a request that
# follows at once takes to start navigating, QUIET_WAIT the longest a context is kept for it.
NEXT_NAVIGATION = 0.015
QUIET_WAIT = 0.25
GONE = "the browser rendering the page went away; retry later"


class BrowserDownloadHandler(BrowserLifecycle):
    lazy = False
    _shared: weakref.WeakKeyDictionary[Crawler, BrowserDownloadHandler] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        TimedConnectionPool.install(self)  # times the connections static downloads open
        settings = crawler.settings
        if self.skipped_resources is None:  # the lifecycle's: nothing is skipped
            self.abort_request = None
        self.settle_seconds = settings.getfloat("SCRAPESPY_BROWSER_SETTLE_SECONDS")
        self.quiet_seconds = settings.getfloat("SCRAPESPY_BROWSER_QUIET_SECONDS")
        self.default_timeout = settings.getfloat("DOWNLOAD_TIMEOUT", 20.0)
        self.scrapy_agent = (settings.get("USER_AGENT") or "").encode()  # not a caller's
        self.screenshot_limits = ScreenshotLimits.from_settings(settings)
        self.pages = PageSlots(settings.getint("SCRAPESPY_MAX_PAGES"))
        self.navigations = Navigations()
        self._routes: dict[Page, EgressRoute] = {}  # the egress routes of the pages rendered
        self._identities: dict[Page, Identity] = {}  # and the identities they present
        self.max_redirects = settings.getint("REDIRECT_MAX_TIMES")  # as static follows them
        self.spares = Spares(
            self._spares(settings.getint("SCRAPESPY_BROWSER_SPARES")), self._new_spare
        )
        watch_browser(self)  # its open contexts and pages, read when /metrics is scraped

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BrowserDownloadHandler:
        # Scrapy builds one handler per scheme; http and https must share one browser.
        handler = cls._shared.get(crawler)
        if handler is None:
            handler = cls._shared[crawler] = cls(crawler)
        return handler

    async def download_request(self, request: Request) -> Response:
        if not scrape_meta.renders(request):
            with StaticDownload(request):  # timings: queue, connect, first byte, download
                return await HTTP11DownloadHandler.download_request(self, request)
        return await self._render(request)

    def _time_left(self, request: Request) -> float:
        deadline = scrape_meta.deadline(request)
        if deadline is not None:
            return float(deadline) - time.monotonic()
        return float(request.meta.get("download_timeout") or self.default_timeout)

    async def _render(self, request: Request) -> Response:
        for attempt in (1, 2):
            render = Render()
            render.kills = self.renderers.kills
            slot = False
            try:
                left = self._time_left(request) - ANSWER_RESERVE
                async with asyncio.timeout(max(left, 0.0)) as deadline:
                    render.deadline = deadline
                    order = scrape_meta.order_if_any(request)
                    await self.pages.acquire(background=getattr(order, "background", False))
                    slot = True
                    page = await self._page_for(request, render)
                    response = await self._download_request_with_page(request, page, self._spider)
                refused = refused_navigation(response, render.route)
                if refused is not None:
                    raise refused
                self.stats.inc_value("scrapespy/browser/rendered")
                return response
            except TimeoutError:
                if render.stopped is not None:
                    raise render.stopped from None
                self.stats.inc_value("scrapespy/browser/timed_out")
                raise DownloadTimeoutError("the page did not render within the timeout") from None
            except PlaywrightTimeoutError:
                if render.stopped is not None:
                    raise render.stopped from None
                self.stats.inc_value("scrapespy/browser/timed_out")
                raise DownloadTimeoutError("the page did not load within the timeout") from None
            except PlaywrightError as error:
                if render.stopped is None and self._killed_under(render, error):
                    render.stop(TooLarge(RENDERER_OVER_CAP))
                if render.stopped is not None:
                    raise render.stopped from None
                browser = render.browser
                if attempt == 1 and browser is not None and await went_away(browser, error):
                    # The browser died under this request, not the target: once more, on a
                    # new browser, within what is left of the timeout.
                    await self._browser_disconnected_callback(browser)
                    continue
                if self.pool and browser is not None and await went_away(browser, error):
                    # its browser server went away too (service.browser.pool)
                    raise BrowserUnavailable(GONE) from None
                navigation = render.watch.last_navigation if render.watch is not None else None
                location = render.spare.meter.last_location if render.spare is not None else None
                raise navigation_failure(error, render.route, navigation, location) from None
            finally:
                if render.spare is not None:
                    self._watches.pop(render.spare.page, None)
                    self._routes.pop(render.spare.page, None)
                    self._identities.pop(render.spare.page, None)
                # The page's DOM has been read: the caller need not wait for its context to
                # close (20-40 ms). Its page slot is released only once it has closed, so the
                # open contexts stay bounded by SCRAPESPY_MAX_PAGES.
                letting_go = asyncio.ensure_future(self._let_go(render, slot))
                self._letting_go.add(letting_go)
                letting_go.add_done_callback(self._letting_go.discard)
        raise AssertionError("unreachable")

    async def _let_go(self, render: Render, slot: bool) -> None:
        # Nobody waits for this slot: the browser's time is better spent on a navigation than
        # on a close. A render cut short may still be growing its renderer: closed at once.
        if render.stopped is None and not self.pages.locked():
            await asyncio.sleep(NEXT_NAVIGATION)
            with suppress(TimeoutError):
                await asyncio.wait_for(self.navigations.idle.wait(), QUIET_WAIT)
        try:
            await render.close()
        except Exception as error:  # a browser that went away took the context with it
            log.debug("closing a browser context failed: %s", error)
        finally:
            self._release(render)  # the pool's count of its endpoint's contexts
            if slot:
                self.pages.release()
            if render.browser is not None:
                # After the render, not during it: making a spare takes CPU it would need.
                self.spares.refill(render.browser)

    async def _page_for(self, request: Request, render: Render) -> Page:
        """A fresh context and page (a spare if one is ready), routed through the guard."""
        context_kwargs = scrape_meta.context_kwargs(request)
        context_kwargs.pop("proxy", None)  # the route's upstream instead
        render.browser = browser = await self._browser_for(render)
        ask = scrape_meta.identity_ask(request)
        identity = self.identity_for(browser, ask, mobile=scrape_meta.is_mobile(request))
        # spares are made with the default identity, and no options of a request's
        fresh = context_kwargs or identity != self.identity_for(browser)
        spare = None if fresh else self.spares.take(browser)
        if spare is None:
            render.opening = asyncio.ensure_future(
                self._new_spare(browser, context_kwargs, identity)
            )
            spare = await asyncio.shield(render.opening)
        else:
            self.stats.inc_value("scrapespy/browser/spare_used")
        render.spare = spare
        # a renderer the memory cap killed: its page crashes, and the render ends at once
        spare.page.on("crash", lambda _page: self._crashed(render))
        spare.route.upstream = upstream_of(request)
        spare.meter.over = lambda: self._too_large(render, spare)
        cookies = scrape_meta.cookies(request)
        if cookies:
            try:
                await spare.context.add_cookies(browser_cookies(cookies, request.url))
            except PlaywrightError as error:
                log.info("the browser refused a request's cookies: %s", error.message)
                raise BrowserError(
                    "the browser refused the cookies (a name, value, domain or path it cannot set)"
                ) from None
        self._prepare(request, render, spare)
        await spare.block()
        if spare.handler is not None:
            await spare.page.route("**", spare.intercept)
        return spare.page

    def _crashed(self, render: Render) -> None:
        if self.renderers.kills > render.kills:
            self.stats.inc_value("scrapespy/browser/renderer_over_cap")
            render.stop(TooLarge(RENDERER_OVER_CAP))

    def _killed_under(self, render: Render, error: PlaywrightError) -> bool:
        """Whether ``error`` is the crash of a page whose renderer the memory cap killed."""
        return self.renderers.kills > render.kills and "crash" in (error.message or "").lower()

    def _too_large(self, render: Render, spare: Spare) -> None:
        self.stats.inc_value("scrapespy/browser/too_large")
        spare.route.close()  # no more bytes for the renderer
        render.stop(TooLarge(spare.meter.message()))

    def route_of(self, page: Page) -> EgressRoute | None:
        """The egress route of a page being rendered (service.browser.read fetches a
        download's bytes through it)."""
        return self._routes.get(page)

    def world_of(self, page: Page) -> PageWorld | None:
        """The isolated world of a page being rendered, where the service reads its HTML."""
        watch = self._watches.get(page)
        return watch.world if watch is not None else None

    def _prepare(self, request: Request, render: Render, spare: Spare) -> None:
        render.watch = self._watches[spare.page] = PageWatch(spare.page, spare.world)
        self._routes[spare.page] = spare.route
        self._identities[spare.page] = spare.identity
        name = request.meta.setdefault(PLAYWRIGHT_CONTEXT, f"request-{id(request)}")
        request.meta[scrape_meta.PRESENTED] = spare.identity.label
        self.stats.inc_value("playwright/page_count")
        if self.skipped_resources is not None:
            seen = wants_screenshot(request.meta) or wants_actions(request.meta)
            spare.skipped = self.skipped_for(images_seen=seen)
        # added to the browser's own headers on the page's navigations
        explicit = explicit_headers(request, self.scrapy_agent)
        if not explicit and request.method == "GET" and not request.body:
            return  # a plain navigation: the browser's own, unrouted (Spare)
        spare.handler = self._make_request_handler(
            context_name=name,
            method=request.method,
            url=request.url,
            headers=explicit,
            body=request.body,
            encoding=request.encoding,
            spider=self._spider,
            initial_request_done=asyncio.Event(),
        )

    @property
    def _spider(self) -> Any:
        return self._crawler.spider

    async def _download_request_with_page(
        self, request: Request, page: Page, spider: Any
    ) -> Response:
        response = await read_rendered(self, request, page, spider, self.navigations)
        if wants_screenshot(request.meta):
            await add_screenshot(
                request, page, self.screenshot_limits, self._time_left(request), self.world_of(page)
            )
            self.stats.inc_value("scrapespy/browser/screenshots")
        order = scrape_meta.order_if_any(request)
        if order is not None and order.session is not None:
            # what the page left (cookies, localStorage), for the session's next call, and the
            # identity it presented, for the session's next calls to present again
            with suppress(PlaywrightError):  # a page the browser lost: the session keeps its own
                state = dict(await page.context.storage_state())
                identity = self._identities.get(page)
                if identity is not None:
                    state["identity"] = identity.stored()
                order.session.keep_browser(state)
        return response

    async def _apply_page_methods(self, page: Page, request: Request, spider: Any) -> None:
        await super()._apply_page_methods(page, request, spider)
        # Settle within what is left, keeping some for reading the DOM (and the screenshot).
        reserve = READ_RESERVE + (SCREENSHOT_RESERVE if wants_screenshot(request.meta) else 0.0)
        asked = scrape_meta.settle_ms(request)
        quiet = self.quiet_seconds if asked is None else asked / 1000
        # 0: read right after load; a quiet period longer than the operator's limit gets its time
        limit = max(self.settle_seconds, quiet) if quiet > 0 else 0.0
        budget = min(limit, self._time_left(request) - reserve)
        watch = self._watches.get(page)
        steps = wants_actions(request.meta)
        if watch is not None and budget > 0:
            html = await watch.settle(
                quiet=quiet, limit=budget, loaded_at=scrape_meta.loaded_at(request), read=not steps
            )
            if html is not None:
                request.meta[scrape_meta.SETTLED_HTML] = html
        if not steps:
            return
        started = asyncio.get_running_loop().time()
        world = watch.world if watch is not None else await PageWorld.open(page)
        await run_actions(
            page,
            request.meta,
            world=world,
            budget=lambda: self._time_left(request) - reserve,
            screenshot_limits=self.screenshot_limits,
        )
        if watch is not None:
            await after_actions(
                page,
                watch,
                since=started,
                quiet=quiet,
                limit=min(self.settle_seconds, self._time_left(request) - reserve),
            )
