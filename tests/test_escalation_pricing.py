"""Tests for service.core.escalation and service.billing.pricing.quote: what auto may try, what is
held, and
what PostgreSQL's authorize-and-hold is sent (service.scrape.holds), no database."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from service.billing.keys import Caller
from service.billing.pricing import quote
from service.core.config import Config
from service.core.errors import Forbidden, PaymentRequired
from service.scrape.holds import UNHOLDABLE
from service.scrape.scraper import Scraper

POOLS = {"proxies_datacenter": ["http://dc:3128"], "proxies_residential": ["http://resi:8000"]}
UNLOCKED = Caller(1, "h", True, 0, 1)
ON_TRIAL = Caller(1, "h", False, 3, 1)
NO_TRIAL = Caller(1, "h", False, 0, 1)


def config(**changes: Any) -> Config:
    return dataclasses.replace(Config(), **{**POOLS, **changes})


def test_proxy_auto_climbs_every_pool_and_holds_the_dearest() -> None:
    price = quote(config(), "static", "auto", UNLOCKED)
    assert price.ladder is not None and (price.hold, price.trial) == (10, False)
    assert price.ladder.first == ("static", "none")
    assert price.ladder.next_tier("static", "none") == "datacenter"
    assert price.ladder.next_tier("static", "datacenter") == "residential"
    assert price.ladder.next_tier("static", "residential") is None
    assert not price.ladder.renders_at("none")


def test_tiers_without_a_pool_are_skipped() -> None:
    price = quote(config(proxies_datacenter=[]), "static", "auto", UNLOCKED)
    assert price.ladder is not None and price.ladder.tiers == ("none", "residential")
    assert price.ladder.next_tier("static", "none") == "residential"
    price = quote(config(proxies_datacenter=[], proxies_residential=[]), "js", "auto", UNLOCKED)
    assert price.ladder is not None and price.hold == 5 and price.ladder.tiers == ("none",)


def test_residential_only_for_an_account_that_may_use_it() -> None:
    trial = quote(config(), "static", "auto", ON_TRIAL)
    # A trial is free through the pool and billed direct after a fallback: datacenter is dearest.
    assert (trial.hold, trial.trial) == (2, True)
    assert trial.ladder is not None and trial.ladder.tiers[-1] == "residential"
    locked = quote(config(), "static", "auto", NO_TRIAL)  # no 403: auto just stops earlier
    assert (locked.hold, locked.trial) == (2, False)
    assert locked.ladder is not None and locked.ladder.tiers == ("none", "datacenter")


def test_engine_auto_holds_js_and_may_render_at_each_tier() -> None:
    price = quote(config(), "auto", "none", UNLOCKED)
    assert price.ladder is not None and (price.hold, price.costs) == (5, Config().costs["static"])
    assert price.ladder.renders_at("none") and price.ladder.next_tier("static", "none") is None
    both = quote(config(), "auto", "auto", UNLOCKED)
    assert both.hold == 25


def test_max_credits_leaves_out_the_steps_over_it() -> None:
    price = quote(config(), "auto", "auto", UNLOCKED, max_credits=6)
    assert price.ladder is not None and price.hold == 6
    assert price.ladder.next_tier("static", "datacenter") is None  # residential is 10
    assert price.ladder.renders_at("datacenter") and not price.ladder.renders_at("residential")
    price = quote(config(), "auto", "none", UNLOCKED, max_credits=4)
    assert price.ladder is not None and price.hold == 1 and not price.ladder.renders_at("none")


@pytest.mark.parametrize(
    ("engine", "tier", "cap", "least"),
    [
        ("js", "none", 4, 5),
        ("static", "residential", 9, 10),
        ("static", "auto", 0, 1),
        ("auto", "auto", 0, 1),
    ],
)
def test_a_cap_under_the_least_price_is_a_402(engine: str, tier: str, cap: int, least: int) -> None:
    with pytest.raises(PaymentRequired) as refused:
        quote(config(), engine, tier, UNLOCKED, max_credits=cap)
    assert refused.value.code == "max_credits_exceeded"
    assert f"may cost {least} credits" in refused.value.message
    assert f"max_credits of {cap}" in refused.value.message


def test_requests_without_auto_are_priced_as_before() -> None:
    assert quote(config(), "static", "datacenter", UNLOCKED) == quote(
        config(), "static", "datacenter", UNLOCKED, max_credits=2
    )
    price = quote(config(), "js", "residential", ON_TRIAL, max_credits=5)
    assert (price.hold, price.trial, price.ladder) == (5, True, None)
    with pytest.raises(Forbidden):
        quote(config(), "static", "residential", NO_TRIAL)


def what_postgresql_holds(terms: dict[str, Any], caller: Caller) -> tuple[int, bool] | None:
    """scrapespy_authorize_hold's choice (migration 0003), or None when it refuses a trial."""
    trial = terms["residential"] and not caller.residential_unlocked
    if trial and caller.residential_trials_left <= 0:
        return None
    return (terms["trial_amount"] if trial else terms["amount"]), trial


