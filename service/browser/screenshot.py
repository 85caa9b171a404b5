"""A PNG of a rendered page, taken once its DOM has been read.

A ``js`` request whose meta has ``scrapespy_screenshot`` (``{"full_page": bool}``) gets the PNG
in ``response.meta["scrapespy_screenshot_png"]``: of the viewport, or of the whole page as wide as
the viewport and cut at ``SCRAPESPY_SCREENSHOT_MAX_HEIGHT`` CSS pixels. A PNG larger than
``SCRAPESPY_MAX_SCREENSHOT_BYTES`` fails the scrape with a :class:`BrowserError` that says so.
The shot is taken within what is left of the request's deadline, in the request's own context,
which the handler closes whatever happens here.

With ``SCRAPESPY_BLOCK_HEAVY_RESOURCES`` on (the default), web fonts and media were never
loaded: text shows in the browser's fallback fonts (icon fonts as boxes) and videos as empty
frames. Images are loaded either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from service.browser.failures import BrowserError

if TYPE_CHECKING:
    from playwright.async_api import Page
    from scrapy.settings import BaseSettings

SCREENSHOT_META = "scrapespy_screenshot"
SCREENSHOT_PNG_META = "scrapespy_screenshot_png"
# Reading the page keeps this much more of the request's time for a screenshot.
SCREENSHOT_RESERVE = 0.5


@dataclass(frozen=True)
class ScreenshotLimits:
    max_bytes: int = 8 * 1024 * 1024
    max_height: int = 10_000  # CSS pixels

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ScreenshotLimits:
        return cls(
            max_bytes=settings.getint("SCRAPESPY_MAX_SCREENSHOT_BYTES", cls.max_bytes),
            max_height=settings.getint("SCRAPESPY_SCREENSHOT_MAX_HEIGHT", cls.max_height),
        )


def wants_screenshot(meta: dict[str, Any]) -> bool:
    return isinstance(meta.get(SCREENSHOT_META), dict)


async def take_screenshot(
    page: Page, *, full_page: bool, limits: ScreenshotLimits, timeout: float
) -> bytes:
    """The page as a PNG, within ``timeout`` seconds; a :class:`BrowserError` past the size cap."""
    options: dict[str, Any] = {
        "type": "png",
        # one pixel per CSS pixel whatever the context's device scale factor: the size the
        # caller was told, and a quarter of the bytes at a factor of 2
        "scale": "css",
        "timeout": max(timeout * 1000, 1.0),  # 0 would mean no timeout at all
    }
    if full_page:
        width = page.viewport_size["width"] if page.viewport_size else limits.max_height
        # Playwright trims the clip to the document: a shorter page keeps its own height.
        options["full_page"] = True
        options["clip"] = {"x": 0, "y": 0, "width": width, "height": limits.max_height}
    png = await page.screenshot(**options)
    if len(png) > limits.max_bytes:
        raise BrowserError(
            f"the screenshot is larger than the limit of {limits.max_bytes} bytes "
            "(SCRAPESPY_MAX_SCREENSHOT_BYTES)"
        )
    return png
