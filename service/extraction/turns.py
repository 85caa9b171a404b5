"""The order in which waiting pages get an extraction worker: fair between accounts, and a
caller waiting on ``POST /scrape`` before any job's page.

In one queue, six hostile pages of one caller held both workers while another caller's page
waited behind them until its scrape ran out of time; and a batch's pages, arriving by the
hundred, delayed every synchronous scrape. Here each account has a lane: the next page is the
first of the account with the fewest pages at a worker, and among equals of the one served
longest ago (round robin); the lanes of pages a caller waits on go first, a job's pages
(``background``) when none of those wait. The pool says when a page it took leaves its worker
(:meth:`Turns.done`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, Protocol, TypeVar

__all__ = ["Turns"]


class Waiting(Protocol):
    account: int | None
    background: bool


T = TypeVar("T", bound=Waiting)


class Turns(Generic[T]):
    """Pages by account, taken in turns, the ones a caller waits on first."""

    __slots__ = ("_busy", "_lanes", "_served", "_size", "_turn")

    def __init__(self) -> None:
        # [waited on, background]: account -> its pages, in arrival order
        self._lanes: tuple[dict[int | None, deque[T]], ...] = ({}, {})
        self._size = 0
        self._busy: dict[int | None, int] = {}  # account -> its pages at a worker
        # account -> when it was last given a worker, while it has a page waiting or at one
        self._served: dict[int | None, int] = {}
        self._turn = 0

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[T]:
        for lanes in self._lanes:
            for lane in lanes.values():
                yield from lane

    def append(self, task: T) -> None:
        lanes = self._lanes[task.background]
        lane = lanes.get(task.account)
        if lane is None:
            lane = lanes[task.account] = deque()
        lane.append(task)
        self._size += 1

    def popleft(self) -> T:
        """The next page: the first of the account whose turn it is."""
        task = self.take()
        assert task is not None, "popleft from no pages"
        return task

    def take(self, fits: Callable[[T], bool] | None = None) -> T | None:
        """The next page that ``fits`` (the pool's rule for the worker it has free): the first
        of the account whose turn it is among those whose next page fits; None if none does."""
        busy, served = self._busy, self._served
        for lanes in self._lanes:
            candidates = [name for name, lane in lanes.items() if fits is None or fits(lane[0])]
            if candidates:
                break
        else:
            return None
        if len(candidates) == 1:
            account = candidates[0]
        else:
            account = min(candidates, key=lambda name: (busy.get(name, 0), served.get(name, -1)))
        lane = lanes[account]
        task = lane.popleft()
        if not lane:
            del lanes[account]
        busy[account] = busy.get(account, 0) + 1
        self._turn += 1
        served[account] = self._turn
        self._size -= 1
        return task

    def done(self, task: T) -> None:
        """``task``, which :meth:`popleft` gave, has left its worker."""
        account = task.account
        left = self._busy.get(account, 0) - 1
        if left > 0:
            self._busy[account] = left
            return
        self._busy.pop(account, None)
        if all(account not in lanes for lanes in self._lanes):
            self._served.pop(account, None)

    def put_back(self, tasks: Iterable[T]) -> None:
        """Pages that were handed out and are taken back, in order: each goes first again."""
        for task in reversed(list(tasks)):
            self.done(task)
            lanes = self._lanes[task.background]
            lane = lanes.get(task.account)
            if lane is None:
                lane = lanes[task.account] = deque()
            lane.appendleft(task)
            self._served[task.account] = -1  # its turn again: it had been given one
            self._size += 1
