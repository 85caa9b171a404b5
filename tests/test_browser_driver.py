"""The js engine's loop gives patchright one fixed stack for its driver calls
(service.browser.driver.skip_driver_stacks), instead of a walk of the sending stack for each."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from service.browser.driver import skip_driver_stacks


async def _nothing() -> None:
    return None


def test_every_task_of_the_loop_carries_the_engine_frame_and_an_earlier_factory_is_kept() -> None:
    # a loop of its own, in a thread of its own (the suite's reactor runs one in this thread)
    with ThreadPoolExecutor(1) as thread:
        thread.submit(_on_a_loop_of_its_own).result(timeout=30)


def _on_a_loop_of_its_own() -> None:
    loop = asyncio.new_event_loop()
    made: list[str] = []

    def earlier(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made.append("earlier")
        return asyncio.Task(coro, loop=loop, **kwargs)

    try:
        loop.set_task_factory(earlier)
        skip_driver_stacks(loop)
        skip_driver_stacks(loop)  # once is enough: not wrapped twice
        task = loop.create_task(_nothing(), name="one")
        loop.run_until_complete(task)
        frames = task.__pw_stack_trace__  # type: ignore[attr-defined]
        assert [frame.name for frame in frames] == ["js engine"]
        assert made == ["earlier"] and task.get_name() == "one"
    finally:
        loop.close()
