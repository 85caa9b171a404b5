"""The Playwright the js engine drives Chromium with: patchright, Playwright's API with its
automation leaks patched in the driver (no ``Runtime.enable`` on the pages it drives, no
utility-world source URLs, no ``--enable-automation``), chosen over plain Playwright by the
detectors' table and the js figures (docs/decisions/0045-patchright-drives-the-browser.md).

scrapy-playwright starts it through its browser-provider hook (:class:`PatchrightProvider`,
which the js handler always uses). The engine's modules import patchright's names
(``patchright.async_api``) themselves: its errors are patchright's own classes, which plain
Playwright's ``except`` clauses would not catch. ``scrapespy browser`` runs the same driver's
``launchServer`` (:mod:`service.browser.server`).

For every message it sends the driver, patchright records the sending Python stack
(``traceback.extract_stack``), kept only to print a failed call's stack in its error; under js
load that walk was some 7% of the service's own samples (py-spy). A task that carries the
stack to use (``__pw_stack_trace__``, as patchright's own sync API sets it) is not walked, so
every task of the service's loop is given one fixed frame naming the engine: the errors keep
their messages, which are all the engine reads of them (docs/decisions/0048).
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Coroutine
from typing import Any

from patchright.async_api import PlaywrightContextManager
from scrapy_playwright.provider import PlaywrightBrowserProvider

__all__ = ["PatchrightProvider", "skip_driver_stacks"]

# the stack a driver call's error shows in place of the sending task's own
_ENGINE_FRAME = traceback.StackSummary.from_list([("service/browser", 0, "js engine", "")])


def skip_driver_stacks(loop: asyncio.AbstractEventLoop) -> None:
    """Make ``loop``'s tasks carry :data:`_ENGINE_FRAME` as their driver-call stack (the
    loop's task factory, wrapping one already set)."""
    factory = loop.get_task_factory()
    if getattr(factory, "skips_driver_stacks", False):
        return

    def task(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kwargs: Any
    ) -> asyncio.Future[Any]:
        made = factory(loop, coro, **kwargs) if factory else asyncio.Task(coro, loop=loop, **kwargs)
        made.__pw_stack_trace__ = _ENGINE_FRAME  # type: ignore[attr-defined]
        return made

    task.skips_driver_stacks = True  # type: ignore[attr-defined]
    loop.set_task_factory(task)  # type: ignore[arg-type]


class PatchrightProvider(PlaywrightBrowserProvider):
    """scrapy-playwright's default provider, on patchright's driver."""

    async def start(self) -> None:
        skip_driver_stacks(asyncio.get_running_loop())
        self.playwright_context_manager = PlaywrightContextManager()  # type: ignore[assignment]
        self.playwright = await self.playwright_context_manager.start()  # type: ignore[union-attr]
        self.browser_type = getattr(self.playwright, self.config.browser_type_name)
