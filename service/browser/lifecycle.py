"""The js engine's one browser over its life: where it comes from (a remote browser or the local
Chromium, :mod:`service.browser.launch`), started on the first ``js`` request, launched again by
the next request when it crashed, its renderers' memory watched, and closed once; and the fresh
contexts made on it, each routed through the browser egress guard (:meth:`_new_spare`).

With ``SCRAPESPY_BROWSER_ENDPOINTS`` there is no browser of its own: each render takes one of
the pool's browser servers (:mod:`service.browser.pool`, :meth:`_browser_for`), its contexts
routed through the same guard, which then listens on ``SCRAPESPY_BROWSER_EGRESS_HOST``.

:class:`service.browser.handler.BrowserDownloadHandler` renders each request on it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from service.browser.driver import PatchrightProvider
from service.browser.egress import BrowserEgressGuard, parse_test_public_hosts
from service.browser.failures import BrowserError
from service.browser.identity import HONEST, Identity, identity_for
from service.browser.identity import apply as apply_identity
from service.browser.launch import (
    HEAVY_RESOURCE_TYPES,
    IMAGE_TYPES,
    NATIVE_LANGUAGES,
    browser_process,
    chromium_launch_options,
    is_headless_shell,
    reap_browser,
    remote_browser_settings,
)
from service.browser.meter import DownloadMeter
from service.browser.pool import BrowserPool
from service.browser.render import Render, close_popup
from service.browser.renderers import RendererCap
from service.browser.settle import PageWatch
from service.browser.spares import Spare, Spares
from service.browser.world import PageWorld

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from patchright.async_api import Browser, CDPSession, Page
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

log = logging.getLogger(__name__)


class BrowserLifecycle(ScrapyPlaywrightDownloadHandler):
    spares: Spares  # made ahead of demand by the handler, closed with the browser

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        # patchright drives the browser, whatever PLAYWRIGHT_BROWSER_PROVIDER says: the engine
        # catches its errors (service.browser.driver)
        self.browser_provider_cls = PatchrightProvider
        settings = crawler.settings
        self.egress = BrowserEgressGuard(
            allow_private=settings.getbool("SCRAPESPY_ALLOW_PRIVATE_TARGETS"),
            test_public_hosts=parse_test_public_hosts(
                settings.getlist("SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS")
            ),
            host=settings.get("SCRAPESPY_BROWSER_EGRESS_HOST") or "127.0.0.1",
            stats=crawler.stats,
            # browser servers reach the guard over their network: each context's route then
            # asks for credentials of its own, so nothing else on that network can use it
            authenticate=bool(settings.getlist("SCRAPESPY_BROWSER_ENDPOINTS")),
        )
        # SCRAPESPY_BROWSER_ENDPOINTS: the browser servers renders are spread over (empty: none,
        # the browser is launched or reached as without a pool)
        self.pool = BrowserPool(
            settings.getlist("SCRAPESPY_BROWSER_ENDPOINTS"),
            token=settings.get("SCRAPESPY_BROWSER_ENDPOINT_TOKEN") or "",
            max_retry=settings.getfloat("SCRAPESPY_BROWSER_ENDPOINT_RETRY_SECONDS"),
            stats=crawler.stats,
        )
        self._configure_browser(settings)
        # what a page's requests may skip: the sub-resources that change nothing in the DOM read
        # (Spare.pause_skippable; service.browser.launch says which)
        self.skipped_resources: frozenset[str] | None = None
        if settings.getbool("SCRAPESPY_BLOCK_HEAVY_RESOURCES"):
            self.skipped_resources = HEAVY_RESOURCE_TYPES
        self.max_resource_bytes = settings.getint("DOWNLOAD_MAXSIZE")
        self.max_page_bytes = settings.getint("SCRAPESPY_BROWSER_MAX_PAGE_BYTES")
        self._launch_options = dict(self.config.launch_options)
        self._starting: asyncio.Future[None] | None = None
        self._launching: asyncio.Future[None] | None = None
        self._closing: asyncio.Future[None] | None = None
        self._processes: dict[Browser, int | None] = {}  # of the browsers this handler launched
        self._reaping: set[asyncio.Future[None]] = set()
        self._letting_go: set[asyncio.Future[None]] = set()  # contexts closing after a render
        self._watches: dict[Page, PageWatch] = {}  # of the pages being rendered
        # each renderer's memory (service.browser.renderers), read while pages render
        self.renderers = RendererCap(
            settings.getint("SCRAPESPY_BROWSER_MAX_RENDERER_MB"),
            renderer_pids=self._renderer_pids,
            busy=lambda: bool(self._watches),
            browser_pid=self._browser_pid,
        )
        self._processes_session: tuple[Browser, CDPSession] | None = None
        # SCRAPESPY_BROWSER_IDENTITY=honest: the user agent names the service (USER_AGENT)
        honest = settings.get("SCRAPESPY_BROWSER_IDENTITY") == HONEST
        self.honest_agent = settings.get("USER_AGENT") if honest else None
        path = str(self.config.launch_options.get("executable_path") or "")
        local = not (self.config.cdp_url or self.config.connect_url)
        self._shell = local and is_headless_shell(path)  # (service.browser.identity.apply)
        # the languages the launched full Chromium has of its own (launch.NATIVE_LANGUAGES)
        native = local and not self._shell and NATIVE_LANGUAGES in self._launch_args()
        self._native_languages = ("en-US", "en") if native else ()

    def skipped_for(self, *, images_seen: bool) -> frozenset[str]:
        """The resource types a page skips: the heavy ones, and images unless they are seen
        (a screenshot shows them, and steps may need the layout they give)."""
        heavy = self.skipped_resources or frozenset()
        return heavy if images_seen else heavy | IMAGE_TYPES

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

    def _launch_args(self) -> list[str]:
        return list(self.config.launch_options.get("args") or ())

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

    async def _maybe_launch_in_thread(self) -> None:
        """Nothing at engine start: a service that never renders never pays for a browser."""

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
        if self.pool:
            await self.pool.start(self.browser_provider.browser_type)

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
        if self.pool:
            return
        if not hasattr(self, "browser"):
            if self._launching is None or self._launching.done():
                self._launching = asyncio.ensure_future(self._launch_browser())
            await asyncio.shield(self._launching)

    async def _browser_for(self, render: Render) -> Browser:
        """The browser a render opens its context on: the one browser, (re)launched if need
        be, or the pool's endpoint with the fewest contexts open (counted until the render
        lets go of its context: :meth:`_release`)."""
        await self._ready()
        if not self.pool:
            return self.browser
        render.endpoint, browser = self.pool.pick()
        return browser

    def _release(self, render: Render) -> None:
        if render.endpoint is not None:
            self.pool.release(render.endpoint, render.browser)
            render.endpoint = None

    @property
    def browsers(self) -> list[Browser]:
        """The browsers renders may open contexts on now (for /metrics)."""
        if self.pool:
            return self.pool.browsers
        browser = getattr(self, "browser", None)
        return [browser] if browser is not None else []

    def _browser_pid(self) -> int | None:
        """The main process of the browser, if the service launched it."""
        browser = getattr(self, "browser", None)
        return self._processes.get(browser) if browser is not None else None

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
            await self.pool.close()
            await super().close()
            if self._reaping:
                await asyncio.wait(list(self._reaping), timeout=10)
        finally:
            await self.renderers.stop()
            await self.egress.stop()

    def identity_for(
        self, browser: Browser, ask: dict[str, Any] | None = None, *, mobile: bool = False
    ) -> Identity:
        """The identity of a context on ``browser``: the default one (a spare's) without
        ``ask`` (service.scrape.browser_request.identity_ask)."""
        ask = ask or {}
        return identity_for(
            browser.version,
            languages=tuple(ask.get("languages") or ()),
            country=ask.get("country"),
            mobile=mobile,
            honest_agent=self.honest_agent,
            stored=ask.get("stored"),
        )

    async def _new_spare(
        self,
        browser: Browser,
        context_kwargs: dict[str, Any] | None = None,
        identity: Identity | None = None,
    ) -> Spare:
        identity = identity or self.identity_for(browser)
        route = await self.egress.open_route()
        context = None
        try:
            context = await browser.new_context(
                **identity.context_options(),
                **(context_kwargs or {}),
                # A static download does not check certificates either.
                ignore_https_errors=True,
                proxy=route.credentials,
                accept_downloads=False,
            )
            if self.config.navigation_timeout_ms is not None:
                context.set_default_navigation_timeout(self.config.navigation_timeout_ms)
            page = await context.new_page()
            # one CDP session of the service's for the page: the identity's overrides, the
            # isolated world and the meter (one session, not three: fewer driver messages)
            session = await context.new_cdp_session(page)
            # the page's context (the shell's permission) and main frame (the world's)
            target = (await session.send("Target.getTargetInfo"))["targetInfo"]
            # Popups and new tabs are closed as they open (their requests still go through
            # the route). Dialogs need nothing: without a listener Playwright dismisses them.
            context.on("page", close_popup)
            meter = DownloadMeter(self.max_resource_bytes, self.max_page_bytes)
            # The session's commands are sent together, not one round trip at a time: the
            # browser runs a session's commands in the order sent (the meter's Network.enable
            # before the blocked addresses), and a context made on demand (no spares) waits
            # for them all before its navigation (docs/decisions/0049).
            world, _, _ = await _together(
                PageWorld.open(page, session, target),  # where settle and the steps ask the page
                apply_identity(
                    identity,
                    session,
                    shell=self._shell,
                    native=self._native_languages,
                    target=target,
                ),
                meter.attach(session),
            )
            spare = Spare(browser, route, context, page, meter, world, identity, session)
            if self.skipped_resources:
                # what a request skips unless it asks for a screenshot or steps (handler._prepare)
                spare.skipped = self.skipped_for(images_seen=False)
                await _together(spare.pause_skippable(), spare.block())
        except BaseException:
            if context is not None:
                with suppress(Exception):
                    await asyncio.wait_for(context.close(), 5.0)
            route.close()
            raise
        return spare


async def _together(*calls: Awaitable[Any]) -> list[Any]:
    """The results of ``calls``, run at once; the first failure raised once all have ended (none
    is left running, nor its failure unread)."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results
