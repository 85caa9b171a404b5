"""``POST /scrape`` as a business operation: check, hold, scrape, answer.

Order of checks: strict parse and validation, the key's form, the per-key rate limit (on the
key's hash), then in one transaction the key lookup, the price and residential trial, and the
hold (402 when the key's monthly cap would be passed or the balance is too low), which a request
for the language model extends by its worst case (service.scrape.model_reserve). Only once the
hold is in does the request go to the engine: a refused one (400, 401, 402, 403, 429, 503)
never enters it, so nothing is fetched.
A request with ``max_age`` may be answered from the account's recent answers after the rate
limit (service.scrape.answer_cache): its key is looked up, nothing is held or written.
The limit is keyed on the key's hash, before the key is looked up: that saves a database round
trip per refused request and changes nothing for a valid key.
"""

from __future__ import annotations

import dataclasses
import hmac
import logging
from typing import Any, NamedTuple

from sqlalchemy import Connection, select
from twisted.internet.defer import Deferred

from service.billing import keys, ledger
from service.billing.pricing import Quote, quote
from service.billing.ratelimit import RateLimiter, retry_after_seconds
from service.billing.rules import model_reserve
from service.core.config import Config
from service.core.errors import (
    RESIDENTIAL_LOCKED,
    BadRequest,
    Forbidden,
    PaymentRequired,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
    insufficient_credits,
    key_cap_reached,
)
from service.core.escalation import AUTO
from service.core.schemas import ScrapeRequest, checked_scrape, parse_json_object
from service.core.vocabulary import RESIDENTIAL, ResidentialTrial
from service.db import Database
from service.db.hot import HotConnection, hot_path
from service.db.tables import accounts
from service.scrape.answer_cache import AnswerCache, options_of
from service.scrape.engine import EngineBridge
from service.scrape.model_reserve import hold_for_model
from service.scrape.order import ScrapeOrder
from service.scrape.results import ScrapeResult
from service.scrape.sessions import SessionState, open_for_key, release_session, save_session

log = logging.getLogger(__name__)

AT_CAPACITY = "the service is at capacity, retry later"
# An amount no balance covers: PostgreSQL's authorize-and-hold then holds nothing, and the
# service refuses the request on its max_credits (see _hold_terms).
UNHOLDABLE = 2**62


class Answer(NamedTuple):
    result: ScrapeResult
    remaining: int | None  # the balance once the scrape was settled: X-Credits-Remaining


def _account_and_balance(conn: Connection, key_hash: str) -> tuple[int, int] | None:
    """The key's account and its balance, or None for an unknown key."""
    caller = keys.caller_by_hash(conn, key_hash)
    if caller is None:
        return None
    balance = conn.execute(
        select(accounts.c.balance).where(accounts.c.id == caller.account_id)
    ).scalar_one()
    return caller.account_id, int(balance)


