"""Per-key rate limits with GCRA (the generic cell rate algorithm).

A key may send ``burst`` requests at once and then ``rate`` per second. The in-memory limiter
serves one process; with ``SCRAPESPY_REDIS_URL`` the same algorithm runs as one atomic Redis
script so that every instance shares the limit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol


class RateLimiter(Protocol):
    def check(self, key: str) -> float:
        """0 when the request may go ahead, else the seconds to wait before retrying."""
        ...


class MemoryRateLimiter:
    def __init__(
        self,
        rate: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ):
        self.interval = 1.0 / rate
        self.tolerance = self.interval * burst
        self.clock = clock
        self.max_keys = max_keys
        self._tat: dict[str, float] = {}

    def check(self, key: str) -> float:
        now = self.clock()
        tat = max(self._tat.get(key, now), now)
        new_tat = tat + self.interval
        wait = new_tat - now - self.tolerance
        if wait > 0:
            return wait
        if key not in self._tat and len(self._tat) >= self.max_keys:
            self._prune(now)
        self._tat[key] = new_tat
        return 0.0

    def _prune(self, now: float) -> None:
        for key in [k for k, tat in self._tat.items() if tat <= now]:
            del self._tat[key]
        while len(self._tat) >= self.max_keys:
            del self._tat[next(iter(self._tat))]


def retry_after_seconds(wait: float) -> int:
    return max(1, math.ceil(wait))
