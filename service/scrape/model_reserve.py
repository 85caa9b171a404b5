"""The language model's share of a scrape's hold (json.prompt, summary): its worst case,
``service.billing.rules.model_reserve``, added to the page's hold before anything is fetched.

``POST /scrape`` (and Firecrawl's scrape) extend the hold just made, one more round trip for
these requests only, and answer a 402 when the balance, the request's ``max_credits`` or the
key's monthly cap cannot cover it: the hold is released, nothing is fetched. A job's page
(batch, crawl) is held by its job; pipelines.llm extends its hold the same way before the
model is asked, and a refusal fails the page ``llm_over_budget``, unbilled.
"""

from __future__ import annotations

from twisted.internet.defer import Deferred

from service.billing import ledger
from service.core.errors import (
    PaymentRequired,
    insufficient_credits,
    key_cap_reached,
    max_credits_exceeded,
)
from service.db import Database

REFUSALS = (ledger.OverLimit, ledger.KeyCapReached, ledger.InsufficientCredits)


def extend_for_model(
    database: Database,
    hold_id: int,
    extra: int,
    *,
    max_credits: int | None,
    key_cap: int | None,
) -> Deferred[int]:
    """Extends ``hold_id`` by ``extra``; the hold's new amount. Fails with a REFUSALS member,
    or ``ledger.HoldGone``."""
    return database.run(ledger.extend_hold, hold_id, extra, limit=max_credits, key_cap=key_cap)


def refusal_of(refusal: Exception, held: int, extra: int) -> PaymentRequired:
    """The 402 of a request whose page was held (``held``) but not the model's ``extra``."""
    match refusal:
        case ledger.OverLimit(limit=limit):
            return max_credits_exceeded(held + extra, limit)
        case ledger.KeyCapReached(cap=cap, spent=spent):
            return key_cap_reached(cap, spent - held, held + extra)
        case ledger.InsufficientCredits(available=left):
            return insufficient_credits(held + extra, left + held)
    raise refusal


async def hold_for_model(
    database: Database,
    hold_id: int,
    held: int,
    extra: int,
    *,
    max_credits: int | None,
    key_cap: int | None,
) -> int:
    """``POST /scrape`` (a coroutine of Twisted's, as the scraper's): the hold of ``held``
    credits grown by ``extra``, its new amount; or the hold released and a 402."""
    try:
        return await extend_for_model(
            database, hold_id, extra, max_credits=max_credits, key_cap=key_cap
        )
    except REFUSALS as refusal:
        await database.run_hot(ledger.release, hold_id)
        raise refusal_of(refusal, held, extra) from None
