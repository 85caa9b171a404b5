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
* after ``load`` the page is read at once if it started nothing and changed nothing since,
  else given up to ``SCRAPESPY_BROWSER_SETTLE_SECONDS`` to settle (no request, fetch or short
  timer pending and no DOM change for a short quiet period: the request's ``settle_ms``, else
  ``SCRAPESPY_BROWSER_QUIET_SECONDS``; :mod:`service.browser.settle`) before the DOM is read;
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

How the browser is launched or reached, and what it may load, is :mod:`service.browser.launch`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import weakref
from contextlib import suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.exceptions import DownloadTimeoutError
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from service.browser.actions import after_actions, run_actions, wants_actions
from service.browser.egress import (
    BrowserEgressGuard,
    EgressRoute,
    Upstream,
    parse_test_public_hosts,
)
from service.browser.failures import (
    BrowserError,
    TooLarge,
    navigation_failure,
    refused_navigation,
)
from service.browser.launch import (
    HEAVY_RESOURCE_TYPES,
    IMAGE_TYPES,
    browser_process,
    chromium_launch_options,
    is_headless_shell,
    reap_browser,
    remote_browser_settings,
)
from service.browser.meter import DownloadMeter
from service.browser.read import read_rendered
from service.browser.renderers import MESSAGE as RENDERER_OVER_CAP
from service.browser.renderers import RendererCap
from service.browser.screenshot import (
    SCREENSHOT_RESERVE,
    ScreenshotLimits,
    add_screenshot,
    wants_screenshot,
)
from service.browser.settle import ACTIVITY_SCRIPT, PageWatch
from service.browser.slots import PageSlots
from service.browser.spares import Spare, Spares
from service.scrape import meta as scrape_meta
from service.scrape.meta import PLAYWRIGHT_CONTEXT
from service.scrape.metrics import watch_browser
from service.scrape.timings import StaticDownload, TimedConnectionPool

if TYPE_CHECKING:
    from playwright._impl._api_structures import SetCookieParam
    from playwright.async_api import Browser, CDPSession, Page
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

__all__ = ["BrowserDownloadHandler", "BrowserError"]

log = logging.getLogger(__name__)

READ_RESERVE = 0.5  # seconds of a request's time kept for content() after settling
# kept for answering a render that timed out (failure, release of the hold) by its deadline,
# on a loop that a page can keep busy (100,000 history.pushState calls answered 2.7 s late)
ANSWER_RESERVE = 0.25
# meta["scrapespy_device"] == "mobile": this phone of Playwright's device descriptors.
MOBILE_DEVICE = "Pixel 7"
# A finished render's context closes, and its spare is replaced, once no other page is
# navigating (a navigation that shared the browser with them took 55-63 ms instead of 27-31 ms,
# js c=1), unless a request waits for a page slot; NEXT_NAVIGATION is how long a request that
# follows at once takes to start navigating, QUIET_WAIT the longest a context is kept for it.
NEXT_NAVIGATION = 0.015
QUIET_WAIT = 0.25


class Navigations:
    """How many pages are navigating (from ``goto`` until it returns); ``idle`` when none is."""

    def __init__(self) -> None:
        self.active = 0
        self.idle = asyncio.Event()
        self.idle.set()

    def __enter__(self) -> None:
        self.active += 1
        self.idle.clear()

    def __exit__(self, *_: object) -> None:
        self.active -= 1
        if self.active == 0:
            self.idle.set()


class _Render:
    """What one request holds in the browser, so that all of it can be let go."""

    def __init__(self) -> None:
        self.browser: Browser | None = None
        self.spare: Spare | None = None
        self.opening: asyncio.Future[Spare] | None = None
        self.watch: PageWatch | None = None
        self.deadline: asyncio.Timeout | None = None
        self.stopped: BrowserError | None = None  # why the render was cut short
        self.kills = 0  # renderers the memory cap had killed when the render began

    def stop(self, error: BrowserError) -> None:
        """End the render now, with ``error``: its deadline is moved to the present."""
        if self.stopped is None:
            self.stopped = error
            if self.deadline is not None and not self.deadline.expired():
                self.deadline.reschedule(asyncio.get_running_loop().time())

    @property
    def route(self) -> EgressRoute | None:
        return self.spare.route if self.spare is not None else None

    async def close(self) -> None:
        if self.spare is None and self.opening is not None:
            # The context may still be on its way; wait for it so it can be closed too.
            try:
                self.spare = await asyncio.wait_for(asyncio.shield(self.opening), 5.0)
            except Exception:
                return
        if self.spare is not None:
            await self.spare.close()


