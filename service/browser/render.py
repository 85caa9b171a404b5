"""What one js request holds in the browser (:class:`Render`), and the small pieces of its render:
the count of pages navigating, the caller's cookies as Playwright sets them, the proxy upstream.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from patchright.async_api import Error as PlaywrightError

from service.browser.egress import EgressRoute, Upstream
from service.browser.failures import BrowserError
from service.browser.settle import PageWatch
from service.browser.spares import Spare
from service.scrape import meta as scrape_meta

if TYPE_CHECKING:
    from patchright._impl._api_structures import SetCookieParam
    from patchright.async_api import Browser, Page
    from scrapy import Request


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


class Render:
    """What one request holds in the browser, so that all of it can be let go."""

    def __init__(self) -> None:
        self.browser: Browser | None = None
        self.spare: Spare | None = None
        self.opening: asyncio.Future[Spare] | None = None
        self.watch: PageWatch | None = None
        self.deadline: asyncio.Timeout | None = None
        self.stopped: BrowserError | None = None  # why the render was cut short
        self.kills = 0  # renderers the memory cap had killed when the render began
        self.endpoint: Any = None  # the pool's endpoint it counts on (service.browser.pool)

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


def close_popup(page: Page) -> None:
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


async def went_away(browser: Browser, error: PlaywrightError) -> bool:
    """Whether ``error`` came from a browser that has died (Playwright may hear of it late)."""
    if "closed" not in (error.message or str(error)):
        return not browser.is_connected()
    for _ in range(20):
        if not browser.is_connected():
            return True
        await asyncio.sleep(0.05)
    return False


def upstream_of(request: Request) -> Upstream | None:
    """The proxy a proxy tier picked: Playwright's form in the context kwargs, or Scrapy's."""
    proxy = scrape_meta.context_kwargs(request).get("proxy")
    if proxy:
        return Upstream.from_playwright(proxy)
    if request.meta.get("proxy"):
        return Upstream.from_url(str(request.meta["proxy"]))
    return None
