"""What a scrape costs, what is held for it, and the public price list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.config import Config
from service.errors import RESIDENTIAL_LOCKED, Forbidden
from service.keys import Caller
from service.schemas import MIN_AMOUNT_EUR, PACKS

CREDITS_PER_EURO = 1000


@dataclass(frozen=True, slots=True)
class Quote:
    hold: int
    trial: bool
    costs: dict[str, int]


def quote(config: Config, engine: str, tier: str, caller: Caller) -> Quote:
    """The hold is the most the request can end up billed; fallback only ever goes cheaper.

    A residential trial may fall back to a direct connection, which is billed, so its hold is
    the ``none`` cost. An account with no trial left and residential not unlocked is refused.
    """
    costs = config.costs[engine]
    if tier == "residential" and not caller.residential_unlocked:
        if caller.residential_trials_left <= 0:
            raise Forbidden(RESIDENTIAL_LOCKED)
        return Quote(costs["none"], True, costs)
    return Quote(costs[tier], False, costs)


def price_list(config: Config) -> dict[str, Any]:
    return {
        "currency": "EUR",
        "credits_per_euro": CREDITS_PER_EURO,
        "packs": list(PACKS),
        "min_amount_eur": MIN_AMOUNT_EUR,
        "costs": config.costs,
    }
