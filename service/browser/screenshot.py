"""A PNG of a rendered page, taken once its DOM has been read.

A ``js`` request whose meta has ``scrapespy_screenshot`` (``{"full_page": bool}``) gets the PNG
in ``response.meta["scrapespy_screenshot_png"]``: of the viewport, or of the whole page as wide as
the viewport and cut at ``SCRAPESPY_SCREENSHOT_MAX_HEIGHT`` CSS pixels. A PNG larger than
``SCRAPESPY_MAX_SCREENSHOT_BYTES`` fails the scrape with a :class:`BrowserError` that says so.
:func:`screenshot_of`, the ``screenshot`` format's producer (service.core.formats), gives
the result its base64.
The shot is taken once the page's fonts are ready, within what is left of the request's deadline,
in the request's own context, which the handler closes whatever happens here.

The viewport is captured by Chromium's ``Page.captureScreenshot`` with ``optimizeForSpeed``: its
PNG encoding took 30 ms where Playwright's ``page.screenshot`` took 47 (a 1280 x 720 shot of an
article page), for a PNG a third larger. A full page goes through ``page.screenshot``, which
clips it to the document, and is encoded smaller: it is the one that may reach the size cap.

With ``SCRAPESPY_BLOCK_HEAVY_RESOURCES`` on (the default), web fonts and media were never
loaded: text shows in the browser's fallback fonts (icon fonts as boxes) and videos as empty
frames. Images are loaded when a screenshot is asked (service.browser.spares).
"""

from __future__ import annotations

import asyncio
import base64
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchright.async_api import Error as PlaywrightError

from service.browser.failures import BrowserError
from service.browser.identity import VIEWPORT
from service.core.settings import scrapy_default
from service.scrape.meta import SCREENSHOT, SCREENSHOT_PNG

if TYPE_CHECKING:
    from patchright.async_api import CDPSession, Page
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

    from service.browser.world import PageWorld

# Reading the page keeps this much more of the request's time for a screenshot.
SCREENSHOT_RESERVE = 0.5
FONTS_READY = "() => document.fonts.ready.then(() => true)"


@dataclass(frozen=True)
class ScreenshotLimits:
    max_bytes: int = scrapy_default("SCRAPESPY_MAX_SCREENSHOT_BYTES")
    max_height: int = scrapy_default("SCRAPESPY_SCREENSHOT_MAX_HEIGHT")  # CSS pixels

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ScreenshotLimits:
        return cls(
            max_bytes=settings.getint("SCRAPESPY_MAX_SCREENSHOT_BYTES"),
            max_height=settings.getint("SCRAPESPY_SCREENSHOT_MAX_HEIGHT"),
        )


def wants_screenshot(meta: dict[str, Any]) -> bool:
    return isinstance(meta.get(SCREENSHOT), dict)


def screenshot_of(response: Response, max_bytes: int) -> str | None:
    """The ``screenshot`` format: the base64 of the PNG taken for the response, if one was (its
    size was capped when it was taken)."""
    png = response.meta.get(SCREENSHOT_PNG)
    return base64.b64encode(png).decode("ascii") if png else None


async def add_screenshot(
    request: Request,
    page: Page,
    limits: ScreenshotLimits,
    timeout: float,
    world: PageWorld | None = None,
) -> None:
    """Put the screenshot that ``request`` asks for in its (and its response's) meta."""
    full_page = bool(request.meta[SCREENSHOT].get("full_page"))
    request.meta[SCREENSHOT_PNG] = await take_screenshot(
        page, full_page=full_page, limits=limits, timeout=timeout, world=world
    )


async def take_screenshot(
    page: Page,
    *,
    full_page: bool,
    limits: ScreenshotLimits,
    timeout: float,
    world: PageWorld | None = None,
) -> bytes:
    """The page as a PNG, within ``timeout`` seconds; a :class:`BrowserError` past the size cap.
    The fonts are waited for in the page's isolated ``world`` when given."""
    png = await _full_page(page, limits, timeout) if full_page else await _viewport(page, world)
    if len(png) > limits.max_bytes:
        raise BrowserError(
            f"the screenshot is larger than the limit of {limits.max_bytes} bytes "
            "(SCRAPESPY_MAX_SCREENSHOT_BYTES)"
        )
    return png


async def _viewport(page: Page, world: PageWorld | None) -> bytes:
    # Text drawn before its web font has loaded is invisible; blocked fonts are ready at once.
    with suppress(PlaywrightError):  # a page that broke document.fonts is shot as it is
        await (world.evaluate(FONTS_READY) if world else page.evaluate(FONTS_READY))
    session = await page.context.new_cdp_session(page)
    try:
        shot = await session.send(
            "Page.captureScreenshot", {"format": "png", "optimizeForSpeed": True}
        )
    finally:
        # The context closes right after; the answer need not wait for the session to go.
        _detach_later(session)
    return base64.b64decode(shot["data"])


async def _full_page(page: Page, limits: ScreenshotLimits, timeout: float) -> bytes:
    options: dict[str, Any] = {
        "type": "png",
        # one pixel per CSS pixel whatever the context's device scale factor: the size the
        # caller was told, and a quarter of the bytes at a factor of 2
        "scale": "css",
        "timeout": max(timeout * 1000, 1.0),  # 0 would mean no timeout at all
    }
    # a desktop's page is sized by the identity, not by Playwright (service.browser.identity)
    width = page.viewport_size["width"] if page.viewport_size else VIEWPORT["width"]
    # Playwright trims the clip to the document: a shorter page keeps its own height.
    options["full_page"] = True
    options["clip"] = {"x": 0, "y": 0, "width": width, "height": limits.max_height}
    return await page.screenshot(**options)


def _detach_later(session: CDPSession) -> None:
    detaching = asyncio.ensure_future(session.detach())
    detaching.add_done_callback(_consume)


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