@pytest.mark.parametrize("engine", ["static", "js", "auto"])
@pytest.mark.parametrize("tier", ["none", "datacenter", "residential", "auto"])
@pytest.mark.parametrize("cap", [None, 0, 2, 5, 6, 10, 25])
@pytest.mark.parametrize(
    "caller", [UNLOCKED, ON_TRIAL, NO_TRIAL], ids=["unlocked", "trial", "no-trial"]
)
def test_postgresql_is_sent_what_quote_prices(
    engine: str, tier: str, cap: int | None, caller: Caller
) -> None:
    scraper = Scraper(config(), None, None, None)  # type: ignore[arg-type]
    held = what_postgresql_holds(scraper.holds._hold_terms(engine, tier, cap), caller)
    if held is None and tier == "auto":  # no trial after all: held again without residential
        held = what_postgresql_holds(scraper.holds._hold_terms(engine, tier, cap, False), caller)
        caller = dataclasses.replace(caller, residential_trials_left=0)
    try:
        price = quote(config(), engine, tier, caller, cap)
    except Forbidden:
        assert held is None
        return
    except PaymentRequired:
        assert held is not None and held[0] == UNHOLDABLE
        return
    assert held == (price.hold, price.trial)


PLACED = {
    "proxies_datacenter": ["de=http://dc:3128", "http://any:3128"],
    "proxies_residential": ["de=http://resi:8000", "jp=http://jp:8000"],
}


def test_auto_with_a_country_climbs_only_the_tiers_that_offer_it() -> None:
    placed = config(**PLACED)
    de = quote(placed, "static", "auto", UNLOCKED, country="de")
    assert de.ladder is not None and de.ladder.tiers == ("datacenter", "residential")
    assert de.ladder.first == ("static", "datacenter") and de.hold == 10  # never direct
    jp = quote(placed, "js", "auto", UNLOCKED, country="jp")
    assert jp.ladder is not None and jp.ladder.tiers == ("residential",) and jp.hold == 25
    trial = quote(placed, "static", "auto", ON_TRIAL, country="jp")
    assert (trial.hold, trial.trial) == (1, True)  # a trial holds the direct price
    with pytest.raises(Forbidden):  # the only tier in Japan is closed to this account
        quote(placed, "static", "auto", NO_TRIAL, country="jp")
    capped = quote(placed, "static", "auto", UNLOCKED, max_credits=5, country="de")
    assert capped.ladder is not None and capped.ladder.tiers == ("datacenter", "residential")
    assert capped.hold == 2 and capped.ladder.next_tier("static", "datacenter") is None
    with pytest.raises(PaymentRequired):  # direct (1) is no step of a country's ladder
        quote(placed, "static", "auto", UNLOCKED, max_credits=1, country="de")


@pytest.mark.parametrize("country", ["de", "jp"])
@pytest.mark.parametrize("cap", [None, 1, 2, 10])
@pytest.mark.parametrize(
    "caller", [UNLOCKED, ON_TRIAL, NO_TRIAL], ids=["unlocked", "trial", "no-trial"]
)
def test_postgresql_is_sent_what_quote_prices_for_a_country(
    country: str, cap: int | None, caller: Caller
) -> None:
    placed = config(**PLACED)
    scraper = Scraper(placed, None, None, None)  # type: ignore[arg-type]
    held = what_postgresql_holds(
        scraper.holds._hold_terms("static", "auto", cap, True, country), caller
    )
    if held is None:  # no trial after all: held again without residential
        terms = scraper.holds._hold_terms("static", "auto", cap, False, country)
        held = what_postgresql_holds(terms, caller)
        caller = dataclasses.replace(caller, residential_trials_left=0)
    try:
        price = quote(placed, "static", "auto", caller, cap, country)
    except (Forbidden, PaymentRequired):
        assert held is not None and held[0] == UNHOLDABLE  # nothing is held, then refused
        return
    assert held == (price.hold, price.trial)
