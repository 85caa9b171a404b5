"""Calls that share a transaction: those that arrive while the one before is in flight.

A job's pages each make two small transactions (the claim with its hold, the stored result).
Made one by one, their fixed costs (the hand-off to a database thread and back, BEGIN, COMMIT,
on PostgreSQL a round trip each) cost a batch more than its pages' own statements. A
:class:`Grouped` sends the first call at once and gathers the calls that come while it runs
into the next transaction: nothing waits for a timer, and under load the transactions carry
many pages each. An error that fails the transaction fails each call of the group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

A = TypeVar("A")
R = TypeVar("R")


class Grouped(Generic[A, R]):
    """``fn(connection, [arg, ...]) -> [result, ...]`` (one result for each argument, in their
    order; a result that is an exception fails its own call only), run by ``database.run``
    (``hot``: ``database.run_hot``, whose ``fn`` gets the driver's connection) for the calls
    that arrived while the transaction before was in flight, ``most`` at a time."""

    def __init__(
        self,
        database: Any,
        fn: Callable[[Any, list[A]], list[Any]],
        most: int = 64,
        hot: bool = False,
    ):
        self.database = database
        self.fn = fn
        self.most = most
        self.hot = hot
        self._waiting: list[tuple[A, Deferred[R]]] = []
        self._busy = False

    def __call__(self, arg: A) -> Deferred[R]:
        done: Deferred[R] = Deferred()
        self._waiting.append((arg, done))
        if not self._busy:
            self._send()
        return done

    def _send(self) -> None:
        group, self._waiting = self._waiting[: self.most], self._waiting[self.most :]
        self._busy = True
        run = self.database.run_hot if self.hot else self.database.run
        sent = run(self.fn, [arg for arg, _ in group])
        sent.addCallbacks(self._answer, self._fail, (group,), None, (group,))
        sent.addBoth(self._next)

    @staticmethod
    def _answer(results: list[Any], group: list[tuple[A, Deferred[R]]]) -> None:
        for (_, done), result in zip(group, results, strict=True):
            if isinstance(result, BaseException):
                done.errback(Failure(result))
            else:
                done.callback(result)

    @staticmethod
    def _fail(failure: Failure, group: list[tuple[A, Deferred[R]]]) -> None:
        for _, done in group:
            done.errback(failure)

    def _next(self, _: Any) -> None:
        self._busy = False
        if self._waiting:
            self._send()
