"""GCRA: a burst, then the rate; per key; the same in memory and in Redis."""

from __future__ import annotations

import os
import uuid

import pytest
import pytest_twisted

from service.billing.ratelimit import MemoryRateLimiter, RedisRateLimiter, retry_after_seconds

REDIS_URL = os.environ.get("SCRAPESPY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_rate():
    clock = Clock()
    limiter = MemoryRateLimiter(rate=2, burst=3, clock=clock)
    assert [limiter.check_now("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.check_now("k")
    assert wait == pytest.approx(0.5)
    assert retry_after_seconds(wait) == 1
    clock.now += 0.5
    assert limiter.check_now("k") == 0.0
    assert limiter.check_now("k") > 0


def test_keys_are_independent_and_memory_is_bounded():
    clock = Clock()
    limiter = MemoryRateLimiter(rate=1, burst=1, clock=clock, max_keys=10)
    assert limiter.check_now("a") == 0.0
    assert limiter.check_now("a") > 0
    assert limiter.check_now("b") == 0.0
    for n in range(100):
        limiter.check_now(f"key{n}")
    assert len(limiter._tat) <= 10


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=0.5).ping())
    except Exception:
        return False


@pytest_twisted.ensureDeferred
async def test_redis_limiter_shares_state_between_instances():
    if not _redis_up():
        if os.environ.get("CI"):
            pytest.fail(f"Redis is not reachable at {REDIS_URL}")
        pytest.skip("Redis is not reachable")
    key = uuid.uuid4().hex
    # one token a minute: the five checks cannot outlast the refill however busy the machine
    first = RedisRateLimiter(REDIS_URL, rate=1 / 60, burst=3)
    second = RedisRateLimiter(REDIS_URL, rate=1 / 60, burst=3)
    try:
        waits = [await (first if n % 2 else second).check(key) for n in range(5)]
        assert waits[:3] == [0.0, 0.0, 0.0]
        assert all(w > 0 for w in waits[3:])
        assert await first.check(uuid.uuid4().hex) == 0.0
    finally:
        await first.close()
        await second.close()


@pytest_twisted.ensureDeferred
async def test_redis_down_lets_requests_through():
    limiter = RedisRateLimiter("redis://127.0.0.1:9/0", rate=1, burst=1)
    try:
        assert await limiter.check("k") == 0.0
        assert await limiter.check("k") == 0.0
    finally:
        await limiter.close()