class BrowserDownloadHandler(ScrapyPlaywrightDownloadHandler):
    lazy = False
    _shared: weakref.WeakKeyDictionary[Crawler, BrowserDownloadHandler] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        TimedConnectionPool.install(self)  # times the connections static downloads open
        settings = crawler.settings
        self.egress = BrowserEgressGuard(
            allow_private=settings.getbool("SCRAPESPY_ALLOW_PRIVATE_TARGETS"),
            test_public_hosts=parse_test_public_hosts(
                settings.getlist("SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS")
            ),
            stats=crawler.stats,
        )
        # what a page's requests may skip: the sub-resources that change nothing in the DOM read
        # (spares.Spare.intercept aborts them; service.browser.launch says which)
        self.skipped_resources: frozenset[str] | None = HEAVY_RESOURCE_TYPES
        if not settings.getbool("SCRAPESPY_BLOCK_HEAVY_RESOURCES"):
            self.skipped_resources = self.abort_request = None
        self._configure_browser(settings)
        self.settle_seconds = settings.getfloat("SCRAPESPY_BROWSER_SETTLE_SECONDS")
        self.quiet_seconds = settings.getfloat("SCRAPESPY_BROWSER_QUIET_SECONDS")
        self.default_timeout = settings.getfloat("DOWNLOAD_TIMEOUT", 20.0)
        self.max_resource_bytes = settings.getint("DOWNLOAD_MAXSIZE")
        self.max_page_bytes = settings.getint("SCRAPESPY_BROWSER_MAX_PAGE_BYTES")
        self.default_user_agent = (settings.get("USER_AGENT") or "").encode()
        self.screenshot_limits = ScreenshotLimits.from_settings(settings)
        self.pages = PageSlots(settings.getint("SCRAPESPY_MAX_PAGES"))
        self._letting_go: set[asyncio.Future[None]] = set()  # contexts closing after a render
        self.navigations = Navigations()
        self._watches: dict[Page, PageWatch] = {}  # of the pages being rendered
        self._routes: dict[Page, EgressRoute] = {}  # their egress routes
        self.max_redirects = settings.getint("REDIRECT_MAX_TIMES")  # as static follows them
        self.spares = Spares(
            self._spares(settings.getint("SCRAPESPY_BROWSER_SPARES")), self._new_spare
        )
        watch_browser(self)  # its open contexts and pages, read when /metrics is scraped
        self._launch_options = dict(self.config.launch_options)
        self._starting: asyncio.Future[None] | None = None
        self._launching: asyncio.Future[None] | None = None
        self._closing: asyncio.Future[None] | None = None
        self._processes: dict[Browser, int | None] = {}  # of the browsers this handler launched
        self._reaping: set[asyncio.Future[None]] = set()
        # each renderer's memory (service.browser.renderers), read while pages render
        self.renderers = RendererCap(
            settings.getint("SCRAPESPY_BROWSER_MAX_RENDERER_MB"),
            renderer_pids=self._renderer_pids,
            busy=lambda: bool(self._watches),
        )
        self._processes_session: tuple[Browser, CDPSession] | None = None

    def _configure_browser(self, settings: BaseSettings) -> None:
        """Where the browser comes from, by the ``SCRAPESPY_*`` settings: the remote browser at
        ``SCRAPESPY_BROWSER_URL``, else the Chromium at ``SCRAPESPY_CHROMIUM_PATH``, its heap
        bounded by ``SCRAPESPY_BROWSER_MAX_HEAP_MB``. ``PLAYWRIGHT_CDP_URL``,
        ``PLAYWRIGHT_CONNECT_URL`` or ``PLAYWRIGHT_LAUNCH_OPTIONS``, when given, win."""
        config = self.config
        if not (config.cdp_url or config.connect_url):
            remote = remote_browser_settings(settings.get("SCRAPESPY_BROWSER_URL") or "")
            config.cdp_url = remote.get("PLAYWRIGHT_CDP_URL")
            config.connect_url = remote.get("PLAYWRIGHT_CONNECT_URL")
        if not (config.cdp_url or config.connect_url) and not config.launch_options:
            config.launch_options = chromium_launch_options(
                settings.get("SCRAPESPY_CHROMIUM_PATH"),
                as_root=os.geteuid() == 0,
                max_heap_mb=settings.getint("SCRAPESPY_BROWSER_MAX_HEAP_MB") or None,
            )

    def _spares(self, asked: int) -> int:
        """How many spare contexts to keep: ``asked``, or by the browser when it is -1.

        A spare hides the making of a context from the request only while a core is free to
        make it. The full Chromium spends some 160 ms of CPU on a context and its page (the
        headless shell 22 ms): made in the background, on a busy machine, that competed with
        the page being rendered (js c=1 p50 1.31x plain Playwright's with two spares, 1.08x
        with none, in the same run; c=4 unchanged within the noise)."""
        if asked >= 0:
            return asked
        config = self.config
        local = not (config.cdp_url or config.connect_url)
        path = str(config.launch_options.get("executable_path") or "")
        return 0 if local and path and not is_headless_shell(path) else 2

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BrowserDownloadHandler:
        # Scrapy builds one handler per scheme; http and https must share one browser.
        handler = cls._shared.get(crawler)
        if handler is None:
            handler = cls._shared[crawler] = cls(crawler)
        return handler

    async def _maybe_launch_in_thread(self) -> None:
        """Nothing at engine start: a service that never renders never pays for a browser."""

    # -----------------------------------------------------------------------------------------
    # Lifecycle

    async def _start(self) -> None:
        await self.egress.start()
        self.config.launch_options = {
            **self._launch_options,
            "args": [
                *self._launch_options.get("args", ()),
                f"--proxy-server={self.egress.proxy_server}",
                "--proxy-bypass-list=<-loopback>",
            ],
        }
        self.browser_provider = self.browser_provider_cls(self.config)
        await self.browser_provider.start()

    async def _launch_browser(self) -> None:
        try:
            await self._maybe_launch_browser()
        except Exception as error:
            log.error("could not start the browser for the js engine: %s", error)
            raise BrowserError("the js engine's browser could not be started") from None
        self.stats.inc_value("scrapespy/browser/launched")
        if not (self.config.cdp_url or self.config.connect_url):
            self._processes[self.browser] = await browser_process(self.browser)
            self.renderers.start()

    async def _ready(self) -> None:
        """Start Playwright and the guard once, and (re)launch the browser when it is gone.

        Both run shielded: a request that times out meanwhile must not leave half a browser.
        """
        if self._closing is not None:
            raise BrowserError("the service is shutting down")
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        try:
            await asyncio.shield(self._starting)
        except Exception:
            if self._starting.done():
                self._starting = None
            raise
        if not hasattr(self, "browser"):
            if self._launching is None or self._launching.done():
                self._launching = asyncio.ensure_future(self._launch_browser())
            await asyncio.shield(self._launching)

    async def _renderer_pids(self) -> list[int]:
        """The renderer processes of the browser, if the service launched it (its CDP)."""
        browser = getattr(self, "browser", None)
        if browser is None or self._processes.get(browser) is None:
            return []
        if self._processes_session is None or self._processes_session[0] is not browser:
            self._processes_session = (browser, await browser.new_browser_cdp_session())
        info = await self._processes_session[1].send("SystemInfo.getProcessInfo")
        processes = info.get("processInfo", ())
        return [int(one["id"]) for one in processes if one.get("type") == "renderer"]

    async def _browser_disconnected_callback(self, browser: Browser | None = None) -> None:
        # Playwright passes the browser that went away; it may no longer be the current one
        # (a request noticed first and launched another), which must then be kept.
        if browser is not None and browser in self._processes:
            reaping = asyncio.ensure_future(reap_browser(browser, self._processes.pop(browser)))
            self._reaping.add(reaping)
            reaping.add_done_callback(self._reaping.discard)
        current = getattr(self, "browser", None)
        if current is None or (browser is not None and browser is not current):
            return
        del self.browser
        if self._closing is None:
            log.warning("the browser went away; the next js request launches it again")
            self.stats.inc_value("scrapespy/browser/disconnected")

    async def close(self) -> None:
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close_all())
        await asyncio.shield(self._closing)

    async def _close_all(self) -> None:
        try:
            if self._letting_go:  # contexts of finished renders, still closing
                await asyncio.wait(list(self._letting_go), timeout=10)
            await self.spares.close()
            await super().close()
            if self._reaping:
                await asyncio.wait(list(self._reaping), timeout=10)
        finally:
            await self.renderers.stop()
            await self.egress.stop()

    # -----------------------------------------------------------------------------------------
    # One request

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
            render = _Render()
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
                if attempt == 1 and browser is not None and await _went_away(browser, error):
                    # The browser died under this request, not the target: once more, on a
                    # new browser, within what is left of the timeout.
                    await self._browser_disconnected_callback(browser)
                    continue
                navigation = render.watch.last_navigation if render.watch is not None else None
                location = render.spare.meter.last_location if render.spare is not None else None
                raise navigation_failure(error, render.route, navigation, location) from None
            finally:
                if render.spare is not None:
                    self._watches.pop(render.spare.page, None)
                    self._routes.pop(render.spare.page, None)
                # The page's DOM has been read: the caller need not wait for its context to
                # close (20-40 ms). Its page slot is released only once it has closed, so the
                # open contexts stay bounded by SCRAPESPY_MAX_PAGES.
                letting_go = asyncio.ensure_future(self._let_go(render, slot))
                self._letting_go.add(letting_go)
                letting_go.add_done_callback(self._letting_go.discard)
        raise AssertionError("unreachable")

    async def _let_go(self, render: _Render, slot: bool) -> None:
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
            if slot:
                self.pages.release()
            if render.browser is not None:
                # After the render, not during it: making a spare takes CPU it would need.
                self.spares.refill(render.browser)

    async def _page_for(self, request: Request, render: _Render) -> Page:
        """A fresh context and page (a spare if one is ready), routed through the guard."""
        context_kwargs = scrape_meta.context_kwargs(request)
        context_kwargs.pop("proxy", None)  # the route's upstream instead
        await self._ready()
        if scrape_meta.is_mobile(request):  # spares are desktop contexts
            context_kwargs.update(self._mobile_context())
        render.browser = browser = self.browser
        spare = None if context_kwargs else self.spares.take(browser)
        if spare is None:
            render.opening = asyncio.ensure_future(self._new_spare(browser, context_kwargs))
            spare = await asyncio.shield(render.opening)
        else:
            self.stats.inc_value("scrapespy/browser/spare_used")
        render.spare = spare
        # a renderer the memory cap killed: its page crashes, and the render ends at once
        spare.page.on("crash", lambda _page: self._crashed(render))
        spare.route.upstream = _upstream_of(request)
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
        return spare.page

    def _crashed(self, render: _Render) -> None:
        if self.renderers.kills > render.kills:
            self.stats.inc_value("scrapespy/browser/renderer_over_cap")
            render.stop(TooLarge(RENDERER_OVER_CAP))

    def _killed_under(self, render: _Render, error: PlaywrightError) -> bool:
        """Whether ``error`` is the crash of a page whose renderer the memory cap killed."""
        return self.renderers.kills > render.kills and "crash" in (error.message or "").lower()

    def _too_large(self, render: _Render, spare: Spare) -> None:
        self.stats.inc_value("scrapespy/browser/too_large")
        spare.route.close()  # no more bytes for the renderer
        render.stop(TooLarge(spare.meter.message()))

    def route_of(self, page: Page) -> EgressRoute | None:
        """The egress route of a page being rendered (service.browser.read fetches a
        download's bytes through it)."""
        return self._routes.get(page)

    def _mobile_context(self) -> dict[str, Any]:
        device = dict(self.browser_provider.playwright.devices[MOBILE_DEVICE])
        device.pop("default_browser_type", None)
        return device

    async def _new_spare(
        self, browser: Browser, context_kwargs: dict[str, Any] | None = None
    ) -> Spare:
        route = await self.egress.open_route()
        context = None
        try:
            context = await browser.new_context(
                **(context_kwargs or {}),
                # A static download does not check certificates either.
                ignore_https_errors=True,
                proxy={"server": route.url},
                accept_downloads=False,
            )
            if self.config.navigation_timeout_ms is not None:
                context.set_default_navigation_timeout(self.config.navigation_timeout_ms)
            await context.add_init_script(ACTIVITY_SCRIPT)  # what PageWatch.settle asks the page
            page = await context.new_page()
            # Popups and new tabs are closed as they open (their requests still go through
            # the route). Dialogs need nothing: without a listener Playwright dismisses them.
            context.on("page", _close_popup)
            meter = DownloadMeter(self.max_resource_bytes, self.max_page_bytes)
            await meter.attach(context, page)
            spare = Spare(browser, route, context, page, meter)
            await page.route("**", spare.intercept)
        except BaseException:
            if context is not None:
                with suppress(Exception):
                    await asyncio.wait_for(context.close(), 5.0)
            route.close()
            raise
        return spare

    def _prepare(self, request: Request, render: _Render, spare: Spare) -> None:
        render.watch = self._watches[spare.page] = PageWatch(spare.page)
        self._routes[spare.page] = spare.route
        name = request.meta.setdefault(PLAYWRIGHT_CONTEXT, f"request-{id(request)}")
        if (
            scrape_meta.is_mobile(request)
            and request.headers.get("User-Agent") == self.default_user_agent
        ):
            # Scrapy's own User-Agent, not the caller's: the phone's goes out instead.
            del request.headers["User-Agent"]
        if self.skipped_resources is not None:
            # a screenshot shows the images, and steps may need the layout they give
            seen = wants_screenshot(request.meta) or wants_actions(request.meta)
            spare.skipped = self.skipped_resources | (frozenset() if seen else IMAGE_TYPES)
        user_agent = request.headers.get("User-Agent")
        spare.user_agent = user_agent.decode("latin-1") if user_agent else None
        spare.handler = self._make_request_handler(
            context_name=name,
            method=request.method,
            url=request.url,
            headers=request.headers,
            body=request.body,
            encoding=request.encoding,
            spider=self._spider,
            initial_request_done=asyncio.Event(),
        )
        self.stats.inc_value("playwright/page_count")

    @property
    def _spider(self) -> Any:
        return self._crawler.spider

    async def _download_request_with_page(
        self, request: Request, page: Page, spider: Any
    ) -> Response:
        response = await read_rendered(self, request, page, spider, self.navigations)
        if wants_screenshot(request.meta):
            await add_screenshot(request, page, self.screenshot_limits, self._time_left(request))
            self.stats.inc_value("scrapespy/browser/screenshots")
        order = scrape_meta.order_if_any(request)
        if order is not None and order.session is not None:
            # what the page left (cookies, localStorage), for the session's next call
            with suppress(PlaywrightError):  # a page the browser lost: the session keeps its own
                order.session.keep_browser(dict(await page.context.storage_state()))
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
        await run_actions(
            page,
            request.meta,
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


def _close_popup(page: Page) -> None:
    closing = asyncio.ensure_future(page.close())
    closing.add_done_callback(lambda done: done.cancelled() or done.exception())


def browser_cookies(cookies: list[dict[str, Any]], url: str) -> list[SetCookieParam]:
    """The caller's cookies as Playwright sets them: without a domain, for the URL's host
    (host-only); without a path, for ``/``."""
    host = urlsplit(url).hostname or ""
    return [
        {
            "name": cookie["name"],
            "value": cookie["value"],
            "domain": cookie.get("domain") or host,
            "path": cookie.get("path") or "/",
        }
        for cookie in cookies
    ]


async def _went_away(browser: Browser, error: PlaywrightError) -> bool:
    """Whether ``error`` came from a browser that has died (Playwright may hear of it late)."""
    if "closed" not in (error.message or str(error)):
        return not browser.is_connected()
    for _ in range(20):
        if not browser.is_connected():
            return True
        await asyncio.sleep(0.05)
    return False


def _upstream_of(request: Request) -> Upstream | None:
    """The proxy a proxy tier picked: Playwright's form in the context kwargs, or Scrapy's."""
    proxy = scrape_meta.context_kwargs(request).get("proxy")
    if proxy:
        return Upstream.from_playwright(proxy)
    if request.meta.get("proxy"):
        return Upstream.from_url(str(request.meta["proxy"]))
    return None
