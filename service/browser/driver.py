"""The Playwright the js engine drives Chromium with: patchright, Playwright's API with its
automation leaks patched in the driver (no ``Runtime.enable`` on the pages it drives, no
utility-world source URLs, no ``--enable-automation``), chosen over plain Playwright by the
detectors' table and the js figures (docs/decisions/0045-patchright-drives-the-browser.md).

Everything of the engine imports the driver's names from here: its errors are patchright's own
classes, which plain Playwright's ``except`` clauses would not catch. scrapy-playwright starts it
through its browser-provider hook (``PLAYWRIGHT_BROWSER_PROVIDER``: :class:`PatchrightProvider`);
``scrapespy browser`` runs the same driver's ``launchServer``
(:data:`DRIVER_PACKAGE`, :mod:`service.browser.server`).
"""

from __future__ import annotations

from pathlib import Path

import patchright
from patchright.async_api import Error, PlaywrightContextManager, TimeoutError
from scrapy_playwright.provider import PlaywrightBrowserProvider

__all__ = ["DRIVER_PACKAGE", "Error", "PatchrightProvider", "TimeoutError"]

# the Node package (patchright-core with its client) the driver runs, for launchServer
DRIVER_PACKAGE = str(Path(patchright.__file__).parent / "driver" / "package")


class PatchrightProvider(PlaywrightBrowserProvider):
    """scrapy-playwright's default provider, on patchright's driver."""

    async def start(self) -> None:
        self.playwright_context_manager = PlaywrightContextManager()  # type: ignore[assignment]
        self.playwright = await self.playwright_context_manager.start()  # type: ignore[union-attr]
        self.browser_type = getattr(self.playwright, self.config.browser_type_name)
