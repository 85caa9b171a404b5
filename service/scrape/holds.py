"""The authorize-and-hold of a scrape: the key's caller, the price and the hold, in one round trip
to the database (one transaction of SQLite's hot path, or one call of PostgreSQL's
``scrapespy_authorize_hold``), or the refusal a scrape answers (401, 402, 403).

An auto request refused only because the residential trials went to requests in flight is held
again without residential. A job's page holds inside the transaction that claims it
(:meth:`Holds.hold_in`, or :meth:`Holds.hold_params` and :meth:`Holds.authorized` on PostgreSQL).
"""

from __future__ import annotations

import dataclasses
import hmac
from typing import Any

from twisted.internet.defer import Deferred

from service.billing import keys, ledger
from service.billing.pricing import Quote, quote
from service.core.config import Config
from service.core.errors import (
    RESIDENTIAL_LOCKED,
    Forbidden,
    PaymentRequired,
    Unauthorized,
    insufficient_credits,
    key_cap_reached,
)
from service.core.escalation import AUTO
from service.core.vocabulary import RESIDENTIAL, ResidentialTrial
from service.db import Database
from service.db.hot import HotConnection, hot_path

# An amount no balance covers: PostgreSQL's authorize-and-hold then holds nothing, and the
# service refuses the request on its max_credits (see _hold_terms).
UNHOLDABLE = 2**62


