"""What a request is quoted before it is scraped (its hold, or its refusal), and the public
price list. The rules themselves are service.billing.rules'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from service.billing.answers import Costs, PriceList, TierCountries
from service.billing.keys import Caller
from service.billing.rules import hold_terms
from service.core.config import Config
from service.core.errors import RESIDENTIAL_LOCKED, Forbidden, max_credits_exceeded
from service.core.escalation import AUTO, Ladder, ladder
from service.core.schemas import MIN_AMOUNT_EUR, PACKS
from service.core.vocabulary import PROXY_TIERS, ResidentialTrial

CREDITS_PER_EURO = 1000


@dataclass(frozen=True, slots=True)
class Quote:
    hold: int
    trial: bool
    costs: dict[str, int]
    ladder: Ladder | None = None  # the steps an auto request may try (service.core.escalation)


def quote(
    config: Config,
    engine: str,
    tier: str,
    caller: Caller,
    max_credits: int | None = None,
    country: str | None = None,
) -> Quote:
    """The hold is the most the request can end up billed; fallback only ever goes cheaper.

    A residential trial may fall back to a direct connection, which is billed, so its hold is
    the ``none`` cost. An account with no trial left and residential not unlocked is refused.
    A request that may cost more than its ``max_credits`` is refused; an auto request is held
    for the dearest step it may end on (service.core.escalation), and refused only when even its
    cheapest step is over ``max_credits``. An auto request's ``country`` (``location``) keeps
    its steps to the tiers that offer it.
    """
    if engine == AUTO or tier == AUTO:
        return _auto_quote(config, engine, tier, caller, max_credits, country)
    costs = config.costs[engine]
    terms = hold_terms(costs, tier, _trial_of(caller, tier))
    price = Quote(terms.amount, terms.trial, costs)
    if max_credits is not None and price.hold > max_credits:
        raise max_credits_exceeded(price.hold, max_credits)
    return price


def _auto_quote(
    config: Config,
    engine: str,
    tier: str,
    caller: Caller,
    max_credits: int | None,
    country: str | None,
) -> Quote:
    _trial_of(caller, tier)
    steps, least, trial = ladder(
        config,
        engine,
        tier,
        unlocked=caller.residential_unlocked,
        trials_left=caller.residential_trials_left,
        max_credits=max_credits,
        country=country,
    )
    if steps is None:
        assert max_credits is not None  # without a cap every step is allowed
        raise max_credits_exceeded(least, max_credits)
    first_engine = steps.first[0]
    return Quote(steps.hold, trial, steps.costs[first_engine], steps)


def _trial_of(caller: Caller, tier: str) -> ResidentialTrial:
    """``caller``'s residential trial; refused when ``tier`` needs a trial it has not left."""
    account = ResidentialTrial(caller.residential_unlocked, caller.residential_trials_left)
    if not account.allows(tier):
        raise Forbidden(RESIDENTIAL_LOCKED)
    return account


def price_list(config: Config) -> PriceList:
    return {
        "currency": "EUR",
        "credits_per_euro": CREDITS_PER_EURO,
        "packs": list(PACKS),
        "min_amount_eur": MIN_AMOUNT_EUR,
        # keyed by every engine, then every tier (service.core.config checks them)
        "costs": cast(Costs, config.costs),
        "map_credits": config.map_credits,
        "document_pages_per_block": config.document_pages_per_block,
        "countries": cast(
            TierCountries, {tier: list(config.countries[tier]) for tier in PROXY_TIERS}
        ),
        "search": (
            {"credits": config.search_credits, "backend": config.search_backend}
            if config.search_backend
            else None
        ),
    }
