"""A cap on each ``js`` renderer's memory, by its process: ``SCRAPESPY_BROWSER_MAX_RENDERER_MB``.

V8's heap limit (``SCRAPESPY_BROWSER_MAX_HEAP_MB``) bounds the JavaScript heap alone: a page that
filled 6 GB of ArrayBuffers (kept outside it) grew its renderer to 6.2 GB, and succeeded. So while
pages render, every :data:`INTERVAL` seconds, the browser names its renderer processes
(``SystemInfo.getProcessInfo``, 0.6 ms of the service's CPU a call, where psutil's
``children()`` read every process of the machine: 9-13 ms), their resident memory is read with
psutil in a worker thread (/proc is not read on the reactor thread), and one over the cap is
killed. Chromium then reports its page crashed (the page's ``crash`` event), which fails that
scrape alone as ``too_large``, unbilled (service.browser.handler); the browser and the other
pages go on. A page that passes the cap between two reads may hold more until the next one.

Only a browser the service launched is capped: a remote one (``SCRAPESPY_BROWSER_URL``) runs on
another machine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import psutil

log = logging.getLogger(__name__)

INTERVAL = 0.2  # seconds between two reads while pages render
MB = 1024 * 1024
MESSAGE = (
    "the page used more memory than a page may (SCRAPESPY_BROWSER_MAX_RENDERER_MB); its "
    "renderer was stopped"
)


class RendererCap:
    """While ``busy()``, reads the renderers ``renderer_pids()`` names and kills the ones over
    ``cap_mb``; ``kills`` counts them."""

    def __init__(
        self,
        cap_mb: int,
        renderer_pids: Callable[[], Awaitable[list[int]]],
        busy: Callable[[], bool],
    ) -> None:
        self.cap_bytes = cap_mb * MB
        self.renderer_pids = renderer_pids
        self.busy = busy
        self.kills = 0
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
            if not self.busy():
                continue
            try:
                pids = await self.renderer_pids()
                killed = await loop.run_in_executor(None, self.check, pids) if pids else []
            except Exception as error:  # a browser going away: the next read may do
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

    def check(self, pids: list[int]) -> list[tuple[int, int]]:
        """In a worker thread: kill the renderers over the cap; (pid, RSS) of each."""
        killed: list[tuple[int, int]] = []
        for pid in pids:
            try:
                process = psutil.Process(pid)
                rss = int(process.memory_info().rss)
                if rss > self.cap_bytes:
                    self.kills += 1  # before the kill: its page's crash comes after
                    process.kill()
                    killed.append((pid, rss))
            except psutil.Error:  # gone meanwhile
                continue
        return killed
