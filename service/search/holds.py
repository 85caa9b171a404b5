"""What a search holds before its backend is asked, and how it gives back what it did not use.

A search's worst case is its own price (``SCRAPESPY_SEARCH_CREDITS``) and, when its web results
are to be scraped, ``limit`` scrapes at the price ``POST /scrape`` would hold for each. All of it
is held in one transaction before the backend is asked: one hold for the search, and one hold
per result to scrape, each the very hold a scrape makes (service.scrape.holds), so that each
result's scrape is settled by the pipelines as any scrape is and the ledger needs no new rule.
The balance is checked against the whole worst case first, so that the 402 names it.

``scrape.max_credits`` bounds the whole call: each result's scrape gets an equal share of what
is left after the search's price, and is held (and may end, for ``auto``) within it.

Once the backend answered, the search's hold is captured (its price, a ledger entry of kind
``scrape`` with a usage row whose engine is ``search``), or released when no result came back,
and the holds of results that will not be scraped (fewer results than ``limit``) are released,
in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from service.billing import keys, ledger
from service.billing.pricing import Quote, quote
from service.core.config import Config
from service.core.errors import (
    Unauthorized,
    insufficient_credits,
    key_cap_reached,
    max_credits_exceeded,
)
from service.core.schemas import ScrapeRequest
from service.db import Database
from service.db.hot import HotConnection, cursor, hot_path
from service.db.tables import UsageRow
from service.scrape.holds import Holds

SEARCH_ENGINE = "search"  # the usage row's engine of a search's own charge


@dataclass(slots=True)
class SearchHolds:
    caller: keys.Caller
    search_hold: int
    price: Quote | None = None  # each result's scrape's, when results are scraped
    scrape_holds: list[int] = field(default_factory=list)


def page_share(max_credits: int | None, search_credits: int, pages: int) -> int | None:
    """Each result's scrape's ``max_credits``: an equal share of what the whole call may cost
    after the search's own price; a 402 when that does not even pay the search."""
    if max_credits is None or pages == 0:
        return None
    if max_credits < search_credits:
        raise max_credits_exceeded(search_credits, max_credits)
    return (max_credits - search_credits) // pages


class SearchLedger:
    def __init__(self, config: Config, database: Database) -> None:
        self.config = config
        self.database = database
        self.holds = Holds(config, database)

    async def hold(
        self, key_hash: str, scrape: ScrapeRequest | None, pages: int, share: int | None
    ) -> SearchHolds:
        return await self.database.run_hot(self._hold, key_hash, scrape, pages, share)

    def _hold(
        self,
        conn: HotConnection,
        key_hash: str,
        scrape: ScrapeRequest | None,
        pages: int,
        share: int | None,
    ) -> SearchHolds:
        caller = keys.caller_by_hash(conn, key_hash)
        if caller is None:
            raise Unauthorized()
        search_credits = self.config.search_credits
        price = None
        worst = search_credits
        if scrape is not None and pages:
            terms = (scrape.engine, scrape.proxy_type)
            price = quote(self.config, *terms, caller, share, scrape.country)
            worst += pages * price.hold
        left = _available(conn, caller.account_id)
        if left < worst:
            raise insufficient_credits(worst, left)
        try:
            search_hold = ledger.hold(
                conn,
                caller.account_id,
                search_credits,
                trial=False,
                ttl_seconds=self.config.hold_ttl_seconds,
                key_id=caller.key_id,
                key_cap=caller.monthly_cap,
            )
        except ledger.KeyCapReached as exc:
            raise key_cap_reached(exc.cap, exc.spent, worst) from None
        except ledger.InsufficientCredits as exc:
            raise insufficient_credits(worst, exc.available) from None
        held = SearchHolds(caller, search_hold, price)
        try:
            if scrape is not None:
                for _ in range(pages):
                    _, price, hold_id = self.holds.hold_in(
                        conn, key_hash, scrape.engine, scrape.proxy_type, share, scrape.country
                    )
                    held.price = price
                    held.scrape_holds.append(hold_id)
        except BaseException:
            # on PostgreSQL each hold is its own statement (autocommit): a page's hold that is
            # refused (a concurrent call took the credits since the check) gives back what
            # this call held already, or it would stay held until its hold expires
            for hold_id in (held.search_hold, *held.scrape_holds):
                ledger.release(conn, hold_id)
            raise
        keys.note_use(conn, caller)
        return held

    async def settle(
        self, held: SearchHolds, charge: bool, unused: list[int], query: str, elapsed_ms: int
    ) -> ledger.Settlement:
        """The search's own hold captured (``charge``) or released, and the ``unused`` holds
        released, in one transaction: the search's own settlement (what it charged, and the
        balance after it)."""
        return await self.database.run_hot(self._settle, held, charge, unused, query, elapsed_ms)

    def _settle(
        self,
        conn: HotConnection,
        held: SearchHolds,
        charge: bool,
        unused: list[int],
        query: str,
        elapsed_ms: int,
    ) -> ledger.Settlement:
        row = UsageRow(
            held.caller.account_id,
            f"search: {query}",
            SEARCH_ENGINE,
            "none",
            "none",
            None,
            charge,
            False,
            None if charge else "no results",
            elapsed_ms,
        )
        cost = self.config.search_credits if charge else 0
        done = ledger.settle(conn, held.search_hold, cost=cost, usage_row=row)
        for hold_id in unused:
            ledger.release(conn, hold_id)
        return done

    async def release_all(self, held: SearchHolds) -> None:
        """Everything the search held given back: its backend failed."""

        def release(conn: HotConnection) -> None:
            for hold_id in (held.search_hold, *held.scrape_holds):
                ledger.release(conn, hold_id)

        await self.database.run_hot(release)

    async def release_one(self, hold_id: int) -> None:
        await self.database.run_hot(lambda conn: ledger.release(conn, hold_id))

    async def balance(self, account_id: int) -> int:
        return await self.database.run(ledger.balance, account_id)


def _available(conn: HotConnection, account_id: int) -> int:
    cur = cursor(conn)
    try:
        cur.execute(hot_path(conn).sql["account_state"], {"account_id": account_id})
        balance, held, _ = cur.fetchone()
    finally:
        cur.close()
    return int(balance) - int(held)
