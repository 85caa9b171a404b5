"""What an ``auto`` request may try, in which order, and the most each step can bill.

``proxy_type: "auto"`` climbs the tiers: direct, then datacenter, then residential, each only
when the operator has a pool for it, residential only for an account that may use it (unlocked,
or with a residential trial left). ``engine: "auto"`` starts ``static`` and may switch to ``js``
at the tier it is on. A step is an (engine, tier) pair; its price is the most it can be billed:
its cost, or for a residential trial the ``none`` cost (a trial is free through the pool and
billed direct after a fallback). Steps over the request's ``max_credits`` are left out, so they
are never tried; the hold is the highest price left (``service.billing.pricing.quote``), which
covers whatever step the request ends on. ``middlewares.escalation`` walks the ladder.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.core.config import Config
from service.core.errors import RESIDENTIAL_LOCKED, Forbidden
from service.core.vocabulary import AUTO, DIRECT, ENGINES, PROXY_TIERS, TIERS, ResidentialTrial

__all__ = ["AUTO", "Ladder", "ladder"]


@dataclass(frozen=True, slots=True)
class Ladder:
    engines: tuple[str, ...]
    tiers: tuple[str, ...]
    prices: dict[tuple[str, str], int]  # (engine, tier) -> the most it bills; the steps allowed
    costs: dict[str, dict[str, int]]  # engine -> tier -> credits, what billing charges

    @property
    def hold(self) -> int:
        return max(self.prices.values())

    @property
    def first(self) -> tuple[str, str]:
        """The first step: the first engine's cheapest tier (the other engine's if none)."""
        return next(step for step in self.prices)

    def next_tier(self, engine: str, tier: str) -> str | None:
        """The tier after ``tier`` that ``engine`` may be tried on, if any."""
        later = self.tiers[self.tiers.index(tier) + 1 :] if tier in self.tiers else ()
        return next((t for t in later if (engine, t) in self.prices), None)

    def renders_at(self, tier: str) -> bool:
        """Whether a static answer at ``tier`` may be rendered again with ``js``."""
        return len(self.engines) > 1 and ("js", tier) in self.prices


def ladder(
    config: Config,
    engine: str,
    tier: str,
    *,
    unlocked: bool,
    trials_left: int,
    max_credits: int | None,
    country: str | None = None,
) -> tuple[Ladder | None, int, bool]:
    """The ladder of a request with ``engine`` or ``tier`` auto, for an account in that state.

    With a ``country`` (``location``), auto climbs only the proxy tiers that offer it: never
    direct, which is not in the country (service.core.places); none the account may use is a
    403, as residential is.

    Returns (the ladder, or None when every step is over ``max_credits``; the least a step
    could bill, for the refusal's message; whether a residential trial is reserved).
    """
    account = ResidentialTrial(unlocked, trials_left)
    engines: tuple[str, ...] = ENGINES if engine == AUTO else (engine,)
    if tier == AUTO and country is not None:
        offered = config.countries
        tiers: tuple[str, ...] = tuple(
            t for t in PROXY_TIERS if country in offered[t] and account.allows(t)
        )
        if not tiers:
            raise Forbidden(RESIDENTIAL_LOCKED)
    elif tier == AUTO:
        tiers = tuple(
            t for t in TIERS if (t == DIRECT or config.proxies_of(t)) and account.allows(t)
        )
    else:
        tiers = (tier,)
    every = {(e, t): config.costs[e][account.held_at(t)] for e in engines for t in tiers}
    prices = {
        step: price for step, price in every.items() if max_credits is None or price <= max_credits
    }
    least = min(every.values())
    if not prices:
        return None, least, False
    costs = {e: config.costs[e] for e in engines}
    reserves_trial = any(account.applies(t) for _, t in prices)
    return Ladder(engines, tiers, prices, costs), least, reserves_trial
