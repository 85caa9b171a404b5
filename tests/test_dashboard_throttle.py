"""The log-in and sign-up throttle: a sliding window per key, on a clock the test moves."""

from __future__ import annotations

import pytest

from service.dashboard.throttle import Throttle, admit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_sixth_attempt_in_a_minute_waits_for_the_oldest_to_leave_the_window():
    clock = Clock()
    throttle = Throttle(5, 60.0, clock=clock)
    for second in range(5):
        clock.now = 1000.0 + second
        assert admit([(throttle, "a@example.com")]) == 0
    clock.now = 1010.0
    assert admit([(throttle, "a@example.com")]) == pytest.approx(50.0)
    clock.now = 1060.0
    assert admit([(throttle, "a@example.com")]) == 0
    assert admit([(throttle, "a@example.com")]) == pytest.approx(1.0)


def test_keys_are_counted_apart():
    clock = Clock()
    throttle = Throttle(2, 60.0, clock=clock)
    assert admit([(throttle, "a")]) == 0
    assert admit([(throttle, "a")]) == 0
    assert admit([(throttle, "a")]) > 0
    assert admit([(throttle, "b")]) == 0


def test_a_refused_attempt_is_recorded_nowhere():
    clock = Clock()
    per_email = Throttle(5, 60.0, clock=clock)
    per_address = Throttle(2, 60.0, clock=clock)
    assert admit([(per_email, "a"), (per_address, "10.0.0.1")]) == 0
    assert admit([(per_email, "b"), (per_address, "10.0.0.1")]) == 0
    # the address is spent: a third email from it is refused, and not counted for that email
    assert admit([(per_email, "c"), (per_address, "10.0.0.1")]) > 0
    for _ in range(5):
        assert admit([(per_email, "c"), (per_address, f"10.0.0.{_ + 2}")]) == 0
    assert admit([(per_email, "c"), (per_address, "10.0.0.99")]) > 0


def test_memory_stays_bounded_under_a_flood_of_keys():
    clock = Clock()
    throttle = Throttle(5, 60.0, clock=clock, max_keys=100)
    for n in range(1000):
        clock.now += 0.01
        admit([(throttle, f"key{n}")])
    assert len(throttle._seen) <= 100
    # stale keys go first: after the window, a flood leaves only fresh keys
    clock.now += 120
    for n in range(100):
        admit([(throttle, f"fresh{n}")])
    assert all(key.startswith("fresh") for key in throttle._seen)
