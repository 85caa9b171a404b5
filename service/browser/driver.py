"""The Playwright the js engine drives Chromium with: patchright, Playwright's API with its
automation leaks patched in the driver (no ``Runtime.enable`` on the pages it drives, no
utility-world source URLs, no ``--enable-automation``), chosen over plain Playwright by the
detectors' table and the js figures (docs/decisions/0045-patchright-drives-the-browser.md).

scrapy-playwright starts it through its browser-provider hook (:class:`PatchrightProvider`,
which the js handler always uses). The engine's modules import patchright's names
(``patchright.async_api``) themselves: its errors are patchright's own classes, which plain
Playwright's ``except`` clauses would not catch. ``scrapespy browser`` runs the same driver's
``launchServer`` (:mod:`service.browser.server`).
"""

from __future__ import annotations

from patchright.async_api import PlaywrightContextManager
from scrapy_playwright.provider import PlaywrightBrowserProvider

__all__ = ["PatchrightProvider"]


class PatchrightProvider(PlaywrightBrowserProvider):
    """scrapy-playwright's default provider, on patchright's driver."""

    async def start(self) -> None:
        self.playwright_context_manager = PlaywrightContextManager()  # type: ignore[assignment]
        self.playwright = await self.playwright_context_manager.start()  # type: ignore[union-attr]
        self.browser_type = getattr(self.playwright, self.config.browser_type_name)
