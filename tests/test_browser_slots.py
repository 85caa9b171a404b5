"""The browser's page slots (service.browser.slots): a caller's page before a job's."""

from __future__ import annotations

import asyncio

from service.browser.slots import PageSlots
from tests.test_browser_screenshot import on_asyncio


async def _order(waiting: list[tuple[str, bool]]) -> list[str]:
    """One slot, taken; pages wait in the order given; the names in the order they got it."""
    slots = PageSlots(1)
    await slots.acquire()
    got: list[str] = []

    async def page(name: str, background: bool) -> None:
        await slots.acquire(background=background)
        got.append(name)
        slots.release()

    tasks = []
    for name, background in waiting:
        tasks.append(asyncio.ensure_future(page(name, background)))
        await asyncio.sleep(0)  # each waits before the next arrives
    assert slots.locked()
    slots.release()
    await asyncio.gather(*tasks)
    assert not slots.locked()
    return got


@on_asyncio
async def test_a_callers_page_gets_a_slot_before_the_jobs_pages_waiting_before_it() -> None:
    order = await _order([("job1", True), ("job2", True), ("scrape", False), ("job3", True)])
    # a plain semaphore gives it in arrival order: job1, job2, scrape, job3
    assert order == ["scrape", "job1", "job2", "job3"]


@on_asyncio
async def test_a_page_that_stops_waiting_gives_its_turn_on() -> None:
    async def run() -> list[str]:
        slots = PageSlots(1)
        await slots.acquire()
        gone = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0)
        got: list[str] = []

        async def page() -> None:
            await slots.acquire(background=True)
            got.append("job")
            slots.release()

        waiting = asyncio.ensure_future(page())
        await asyncio.sleep(0)
        gone.cancel()  # timed out while waiting
        slots.release()
        await asyncio.wait_for(waiting, 1)
        assert not slots.locked()
        return got

    assert await run() == ["job"]


@on_asyncio
async def test_a_page_cancelled_once_handed_a_slot_hands_it_on() -> None:
    async def run() -> bool:
        slots = PageSlots(1)
        await slots.acquire()
        late = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0)
        slots.release()  # handed to late, which is cancelled before it resumes
        late.cancel()
        await asyncio.gather(late, return_exceptions=True)
        return slots.locked()

    assert await run() is False