class Scraper:
    def __init__(
        self, config: Config, database: Database, bridge: EngineBridge, limiter: RateLimiter
    ):
        self.config = config
        self.database = database
        self.bridge = bridge
        self.limiter = limiter
        self.active = 0
        self.cache = AnswerCache(
            config.cache_max_entries, config.cache_max_bytes, config.cache_max_age_seconds
        )

    def parse(self, body: bytes) -> tuple[ScrapeRequest, Any]:
        return checked_scrape(
            parse_json_object(body), self.config.countries, model=self.config.model_configured
        )

    async def authenticate(self, api_key: str | None) -> keys.Caller:
        if not api_key or not keys.well_formed(api_key):
            raise Unauthorized()
        caller = await self.database.run(keys.authenticate, api_key)
        if caller is None:
            raise Unauthorized()
        return caller

    async def scrape(
        self, api_key: str | None, body: bytes, *, request_id: str | None = None
    ) -> ScrapeResult:
        return (await self.answer(api_key, body, request_id=request_id)).result

    async def answer(
        self, api_key: str | None, body: bytes, *, request_id: str | None = None
    ) -> Answer:
        """``POST /scrape``: the result, and the account's balance once it was settled."""
        request, compiled = self.parse(body)
        if not api_key or not keys.well_formed(api_key):
            raise Unauthorized()
        # The limit keys on the key's hash, so it is checked before the database is touched;
        # the lookup, the price and the hold then share one transaction.
        key_hash = keys.hash_key(api_key)
        wait = await self.limiter.check(key_hash)
        if wait > 0:
            raise TooManyRequests(retry_after_seconds(wait))
        options = None
        if request.max_age is not None and self.cache.enabled:
            options = options_of(request)
            kept = await self._kept_answer(key_hash, options, request.max_age)
            if kept is not None:
                return kept
        session = None
        if request.session is not None:
            session = await self.open_session(
                key_hash, request.session, request.session_idle_seconds
            )
        try:
            if self.active >= self.config.max_concurrent_scrapes:
                raise ServiceUnavailable(AT_CAPACITY, retry_after=1)
            caller, job, result = await self._scrape_held(
                request, compiled, key_hash, session, request_id
            )
        except Exception:
            if session is not None and session.reserved:  # begun by this call, never used
                await self.database.run(release_session, session)
            raise
        if session is not None:
            await self.save_session(session)
        if options is not None:
            self.cache.note_key(key_hash, caller.account_id)
            self.cache.keep(caller.account_id, options, result)
        return Answer(result, job.balance_after)

    async def _scrape_held(
        self,
        request: ScrapeRequest,
        compiled: Any,
        key_hash: str,
        session: SessionState | None,
        request_id: str | None,
    ) -> tuple[keys.Caller, ScrapeOrder, ScrapeResult]:
        """The hold, the scrape and its result, counted among the scrapes in flight."""
        self.active += 1
        try:
            terms = (request.engine, request.proxy_type, request.max_credits)
            caller, price, hold_id = await self.hold(key_hash, *terms, country=request.country)
            job = ScrapeOrder.held(
                request, compiled, caller, price, hold_id, request_id=request_id, session=session
            )
            if job.asks_model:  # its worst case too, before anything is fetched
                job.model_reserve = model_reserve(self.config)
                job.hold_amount = await hold_for_model(
                    self.database,
                    hold_id,
                    price.hold,
                    job.model_reserve,
                    max_credits=request.max_credits,
                    key_cap=caller.monthly_cap,
                )
            result = await self.bridge.submit(job)
        finally:
            self.active -= 1
        return caller, job, result

    async def open_session(
        self, key_hash: str, name: str, idle: int | None, *, bounded: bool = True
    ) -> SessionState:
        """The key's session ``name`` (service.scrape.sessions), in one round trip with the
        key's lookup: a 401 for an unknown key, a 400 for an idle time over the maximum, a 409
        past the account's number of sessions (unless not ``bounded``: a job's page, whose
        job was checked when it was made); nothing is held yet."""
        if idle is not None and idle > self.config.session_max_idle_seconds:
            raise BadRequest(
                "invalid request: 'session_idle_seconds': at most "
                f"{self.config.session_max_idle_seconds}"
            )
        return await self.database.run(
            open_for_key,
            key_hash,
            name,
            idle,
            default_idle=self.config.session_idle_seconds,
            limit=self.config.sessions_per_account if bounded else None,
        )

    async def save_session(self, session: SessionState) -> None:
        """What a scrape left in ``session``, written back for its next call."""
        await self.database.run(save_session, session, self.config.session_max_bytes)

    async def _kept_answer(self, key_hash: str, options: bytes, max_age: int) -> Answer | None:
        """The account's kept answer to the same request, if young enough: free, holding and
        writing nothing; its key is still looked up (and the balance read with it)."""
        account_id = self.cache.account_of(key_hash)
        if account_id is not None and self.cache.find(account_id, options, max_age) is None:
            return None  # a known key's miss: on to the hold, as without max_age
        found = await self.database.run(_account_and_balance, key_hash)
        if found is None:
            raise Unauthorized()
        self.cache.note_key(key_hash, found[0])
        kept = self.cache.find(found[0], options, max_age)
        return None if kept is None else Answer(kept, found[1])

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
        return self.database.run_hot(
            self._authorize_and_hold, key_hash, engine, tier, max_credits, country
        )

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
        """The checks and the hold of a scrape, inside the caller's transaction (a job's page
        records its hold in the same one, service.jobs.batches); raises as ``scrape`` does."""
        return self._authorize_and_hold(conn, key_hash, engine, tier, max_credits, country)

    def _authorize_and_hold(
        self,
        conn: HotConnection,
        key_hash: str,
        engine: str,
        tier: str,
        max_credits: int | None,
        country: str | None = None,
    ) -> tuple[keys.Caller, Quote, int]:
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
