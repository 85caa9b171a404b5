"""The browser's page slots (``SCRAPESPY_MAX_PAGES``), a caller's scrape served before a job's.

A batch keeps up to ``SCRAPESPY_JOB_PAGES_IN_FLIGHT`` pages in flight, more than the browser has
slots: with a plain semaphore, a ``POST /scrape`` caller's js page waited behind every job page
already waiting. Here a freed slot goes to the first waiting page a caller waits on, and to a
job's page (``ScrapeOrder.background``) only when none does.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextlib import suppress

__all__ = ["PageSlots"]


class PageSlots:
    """``size`` slots; :meth:`acquire` waits for one, :meth:`release` hands it on."""

    def __init__(self, size: int) -> None:
        self._free = size
        # [waited on by a caller, a job's page]: futures resolved with a slot, in arrival order
        self._waiting: tuple[deque[asyncio.Future[None]], ...] = (deque(), deque())

    def locked(self) -> bool:
        """Whether a page would have to wait for a slot (as ``asyncio.Semaphore.locked``)."""
        return self._free == 0 or any(self._waiting)

    async def acquire(self, background: bool = False) -> None:
        if self._free > 0 and not any(self._waiting):
            self._free -= 1
            return
        slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._waiting[background]
        queue.append(slot)
        try:
            await slot
        except asyncio.CancelledError:
            if slot.done() and not slot.cancelled():  # handed a slot it will not use
                self.release()
            else:
                with suppress(ValueError):
                    queue.remove(slot)
            raise

    def release(self) -> None:
        for queue in self._waiting:
            while queue:
                slot = queue.popleft()
                if not slot.done():
                    slot.set_result(None)
                    return
        self._free += 1
