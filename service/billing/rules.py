"""The billing rules: what a scrape costs, what is held for it and what settling it does.

Pure: no database, no I/O. Each rule returns plain data, and the storage executes it: on SQLite
the statements of service.db.hot (service.billing.holds, service.billing.settlement), on
PostgreSQL the functions of service/db/sql, which receive the amounts computed here. What those
functions still decide themselves, because it reads the hold's row in the statement that claims
it (whether a trial comes back, the two entries' balances), is :func:`settlement_plan`'s rule,
and docs/decisions/0003-billing-rules.md says why it stays there; tests/test_billing_backends.py
runs the same sequences through both databases and compares what they did.

- The hold (:func:`hold_terms`) is the most a request can be billed: its tier's cost, or for a
  residential trial the direct (``none``) cost, since only a fallback to a direct connection is
  billed. A request for the language model holds :func:`model_reserve` more.
- The charge (:func:`charge`): nothing unless the scrape succeeded unblocked; else the cost of
  the tier actually used, once per started block of a document's pages, plus what the language
  model's tokens cost. A residential trial through the residential pool costs only the model,
  and uses the trial up.
- The settlement (:func:`settlement_plan`) captures the charge from the hold, at most the hold,
  frees all of the hold, and gives a trial the hold reserved back unless it was used up. The
  charge is a ledger entry of kind ``scrape``, its language model share one of kind
  ``extraction`` after it.
- The refund (:func:`refund_plan`) gives back what a settlement charged, by the same kinds, and
  the trial it used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from service.core.config import Config
from service.core.vocabulary import ResidentialTrial
from service.extraction.model_schema import most_tokens

# ledger entry kinds of a scrape's charge: the page's price, then the language model's share
SCRAPE = "scrape"
EXTRACTION = "extraction"
# what a settled hold becomes: something was charged or a trial used, or nothing
CAPTURED = "captured"
RELEASED = "released"


@dataclass(frozen=True, slots=True)
class HoldTerms:
    """What to hold for a request: ``amount`` credits, and one residential trial when ``trial``."""

    amount: int
    trial: bool


def hold_terms(costs: Mapping[str, int], tier: str, account: ResidentialTrial) -> HoldTerms:
    """The hold of a request at ``tier`` whose engine's costs by tier are ``costs``."""
    return HoldTerms(costs[account.held_at(tier)], account.applies(tier))


@dataclass(frozen=True, slots=True)
class Charge:
    """What a settlement captures: ``cost`` credits, and whether the trial held is used up."""

    cost: int
    consume_trial: bool = False


NOTHING = Charge(0)


def charge(
    *,
    success: bool,
    blocked: bool,
    trial: bool,
    tier_used: str,
    prices: Mapping[str, int],
    blocks: int = 1,
    model: int = 0,
) -> Charge:
    """The charge of a scrape that ended at ``tier_used``; ``prices``: its engine's cost by tier.

    ``trial``: the hold reserved a residential trial. ``blocks``: a document's started blocks of
    pages. ``model``: what the language model's tokens cost (:func:`model_credits`).
    """
    if not success or blocked:
        return NOTHING
    if ResidentialTrial.used_up(trial, tier_used):
        return Charge(model, True)
    return Charge(prices[tier_used] * blocks + model)


def extraction_share(cost: int, extraction_credits: int | None) -> int:
    """Of ``cost``, the language model's share: an entry of its own, never more than ``cost``."""
    return min(max(extraction_credits or 0, 0), cost)


def settled_status(cost: int, consume_trial: bool) -> str:
    """What a hold becomes when it is settled with ``cost`` (0 releases it)."""
    return CAPTURED if cost or consume_trial else RELEASED


@dataclass(frozen=True, slots=True)
class Entry:
    """One ledger entry: ``amount`` credits (negative: charged) of ``kind``."""

    kind: str
    amount: int


@dataclass(frozen=True, slots=True)
class SettlementPlan:
    """What settling a hold does to its account: the hold's whole ``release`` leaves what is
    held, ``charged`` leaves the balance, ``trial_back`` trials come back, and the ``entries``
    record the charge, in this order."""

    status: str
    charged: int
    trial_consumed: bool
    release: int
    trial_back: int
    entries: tuple[Entry, ...]

    def balances_after(self, balance_after: int) -> tuple[int, ...]:
        """Each entry's ``balance_after`` when the settlement leaves ``balance_after``: the
        entries are applied one after the other, so the last one ends there."""
        afters = []
        left = balance_after
        for entry in reversed(self.entries):
            afters.append(left)
            left -= entry.amount
        return tuple(reversed(afters))


def settlement_plan(
    *,
    held: int,
    held_trial: bool,
    cost: int,
    consume_trial: bool,
    extraction_credits: int | None = 0,
) -> SettlementPlan:
    """Settling a hold of ``held`` credits (and a trial when ``held_trial``) with ``cost``.

    Raises ValueError when ``cost`` is more than was held: the hold is extended first
    (service.billing.holds.extend_hold), never overdrawn.
    """
    if cost > held:
        raise ValueError(f"cost {cost} exceeds hold {held}")
    consumed = consume_trial and held_trial
    extraction = extraction_share(cost, extraction_credits)
    entries = tuple(
        Entry(kind, -amount)
        for kind, amount in ((SCRAPE, cost - extraction), (EXTRACTION, extraction))
        if amount
    )
    return SettlementPlan(
        status=settled_status(cost, consume_trial),
        charged=cost,
        trial_consumed=consumed,
        release=held,
        trial_back=1 if held_trial and not consumed else 0,
        entries=entries,
    )


@dataclass(frozen=True, slots=True)
class RefundPlan:
    """Giving back a settlement's charge: ``credits`` in all, by ``entries`` (each the kind of
    the entry it gives back), and ``trial_back`` trials."""

    credits: int
    trial_back: int
    entries: tuple[Entry, ...]


def refund_plan(*, credits: int, extraction_credits: int, trial: bool) -> RefundPlan:
    """Giving back a charge of ``credits``, ``extraction_credits`` of them the language
    model's, that used a residential trial when ``trial``."""
    entries = tuple(
        Entry(kind, amount)
        for kind, amount in (
            (SCRAPE, credits - extraction_credits),
            (EXTRACTION, extraction_credits),
        )
        if amount > 0
    )
    return RefundPlan(credits, 1 if trial else 0, entries)


def model_credits(config: Config, tokens: int) -> int:
    """What ``tokens`` of the operator's language model cost: its rate per started 1,000."""
    return -(-tokens // 1000) * config.llm_credits_per_1k_tokens


def model_reserve(config: Config) -> int:
    """What a scrape that asks the language model holds on top of its page's price: the cost
    of the most tokens one extraction may use (service.extraction.model_schema.most_tokens),
    which is also the most it is billed for them."""
    return model_credits(
        config, most_tokens(config.llm_max_input_tokens, config.llm_max_output_tokens)
    )
