"""service.db.grouped: the calls that arrive while a transaction is in flight share the next one.

A unit test of the module: the "database" is a stand-in whose transactions the test finishes by
hand, so that what is in flight when is exact."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import Deferred

from service.db.grouped import Grouped


class Transactions:
    """``database.run`` as Grouped uses it: each call is a transaction the test ends."""

    def __init__(self) -> None:
        self.sent: list[tuple[list[Any], Deferred[Any]]] = []

    def run(self, fn: Any, args: list[Any]) -> Deferred[Any]:
        done: Deferred[Any] = Deferred()
        self.sent.append((list(args), done))
        return done

    def commit(self, index: int = -1) -> None:
        args, done = self.sent[index]
        done.callback([arg * 10 if arg >= 0 else ValueError(f"bad {arg}") for arg in args])


def outcomes(calls: list[Deferred[Any]]) -> list[Any]:
    seen: list[Any] = []
    for call in calls:
        call.addCallbacks(seen.append, lambda failure: seen.append(str(failure.value)))
    return seen


def test_the_first_call_goes_at_once_and_those_during_it_share_the_next() -> None:
    database = Transactions()
    grouped: Grouped[int, int] = Grouped(database, lambda conn, args: args)
    seen = outcomes([grouped(1), grouped(2), grouped(3)])
    assert [args for args, _ in database.sent] == [[1]]
    database.commit()
    assert seen == [10]
    assert [args for args, _ in database.sent] == [[1], [2, 3]]  # the two that waited, together
    database.commit()
    assert seen == [10, 20, 30]
    outcomes([grouped(4)])
    assert [args for args, _ in database.sent][-1] == [4]  # idle again: at once


def test_an_error_of_one_call_fails_that_call_only() -> None:
    database = Transactions()
    grouped: Grouped[int, int] = Grouped(database, lambda conn, args: args)
    first = outcomes([grouped(0)])
    seen = outcomes([grouped(5), grouped(-1), grouped(6)])
    database.commit()
    database.commit()
    assert first == [0]
    assert seen == [50, "bad -1", 60]


def test_a_failed_transaction_fails_each_of_its_calls_and_the_next_goes_on() -> None:
    database = Transactions()
    grouped: Grouped[int, int] = Grouped(database, lambda conn, args: args)
    seen = outcomes([grouped(1), grouped(2)])
    later = outcomes([grouped(3)])  # waits for the first transaction
    database.sent[0][1].errback(RuntimeError("the database went away"))
    assert seen == ["the database went away"]
    assert [args for args, _ in database.sent] == [[1], [2, 3]]
    database.commit()
    assert seen == ["the database went away", 20] and later == [30]


@pytest.mark.parametrize("most", [1, 2])
def test_a_transaction_carries_at_most_most_calls(most: int) -> None:
    database = Transactions()
    grouped: Grouped[int, int] = Grouped(database, lambda conn, args: args, most=most)
    seen = outcomes([grouped(n) for n in range(1, 6)])
    while len(seen) < 5:
        database.commit()
    assert seen == [10, 20, 30, 40, 50]
    assert all(len(args) <= most for args, _ in database.sent)


def test_hot_groups_go_through_the_hot_path() -> None:
    class Hot(Transactions):
        def run(self, fn: Any, args: list[Any]) -> Deferred[Any]:
            raise AssertionError("a hot group went through database.run")

        def run_hot(self, fn: Any, args: list[Any]) -> Deferred[Any]:
            return Transactions.run(self, fn, args)

    database = Hot()
    grouped: Grouped[int, int] = Grouped(database, lambda conn, args: args, hot=True)
    seen = outcomes([grouped(1), grouped(2)])
    database.commit()
    database.commit()
    assert seen == [10, 20]
    assert [args for args, _ in database.sent] == [[1], [2]]
