"""Limits on log-in and sign-up attempts: a sliding window of attempts per key.

A key is an email or a client address. Attempts are counted before the password is checked, so
guessing costs the same whether the guess is right or wrong, and a flood of attempts never
reaches argon2. The state is in memory, per process, like the reactor that serves it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable

# Log-in attempts per email, and per client address (a shared office is many people).
LOGIN_PER_EMAIL = (5, 60.0)
LOGIN_PER_ADDRESS = (30, 60.0)
# Every account starts with free residential trials: sign-ups from one address are scarce.
SIGNUP_PER_ADDRESS = (10, 3600.0)


class Throttle:
    def __init__(
        self,
        limit: int,
        window: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ):
        self.limit = limit
        self.window = window
        self.clock = clock
        self.max_keys = max_keys
        self._seen: dict[str, deque[float]] = {}

    def wait(self, key: str) -> float:
        """Seconds until ``key`` may try again; 0 when it may try now."""
        times = self._seen.get(key)
        if times is None:
            return 0.0
        self._forget_old(times, self.clock())
        if len(times) < self.limit:
            return 0.0
        return max(0.001, times[0] + self.window - self.clock())

    def record(self, key: str) -> None:
        moment = self.clock()
        times = self._seen.get(key)
        if times is None:
            if len(self._seen) >= self.max_keys:
                self._prune(moment)
            times = self._seen[key] = deque()
        times.append(moment)

    def _forget_old(self, times: deque[float], moment: float) -> None:
        while times and times[0] <= moment - self.window:
            times.popleft()

    def _prune(self, moment: float) -> None:
        stale = [k for k, t in self._seen.items() if not t or t[-1] <= moment - self.window]
        for key in stale:
            del self._seen[key]
        # Still full (a flood of fresh keys): drop the oldest keys rather than grow without bound.
        excess = len(self._seen) - self.max_keys + 1
        for key in list(self._seen)[: max(0, excess)]:
            del self._seen[key]


def admit(checks: Iterable[tuple[Throttle, str]]) -> float:
    """Record one attempt under every (throttle, key) if all allow it; else the seconds to wait."""
    pairs = list(checks)
    wait = max((throttle.wait(key) for throttle, key in pairs), default=0.0)
    if wait > 0:
        return wait
    for throttle, key in pairs:
        throttle.record(key)
    return 0.0
