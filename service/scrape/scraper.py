"""``POST /scrape`` as a business operation: check, hold, scrape, answer.

Order of checks: strict parse and validation, the key's form, the per-key rate limit (on the
key's hash), then in one transaction the key lookup, the price and residential trial, and the
hold (402 when the key's monthly cap would be passed or the balance is too low), which a request
for the language model extends by its worst case (service.scrape.model_reserve). Only once the
hold is in does the request go to the engine: a refused one (400, 401, 402, 403, 429, 503)
never enters it, so nothing is fetched.
The key's lookup, price and hold in one round trip are service.scrape.holds.
A request with ``max_age`` may be answered from the account's recent answers after the rate
limit (service.scrape.answer_cache): its key is looked up, nothing is held or written.
The limit is keyed on the key's hash, before the key is looked up: that saves a database round
trip per refused request and changes nothing for a valid key.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from sqlalchemy import Connection, select

from service.billing import keys
from service.billing.ratelimit import RateLimiter, retry_after_seconds
from service.billing.rules import model_reserve
from service.core.config import Config
from service.core.errors import BadRequest, ServiceUnavailable, TooManyRequests, Unauthorized
from service.core.schemas import ScrapeRequest, checked_scrape, parse_json_object
from service.db import Database
from service.db.tables import accounts
from service.scrape.answer_cache import AnswerCache, options_of
from service.scrape.engine import EngineBridge
from service.scrape.holds import Holds
from service.scrape.model_reserve import hold_for_model
from service.scrape.order import ScrapeOrder
from service.scrape.results import ScrapeResult
from service.scrape.sessions import SessionState, open_for_key, release_session, save_session

log = logging.getLogger(__name__)

AT_CAPACITY = "the service is at capacity, retry later"


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
        self.holds = Holds(config, database)
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
        # a change_tracking scrape is compared with the page as it is now: never a kept answer
        tracked = "change_tracking" in request.formats
        if request.max_age is not None and self.cache.enabled and not tracked:
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
            caller, price, hold_id = await self.holds.hold(
                key_hash, *terms, country=request.country
            )
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
