"""The renderer processes the memory cap reads (service.browser.renderers.Renderers), found
through the kernel's children lists, are the ones the browser itself names: a real Chromium,
three pages, then one page closed."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from patchright.async_api import async_playwright

from service.browser.launch import browser_process, chromium_launch_options
from service.browser.renderers import Renderers, process_type
from service.core.settings import default_chromium_path
from tests.test_browser_screenshot import on_asyncio

pytestmark = pytest.mark.browser


async def _named_by_the_browser(browser) -> set[int]:
    session = await browser.new_browser_cdp_session()
    info = await session.send("SystemInfo.getProcessInfo")
    await session.detach()
    return {int(one["id"]) for one in info["processInfo"] if one["type"] == "renderer"}


@on_asyncio
async def test_the_renderers_below_the_browser_are_those_it_names() -> None:
    options = chromium_launch_options(default_chromium_path(), as_root=os.geteuid() == 0)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(**options)
        try:
            contexts = []
            for _ in range(3):
                context = await browser.new_context()
                await (await context.new_page()).goto("about:blank")
                contexts.append(context)
            pid = await browser_process(browser)
            assert pid is not None
            renderers = Renderers(pid)
            found = renderers.pids()
            assert found is not None, "this kernel keeps no children lists"
            assert len(found) >= 3
            assert set(found) == await _named_by_the_browser(browser)
            assert {process_type(one) for one in found} == {"renderer"}
            assert process_type(pid) == ""  # the browser's main process has no --type

            await contexts.pop().close()
            deadline = time.monotonic() + 30
            while set(renderers.pids() or ()) != await _named_by_the_browser(browser):
                assert time.monotonic() < deadline, "a closed page's renderer is still listed"
                await asyncio.sleep(0.1)
            assert len(renderers.pids() or ()) == len(found) - 1
        finally:
            await browser.close()
