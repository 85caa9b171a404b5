"""Per-key rate limits with GCRA (the generic cell rate algorithm).

A key may send ``burst`` requests at once and then ``rate`` per second. The in-memory limiter
serves one process; with ``SCRAPESPY_REDIS_URL`` the same algorithm runs as one atomic Redis
script so that every instance shares the limit.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from twisted.internet.defer import Deferred

log = logging.getLogger(__name__)


class RateLimiter(Protocol):
    rate: float  # requests per second, once the burst is spent
    burst: int  # requests at once

    async def check(self, key: str) -> float:
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
        self.rate = rate
        self.burst = burst
        self.interval = 1.0 / rate
        self.tolerance = self.interval * burst
        self.clock = clock
        self.max_keys = max_keys
        self._tat: dict[str, float] = {}

    async def check(self, key: str) -> float:
        return self.check_now(key)

    def check_now(self, key: str) -> float:
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


# GCRA in one atomic script; the clock is Redis's own, so instances need not agree on time.
GCRA_SCRIPT = """
local now = redis.call('TIME')
now = tonumber(now[1]) + tonumber(now[2]) / 1000000
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval
local wait = new_tat - now - tolerance
if wait > 0 then return tostring(wait) end
redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil((new_tat - now) * 1000) + 1000)
return '0'
"""


class RedisRateLimiter:
    """The same GCRA, shared by every instance through Redis (``SCRAPESPY_REDIS_URL``).

    Uses redis' asyncio client on the reactor's own event loop, so nothing blocks. When Redis
    cannot be reached the request is let through and the outage logged: the limit protects the
    service, the ledger protects the money.
    """

    def __init__(self, url: str, rate: float, burst: int, prefix: str = "scrapespy:rl:"):
        import redis.asyncio as redis

        self.client: Any = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
        self.script = self.client.register_script(GCRA_SCRIPT)
        self.rate = rate
        self.burst = burst
        self.interval = 1.0 / rate
        self.tolerance = self.interval * burst
        self.prefix = prefix
        self._last_warning = 0.0

    async def check(self, key: str) -> float:
        future = asyncio.ensure_future(
            self.script(keys=[self.prefix + key], args=[self.interval, self.tolerance])
        )
        try:
            raw = await Deferred.fromFuture(future)
        except Exception as exc:  # redis down: fail open, loudly but not on every request
            now = time.monotonic()
            if now - self._last_warning > 10:
                self._last_warning = now
                log.error("rate limiter: Redis unavailable (%s); not limiting", type(exc).__name__)
            return 0.0
        return float(raw)

    async def close(self) -> None:
        await Deferred.fromFuture(asyncio.ensure_future(self.client.aclose()))
