"""A cap on each ``js`` renderer's memory, by its process: ``SCRAPESPY_BROWSER_MAX_RENDERER_MB``.

V8's heap limit (``SCRAPESPY_BROWSER_MAX_HEAP_MB``) bounds the JavaScript heap alone: a page that
filled 6 GB of ArrayBuffers (kept outside it) grew its renderer to 6.2 GB, and succeeded. So while
pages render, every :data:`INTERVAL` seconds, a worker thread (/proc is not read on the reactor
thread) finds the browser's renderers below its main process (:class:`Renderers`: the
kernel's lists of its zygotes' children, then the command line of each new one) and reads
their resident memory; one over the cap is killed. Chromium then reports its page crashed (the
page's ``crash`` event), which fails that scrape alone as ``too_large``, unbilled
(service.browser.handler); the browser and the other pages go on. A page that passes the cap
between two reads may hold more until the next one.

Asking the browser instead (``SystemInfo.getProcessInfo``, a round trip through the driver
five times a second) cost the service and its browser some 7 ms of CPU a page under js load;
psutil's ``children()`` reads every process of the machine (9-13 ms a call). Where the kernel
keeps no children lists (``/proc/PID/task/TID/children``), the browser is asked
(``renderer_pids``).

Only a browser the service launched is capped: a remote one (``SCRAPESPY_BROWSER_URL``) runs on
another machine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

INTERVAL = 0.2  # seconds between two reads while pages render
MB = 1024 * 1024
MESSAGE = (
    "the page used more memory than a page may (SCRAPESPY_BROWSER_MAX_RENDERER_MB); its "
    "renderer was stopped"
)


def children(pid: int) -> list[int] | None:
    """The pids of ``pid``'s children, from the kernel's lists (None: it keeps none)."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found.extend(int(one) for one in (task / "children").read_text().split())
    except FileNotFoundError:
        return None if Path(f"/proc/{pid}").exists() else []
    except (OSError, ValueError):  # gone meanwhile
        pass
    return found


def process_type(pid: int) -> str:
    """A Chromium process's ``--type`` ("" for the browser's main process or a gone one); its
    command line may be one rewritten title rather than NUL-separated arguments."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
    except OSError:
        return ""
    for word in words:
        if word.startswith(b"--type="):
            return word[7:].decode("ascii", "replace")
    return ""


class Renderers:
    """The renderer processes below a browser's main process: the children of its zygotes
    (which fork every renderer), found once among the browser's children (some 30 threads'
    lists) and looked up again only when one is gone."""

    def __init__(self, browser_pid: int) -> None:
        self.browser_pid = browser_pid
        self.zygotes: list[int] = []
        self.known: dict[int, bool] = {}  # pid -> a renderer, for the zygotes' live children

    def pids(self) -> list[int] | None:
        """The renderers' pids, or None where the kernel keeps no children lists."""
        if not self.zygotes or not all(Path(f"/proc/{pid}").exists() for pid in self.zygotes):
            found = children(self.browser_pid)
            if found is None:
                return None
            self.zygotes = [pid for pid in found if process_type(pid) == "zygote"]
        below: list[int] = []
        for zygote in self.zygotes:
            found = children(zygote)
            if found is None:
                return None
            below.extend(found)
        known = self.known
        for gone in known.keys() - set(below):
            del known[gone]
        for pid in below:
            if pid not in known:
                known[pid] = process_type(pid) == "renderer"
        return [pid for pid in below if known[pid]]


class RendererCap:
    """While ``busy()``, reads the memory of the renderers below ``browser_pid()`` (else those
    ``renderer_pids()`` names) and kills the ones over ``cap_mb``; ``kills`` counts them."""

    def __init__(
        self,
        cap_mb: int,
        renderer_pids: Callable[[], Awaitable[list[int]]],
        busy: Callable[[], bool],
        browser_pid: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.cap_bytes = cap_mb * MB
        self.renderer_pids = renderer_pids
        self.browser_pid = browser_pid
        self.busy = busy
        self.kills = 0
        self._task: asyncio.Task[None] | None = None
        self._renderers: Renderers | None = None  # of the browser named last
        self._no_lists = False  # the kernel keeps no children lists: ask the browser

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
                if (pid := self.browser_pid()) is not None and not self._no_lists:
                    killed = await loop.run_in_executor(None, self.check_below, pid)
                else:
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

    def check_below(self, browser_pid: int) -> list[tuple[int, int]]:
        """In a worker thread: :meth:`check` the renderers below ``browser_pid``."""
        if self._renderers is None or self._renderers.browser_pid != browser_pid:
            self._renderers = Renderers(browser_pid)
        pids = self._renderers.pids()
        if pids is None:
            self._no_lists = True
            return []
        return self.check(pids)

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
