"""Screenshots of the js engine's download handler, in the real Chromium, of real local pages.

The job sets ``meta["scrapespy_screenshot"]``; here the requests carry it themselves.
"""

from __future__ import annotations

import asyncio
import functools
import struct
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import pytest_twisted
from scrapy import Spider
from scrapy.exceptions import DownloadTimeoutError
from scrapy.http import Request
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler

from harness.site import TargetSite
from service.browser.failures import BrowserError
from service.browser.handler import BrowserDownloadHandler
from service.browser.screenshot import ScreenshotLimits
from service.core.config import Config, ConfigError
from service.scrape.engine import crawler_settings
from service.scrape.scrapy_settings import default_settings

pytestmark = pytest.mark.browser

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VIEWPORT = (1366, 654)  # the desktop identity's (service.browser.identity)

SHORT = """<!doctype html><html><head><title>Short</title></head>
<body style="margin:0;background:#fff"><h1>Hello</h1></body></html>"""


def tall(height: int) -> str:
    return f"""<!doctype html><html><head><title>Tall</title></head>
<body style="margin:0"><div style="height:{height}px;background:linear-gradient(#f00,#00f)">
</div></body></html>"""


# The page loads and settles, then asks for a font that never comes: the screenshot waits for
# the document's fonts (unless heavy resources are blocked) and runs into the deadline.
FONT_HELD = 60  # seconds the font's server holds its answer: far past any deadline here
FONT_LATER = """<!doctype html><html><head><title>Font later</title></head><body><p>text</p>
<script>
window.addEventListener("load", () => setTimeout(() => {
  const face = new FontFace("Never", "url(/shot/never.woff2)");
  document.fonts.add(face);
  face.load().catch(() => {});
}, 0));
</script></body></html>"""


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.page("/shot/short", SHORT)
    site.page("/shot/tall", tall(3000))
    site.page("/shot/taller", tall(5000))
    site.page("/shot/font-later", FONT_LATER)

    def never(_h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        time.sleep(FONT_HELD)
        return 404, {"Content-Type": "text/plain"}, b""

    site.routes["/shot/never.woff2"] = never
    return site


def on_asyncio(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., Any]:
    """Run an async test as an asyncio task: the handler awaits asyncio futures."""

    @pytest_twisted.ensureDeferred
    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> None:
        await deferred_from_coro(test(*args, **kwargs))

    return run


@asynccontextmanager
async def rendering(**settings: Any) -> AsyncIterator[BrowserDownloadHandler]:
    crawler = get_crawler(
        settings_dict={
            **default_settings(),
            "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
            "SCRAPESPY_ALLOW_PRIVATE_TARGETS": True,
            "SCRAPESPY_BROWSER_SETTLE_SECONDS": 0.5,
            "SCRAPESPY_BROWSER_SPARES": 0,
            "PLAYWRIGHT_ABORT_REQUEST": "service.browser.launch.abort_heavy_resource",
            **settings,
        }
    )
    crawler.spider = Spider("shot")
    handler = BrowserDownloadHandler(crawler)
    try:
        yield handler
    finally:
        await handler.close()


async def fetch(
    handler: BrowserDownloadHandler, url: str, *, timeout: float = 10.0, **meta: Any
) -> Any:
    request = Request(
        url,
        meta={"playwright": True, "scrapespy_deadline": time.monotonic() + timeout, **meta},
    )
    return await handler.download_request(request)


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == PNG_SIGNATURE and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


async def all_let_go(handler: BrowserDownloadHandler) -> None:
    """Wait for the contexts of finished renders to close (the answer does not wait for it)."""
    for _ in range(100):
        if not handler._letting_go:
            return
        await asyncio.sleep(0.05)


@on_asyncio
async def test_a_viewport_screenshot_is_a_png_of_the_viewport(pages):
    async with rendering() as handler:
        response = await fetch(
            handler, pages.url("/shot/tall"), scrapespy_screenshot={"full_page": False}
        )
        assert response.css("title::text").get() == "Tall"
        assert png_size(response.meta["scrapespy_screenshot_png"]) == VIEWPORT


@on_asyncio
async def test_a_full_page_screenshot_has_the_pages_height_up_to_the_bound(pages):
    async with rendering(SCRAPESPY_SCREENSHOT_MAX_HEIGHT=4000) as handler:
        short = await fetch(
            handler, pages.url("/shot/short"), scrapespy_screenshot={"full_page": True}
        )
        within = await fetch(
            handler, pages.url("/shot/tall"), scrapespy_screenshot={"full_page": True}
        )
        cut = await fetch(
            handler, pages.url("/shot/taller"), scrapespy_screenshot={"full_page": True}
        )
    assert png_size(short.meta["scrapespy_screenshot_png"]) == VIEWPORT
    assert png_size(within.meta["scrapespy_screenshot_png"]) == (VIEWPORT[0], 3000)
    assert png_size(cut.meta["scrapespy_screenshot_png"]) == (VIEWPORT[0], 4000)


@on_asyncio
async def test_a_screenshot_over_the_byte_cap_fails_the_scrape_and_says_so(pages):
    async with rendering(SCRAPESPY_MAX_SCREENSHOT_BYTES=1000) as handler:
        with pytest.raises(BrowserError, match="larger than the limit of 1000 bytes"):
            await fetch(handler, pages.url("/shot/tall"), scrapespy_screenshot={"full_page": True})
        # the same page without a screenshot is still read
        response = await fetch(handler, pages.url("/shot/tall"))
        assert response.css("title::text").get() == "Tall"


@on_asyncio
async def test_a_screenshot_that_runs_out_of_time_leaks_no_page_or_context(pages):
    async with rendering(SCRAPESPY_MAX_PAGES=1, SCRAPESPY_BLOCK_HEAVY_RESOURCES=False) as handler:
        started = time.monotonic()
        with pytest.raises(DownloadTimeoutError):
            await fetch(
                handler,
                pages.url("/shot/font-later"),
                timeout=5,
                scrapespy_screenshot={"full_page": False},
            )
        # ended by its deadline, not by the font (held for FONT_HELD s): a bound with room for
        # a busy machine, still far from what waiting for the font would take
        assert time.monotonic() - started < FONT_HELD / 2
        # control: without the screenshot the same page is read, font or not
        read = await fetch(handler, pages.url("/shot/font-later"), timeout=30)
        assert read.css("title::text").get() == "Font later"
        # the only page slot is free again: had it leaked, this would wait and time out
        response = await fetch(
            handler, pages.url("/shot/short"), timeout=30, scrapespy_screenshot={"full_page": False}
        )
        assert png_size(response.meta["scrapespy_screenshot_png"]) == VIEWPORT
        await all_let_go(handler)
        assert handler.browser.contexts == []
        assert not handler.pages.locked()


@on_asyncio
async def test_without_the_meta_no_screenshot_is_taken(pages):
    async with rendering() as handler:
        response = await fetch(handler, pages.url("/shot/short"))
        assert response.css("h1::text").get() == "Hello"
        assert "scrapespy_screenshot_png" not in response.meta
        assert not handler.stats.get_value("scrapespy/browser/screenshots")


def test_the_operators_limits_reach_the_handler():
    config = Config.from_env(
        {"SCRAPESPY_MAX_SCREENSHOT_BYTES": "123456", "SCRAPESPY_SCREENSHOT_MAX_HEIGHT": "2000"}
    )
    crawler = get_crawler(settings_dict=dict(crawler_settings(config)))
    handler = BrowserDownloadHandler(crawler)
    assert handler.screenshot_limits == ScreenshotLimits(max_bytes=123456, max_height=2000)
    assert Config().max_screenshot_bytes == 8 * 1024 * 1024
    assert Config().screenshot_max_height == 10_000
    with pytest.raises(ConfigError, match="SCRAPESPY_SCREENSHOT_MAX_HEIGHT must be at least 1"):
        Config.from_env({"SCRAPESPY_SCREENSHOT_MAX_HEIGHT": "0"})
