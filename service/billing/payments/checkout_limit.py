"""How many checkouts an account may start: ten at once, then one every six seconds.

Every checkout is a pending payment here and, with Stripe, a Checkout Session on the operator's
Stripe account: a script looping on ``POST /credits/buy`` must not make thousands of either. The
API and the dashboard's buy form both start checkouts through the provider's ``start_checkout``,
which asks this limit before anything else, so a refused checkout records nothing and sends
nothing to the provider. The limit is the scrape limit's GCRA (``service.billing.ratelimit``): in
memory per process, or shared by every instance through Redis when ``SCRAPESPY_REDIS_URL`` is set.
"""

from __future__ import annotations

from service.billing.ratelimit import (
    MemoryRateLimiter,
    RateLimiter,
    RedisRateLimiter,
    retry_after_seconds,
)
from service.core.config import Config
from service.core.errors import ApiError

CHECKOUTS_PER_MINUTE = 10
REDIS_PREFIX = "scrapespy:checkouts:"


class TooManyCheckouts(ApiError):
    status = 429
    code = "rate_limited"
    message = "too many checkout sessions, retry later"

    def __init__(self, retry_after: int):
        super().__init__(
            f"too many checkout sessions for this account, retry later (in {retry_after} s)",
            headers={"Retry-After": str(retry_after)},
        )
        self.retry_after = retry_after


class CheckoutLimit:
    def __init__(self, limiter: RateLimiter):
        self.limiter = limiter

    @classmethod
    def from_config(cls, config: Config) -> CheckoutLimit:
        rate = CHECKOUTS_PER_MINUTE / 60.0
        if config.redis_url:
            shared = RedisRateLimiter(
                config.redis_url, rate, CHECKOUTS_PER_MINUTE, prefix=REDIS_PREFIX
            )
            return cls(shared)
        return cls(MemoryRateLimiter(rate, CHECKOUTS_PER_MINUTE))

    async def admit(self, account_id: int) -> None:
        """Count one checkout for the account; TooManyCheckouts (429) when over the limit."""
        wait = await self.limiter.check(str(account_id))
        if wait > 0:
            raise TooManyCheckouts(retry_after_seconds(wait))