class Holds:
    def __init__(self, config: Config, database: Database):
        self.config = config
        self.database = database

    def hold(
        self,
        key_hash: str,
        engine: str,
        tier: str,
        max_credits: int | None,
        *,
        country: str | None = None,
    ) -> Deferred[tuple[keys.Caller, Quote, int]]:
        """The key's caller, the price and the hold, in one round trip to the database."""
        if self.database.reactor_calls:  # PostgreSQL: one statement, on the reactor
            return self._call_authorize_hold(key_hash, engine, tier, max_credits, country=country)
        return self.database.run_hot(self.hold_in, key_hash, engine, tier, max_credits, country)

    def _call_authorize_hold(
        self,
        key_hash: str,
        engine: str,
        tier: str,
        max_credits: int | None,
        trials: bool = True,
        *,
        country: str | None = None,
    ) -> Deferred[tuple[keys.Caller, Quote, int]]:
        terms = self._hold_terms(engine, tier, max_credits, trials, country)
        params = ledger.authorize_and_hold_params(key_hash, **terms)

        def authorized(row: Any) -> Any:
            done = ledger.authorized_hold(row)
            if self._trial_taken(done, tier, trials):  # again, without residential
                return self._call_authorize_hold(
                    key_hash, engine, tier, max_credits, False, country=country
                )
            return self._authorized(done, key_hash, engine, tier, max_credits, country)

        return self.database.call("pg_authorize_hold", params).addCallback(authorized)

    def hold_params(
        self,
        key_hash: str,
        engine: str,
        tier: str,
        max_credits: int | None,
        country: str | None = None,
    ) -> dict[str, Any]:
        """PostgreSQL: the parameters of an authorize-and-hold of this price (a job's page makes
        its own, in the call that claims it: service.jobs.batches)."""
        terms = self._hold_terms(engine, tier, max_credits, country=country)
        return ledger.authorize_and_hold_params(key_hash, **terms)

    def authorized(
        self,
        row: Any,
        key_hash: str,
        engine: str,
        tier: str,
        max_credits: int | None,
        country: str | None = None,
    ) -> tuple[keys.Caller, Quote, int] | None:
        """What an authorize-and-hold made with :meth:`hold_params` answered (its row, or None
        when no key matched): the caller, the price and the hold, or raises as ``scrape``
        does; None when an auto request must be held again without a residential trial (by
        :meth:`hold`)."""
        done = ledger.authorized_hold(row)
        if self._trial_taken(done, tier, True):
            return None
        return self._authorized(done, key_hash, engine, tier, max_credits, country)

    def hold_in(
        self,
        conn: HotConnection,
        key_hash: str,
        engine: str,
        tier: str,
        max_credits: int | None,
        country: str | None = None,
    ) -> tuple[keys.Caller, Quote, int]:
        """The checks and the hold of a scrape, inside the caller's transaction (:meth:`hold`'s
        on SQLite; a job's page records its hold in the same one, service.jobs.batches);
        raises as ``scrape`` does."""
        if hot_path(conn).functions:
            return self._authorize_and_hold_in_one(
                conn, key_hash, engine, tier, max_credits, country=country
            )
        caller = keys.caller_by_hash(conn, key_hash)
        if caller is None:
            raise Unauthorized()
        while True:
            price = quote(self.config, engine, tier, caller, max_credits, country)
            try:
                hold_id = ledger.hold(
                    conn,
                    caller.account_id,
                    price.hold,
                    trial=price.trial,
                    ttl_seconds=self.config.hold_ttl_seconds,
                    key_id=caller.key_id,
                    key_cap=caller.monthly_cap,
                )
            except ledger.KeyCapReached as exc:
                raise key_cap_reached(exc.cap, exc.spent, exc.cost) from None
            except ledger.InsufficientCredits as exc:
                raise insufficient_credits(exc.cost, exc.available) from None
            except ledger.NoTrialLeft:
                if tier != AUTO:
                    raise Forbidden(RESIDENTIAL_LOCKED) from None
                # the trials went to requests in flight: auto goes without residential
                caller = dataclasses.replace(caller, residential_trials_left=0)
                continue
            keys.note_use(conn, caller)
            return caller, price, hold_id

    def _hold_terms(
        self,
        engine: str,
        tier: str,
        max_credits: int | None,
        trials: bool = True,
        country: str | None = None,
    ) -> dict[str, Any]:
        """What PostgreSQL's authorize-and-hold needs besides the key (see the ledger): the
        hold of an unlocked account (``amount``) and of one on a residential trial
        (``trial_amount``), as :func:`quote` prices them. One that is over the request's
        ``max_credits`` is :data:`UNHOLDABLE`, so the function holds nothing and
        :meth:`_authorized` refuses. ``trials`` False prices an account with none left."""
        if max_credits is None and AUTO not in (engine, tier):  # most requests: as quote prices
            costs = self.config.costs[engine]
            trial = ResidentialTrial(unlocked=False)  # what a locked account's request would be
            return {
                "residential": trial.applies(tier),
                "amount": costs[tier],
                "trial_amount": costs[trial.held_at(RESIDENTIAL)],
                "ttl_seconds": self.config.hold_ttl_seconds,
            }
        on_trial = keys.Caller(0, "", False, 1 if trials else 0, 0)
        # without trials the account is known not to be unlocked: both amounts are its price
        unlocked = keys.Caller(0, "", True, 0, 0) if trials else on_trial
        amount, _ = self._priced(engine, tier, unlocked, max_credits, country)
        trial_amount, residential = self._priced(engine, tier, on_trial, max_credits, country)
        return {
            "residential": residential,
            "amount": amount,
            "trial_amount": trial_amount,
            "ttl_seconds": self.config.hold_ttl_seconds,
        }

    def _priced(
        self,
        engine: str,
        tier: str,
        caller: keys.Caller,
        max_credits: int | None,
        country: str | None = None,
    ) -> tuple[int, bool]:
        try:
            price = quote(self.config, engine, tier, caller, max_credits, country)
        except (PaymentRequired, Forbidden):
            trial = ResidentialTrial(caller.residential_unlocked, caller.residential_trials_left)
            return UNHOLDABLE, trial.applies(tier) and trial.allows(tier)
        return price.hold, price.trial

    @staticmethod
    def _trial_taken(done: ledger.AuthorizedHold | None, tier: str, trials: bool) -> bool:
        """An auto request refused only because no residential trial was left (none at all,
        or all reserved by requests in flight): it is held again without residential."""
        return (
            trials
            and tier == AUTO
            and done is not None
            and done.hold_id is None
            and done.trial
            and done.trials_left_after <= 0
        )

    def _authorize_and_hold_in_one(
        self,
        conn: HotConnection,
        key_hash: str,
        engine: str,
        tier: str,
        max_credits: int | None,
        trials: bool = True,
        *,
        country: str | None = None,
    ) -> tuple[keys.Caller, Quote, int]:
        """PostgreSQL: the same checks and hold as above, in one round trip."""
        terms = self._hold_terms(engine, tier, max_credits, trials, country)
        done = ledger.authorize_and_hold(conn, key_hash, **terms)
        if self._trial_taken(done, tier, trials):
            return self._authorize_and_hold_in_one(
                conn, key_hash, engine, tier, max_credits, False, country=country
            )
        return self._authorized(done, key_hash, engine, tier, max_credits, country)

    def _authorized(
        self,
        done: ledger.AuthorizedHold | None,
        key_hash: str,
        engine: str,
        tier: str,
        max_credits: int | None,
        country: str | None = None,
    ) -> tuple[keys.Caller, Quote, int]:
        """The caller, the price and the hold of a PostgreSQL authorize-and-hold, or raises."""
        if done is None or not hmac.compare_digest(done.key_hash, key_hash):
            raise Unauthorized()
        caller = keys.Caller(
            done.account_id,
            key_hash,
            done.residential_unlocked,
            done.residential_trials_left,
            done.key_id,
            done.key_cap,
        )
        if tier == AUTO and not done.trial:  # held without residential: priced so
            caller = dataclasses.replace(caller, residential_trials_left=0)
        # Forbidden when no trial is left, PaymentRequired over max_credits
        price = quote(self.config, engine, tier, caller, max_credits, country)
        if (price.hold, price.trial) != (done.amount, done.trial):  # pragma: no cover - a bug
            raise RuntimeError(f"the database priced {done} where the service priced {price}")
        if done.hold_id is None:
            if price.trial and done.trials_left_after <= 0:
                raise Forbidden(RESIDENTIAL_LOCKED)
            if done.key_cap is not None and done.key_spent is not None:
                raise key_cap_reached(done.key_cap, done.key_spent, price.hold)
            raise insufficient_credits(price.hold, done.available or 0)
        return caller, price, done.hold_id
