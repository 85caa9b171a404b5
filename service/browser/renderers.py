"""A cap on each ``js`` renderer's memory, by its process: ``SCRAPESPY_BROWSER_MAX_RENDERER_MB``.

V8's heap limit (``SCRAPESPY_BROWSER_MAX_HEAP_MB``) bounds the JavaScript heap alone: a page that
filled 6 GB of ArrayBuffers (kept outside it) grew its renderer to 6.2 GB, and succeeded. So the
renderer processes of each browser the service launched are read while pages render, every
:data:`INTERVAL` seconds, in a worker thread (psutil reads /proc, which the reactor thread must
not wait for), and one whose resident memory is over the cap is killed. Chromium then reports
its page crashed (the page's ``crash`` event), which fails that scrape alone as ``too_large``,
unbilled (service.browser.handler); the browser and the other pages go on.

A renderer is found by its command line (``--type=renderer``), read once per process. A remote
browser (``SCRAPESPY_BROWSER_URL``) runs on another machine and is not capped here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

import psutil

log = logging.getLogger(__name__)

INTERVAL = 0.2  # seconds between two reads while pages render
MB = 1024 * 1024
MESSAGE = (
    "the page used more memory than a page may (SCRAPESPY_BROWSER_MAX_RENDERER_MB); its "
    "renderer was stopped"
)


class RendererCap:
    """Reads the renderers of the browsers ``browsers()`` names (their main pids) while
    ``busy()``, and kills the ones over ``cap_mb``; ``kills`` counts them."""

    def __init__(
        self,
        cap_mb: int,
        browsers: Callable[[], Iterable[int | None]],
        busy: Callable[[], bool],
    ) -> None:
        self.cap_bytes = cap_mb * MB
        self.browsers = browsers
        self.busy = busy
        self.kills = 0
        self._renderers: dict[int, bool] = {}  # pid -> whether it is a renderer
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.cap_bytes > 0 and (self._task is None or self._task.done()):
            self._task = asyncio.ensure_future(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(INTERVAL)
            pids = [pid for pid in self.browsers() if pid is not None]
            if not pids or not self.busy():
                continue
            try:
                killed = await loop.run_in_executor(None, self.check, pids)
            except Exception as error:  # never let the watch end: the next read may do
                log.debug("reading the renderers' memory failed: %s", error)
                continue
            for pid, rss in killed:
                log.warning(
                    "stopped a js renderer (pid %d) using %d MB, over "
                    "SCRAPESPY_BROWSER_MAX_RENDERER_MB (%d); its page fails as too_large",
                    pid,
                    rss // MB,
                    self.cap_bytes // MB,
                )

    def check(self, browser_pids: list[int]) -> list[tuple[int, int]]:
        """In a worker thread: kill the renderers over the cap; (pid, RSS) of each."""
        killed: list[tuple[int, int]] = []
        seen: set[int] = set()
        for browser_pid in browser_pids:
            try:
                children = psutil.Process(browser_pid).children(recursive=True)
            except psutil.Error:
                continue
            for child in children:
                seen.add(child.pid)
                try:
                    if not self._is_renderer(child):
                        continue
                    rss = int(child.memory_info().rss)
                    if rss > self.cap_bytes:
                        self.kills += 1  # before the kill: its page's crash comes after
                        child.kill()
                        killed.append((child.pid, rss))
                except psutil.Error:  # gone meanwhile
                    continue
        for gone in set(self._renderers) - seen:
            del self._renderers[gone]
        return killed

    def _is_renderer(self, process: psutil.Process) -> bool:
        known = self._renderers.get(process.pid)
        if known is None:
            # Chromium's helpers may rewrite their argv into one string: look inside each part
            known = any("--type=renderer" in part for part in process.cmdline())
            self._renderers[process.pid] = known
        return known
