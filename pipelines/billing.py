"""Settles the credits held for a scrape: capture the tier actually used, or release.

Billed only when ``success`` is true and ``blocked`` is false, at the cost of the tier that was
actually used (a fallback to a direct connection bills ``none``), and for an auto request of
the engine that answered; its earlier attempts cost nothing. A residential trial that went
through the residential pool costs nothing and uses up one trial. The usage row is written in
the same transaction. Settling is at most once per hold (see ``service.billing.ledger.settle``), so
a late item after the watchdog answered, or after the sweeper expired the hold, charges nothing.

Two stages around the parsing of the page (pipelines.result.FieldsPipeline). On PostgreSQL the
settlement is sent as soon as the outcome is known (:class:`SettlePipeline`), so its round trip
overlaps the parse; :class:`BillingPipeline` waits for it before the answer goes out. When the
page then could not be parsed, a success became a failure, and what was charged is given back
(``service.billing.ledger.refund``) before the answer too: the caller is never billed for it. So is
what was charged for a scrape whose caller was told something else first, while its parse or its
settlement was still on its way: the watchdog's timeout, a shutdown's answer, or nothing at all
when the caller went away (service.scrape.engine). The pipeline claims the answer it bills for
(``ScrapeOrder.claim``), and skips the settlement when another answer was claimed before.
On SQLite :class:`BillingPipeline` settles after the parse. A request for the language model
(pipelines.llm) settles after it, on both: its tokens' cost is captured with the page's price,
in a ledger entry of its own (kind ``extraction``, naming the same hold).
A document costs the price once per started block of pages, which is known only once it is
converted: when that is more than was held, :class:`BillingPipeline` first extends the hold
(``service.billing.ledger.extend_hold``, one more round trip, for such documents only), or,
when the balance, the request's max_credits or the key's cap refuse it, fails the scrape
``document_over_budget``, unbilled.
A page of a batch on PostgreSQL (``ScrapeOrder.settle_later``) is settled by the batch with its
result, in one call (service.jobs.batches, migration 0017): :class:`BillingPipeline` leaves what to
settle on the order, computed on the final outcome.

Needs the service's database on the crawler (``crawler.scrapespy_database``, set by the
engine bridge); without it (for
instance ``scrapy crawl page``) the pipelines are not configured.

    ITEM_PIPELINES = {
        "pipelines.billing.SettlePipeline": 200,
        "pipelines.billing.BillingPipeline": 400,
    }
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from service.billing import ledger, rules
from service.extraction import empty_fields
from service.scrape.order import ScrapeItem, ScrapeOrder, storable, usage_row
from service.scrape.results import ScrapeResult

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from service.db import Database


UNANSWERED = "the scrape's caller got no answer"


def charge_for(
    order: ScrapeOrder, result: ScrapeResult, tier_used: str, blocks: int = 1, model: int = 0
) -> tuple[int, bool]:
    """(credits to capture, whether a residential trial is consumed): ``service.billing.rules``'
    charge of ``result`` at ``tier_used``, priced for the engine that answered an auto request
    (service.core.escalation). ``blocks``: a document's started blocks of pages, which may cost
    more than was held (the hold is extended first, :meth:`BillingPipeline._cover`). ``model``:
    what the language model's tokens cost (pipelines.llm), held with the page and captured
    with it."""
    ladder = order.ladder
    prices = order.costs if ladder is None else ladder.costs.get(result.engine, {})
    charged = rules.charge(
        success=result.success,
        blocked=result.blocked,
        trial=order.trial,
        tier_used=tier_used,
        prices=prices,
        blocks=blocks,
        model=model,
    )
    return charged.cost, charged.consume_trial


def over_budget(order: ScrapeOrder, refusal: Exception) -> str:
    """What stopped a document's hold from growing to its cost (see ``ledger.extend_hold``)."""
    match refusal:
        case ledger.OverLimit(limit=limit):
            return f"more than the request's max_credits of {limit}"
        case ledger.KeyCapReached(cap=cap, spent=spent):
            return (
                f"which would pass this API key's monthly cap of {cap} credits ({spent} spent "
                "or held this month)"
            )
        case ledger.InsufficientCredits(available=left):
            return (
                f"more than the balance available covers ({order.hold_amount} held, {left} more "
                "available)"
            )
    raise refusal


def database_of(crawler: Crawler) -> Database:
    database = getattr(crawler, "scrapespy_database", None)
    if database is None:
        raise NotConfigured
    return database  # type: ignore[no-any-return]


def send_settlement(database: Database, item: ScrapeItem) -> Deferred[ledger.Settlement]:
    """Settles ``item``'s hold on the outcome in ``item.result``."""
    order = item.order
    assert order.hold_id is not None
    cost, consume_trial = charge_for(
        order, item.result, item.tier_used, item.blocks, item.model_credits
    )
    usage = usage_row(order, item.result, item.tier_used, item.model_credits)
    if database.reactor_calls:  # PostgreSQL: one statement, on the reactor
        return database.call(
            "pg_settle", ledger.settle_params(order.hold_id, cost, consume_trial, usage)
        ).addCallback(ledger.settlement)
    return database.run_hot(
        ledger.settle, order.hold_id, cost=cost, consume_trial=consume_trial, usage_row=usage
    )


class SettlePipeline:
    """Sends the settlement before the page is parsed, where it can travel meanwhile: on
    PostgreSQL, whose statements the reactor sends and another process runs. SQLite's run on a
    database thread that shares the GIL with the parse, so there :class:`BillingPipeline`
    settles after the parse, on the final outcome."""

    def __init__(self, database: Database):
        self.database = database

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SettlePipeline:
        return cls(database_of(crawler))

    def process_item(self, item: ScrapeItem) -> ScrapeItem:
        order = item.order
        # a document's price waits for its page count, the model's for its tokens
        early = item.document is None and not order.asks_model
        if order.hold_id is not None and self.database.reactor_calls and not order.settle_later:
            if order.answer is None and early:  # else whoever answered the caller released the hold
                item.settlement = send_settlement(self.database, item)
        return item


class BillingPipeline:
    """Waits for the settlement; gives back what it charged for a success that then failed."""

    def __init__(self, crawler: Crawler, database: Database):
        self.stats = crawler.stats
        self.database = database
        self.pages_per_block = crawler.settings.getint("SCRAPESPY_DOCUMENT_PAGES_PER_BLOCK")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BillingPipeline:
        return cls(crawler, database_of(crawler))

    async def process_item(self, item: ScrapeItem) -> ScrapeItem:
        settling, item.settlement = item.settlement, None
        order = item.order
        if settling is None:
            if order.hold_id is None:
                return item
            if order.answer is None and item.blocks > 1:
                await self._cover(item)
            if order.settle_later:  # by the batch, with the page's result (service.jobs.batches)
                return self._to_settle(item)
            if order.answer is not None:  # whoever answered the caller released the hold
                return self._answered_otherwise(item)
            settling = send_settlement(self.database, item)
        settlement = await maybe_deferred_to_future(settling)
        charged = settlement.charged
        # What the caller is told: this result, claimed now, or the answer that the watchdog,
        # a caller who went away or a shutdown claimed first, while the parse or the settlement
        # was still on its way.
        told = item.result if order.claim(item.result) else order.answer
        billable = told is not None and charge_for(
            order, told, item.tier_used, item.blocks, item.model_credits
        ) != (0, False)
        balance = settlement.balance
        if (charged or settlement.trial_consumed) and not billable:
            why = told.error if told is not None else UNANSWERED
            refund = self.database.run(ledger.refund, order.hold_id, storable(why))
            given_back = await maybe_deferred_to_future(refund)
            charged -= given_back
            if balance is not None:  # this scrape's own entries: the capture, then the refund
                balance += given_back
        item.charged = item.result.credits_charged = charged
        order.balance_after = balance  # X-Credits-Remaining
        if self.stats is not None:
            self.stats.inc_value("scrapespy/billing/captured", charged)
            if not settlement.settled_here:
                self.stats.inc_value("scrapespy/billing/already_settled")
        return item

    async def _cover(self, item: ScrapeItem) -> None:
        """Extends the hold to a document's cost when its blocks of pages cost more than was
        held (the settlement captures at most the hold); when the account, the key's cap or the
        request's max_credits cannot cover it, the scrape fails ``document_over_budget``,
        unbilled, and its content is taken back."""
        order = item.order
        cost, _ = charge_for(order, item.result, item.tier_used, item.blocks, item.model_credits)
        extra = cost - order.hold_amount
        if extra <= 0:
            return
        assert order.hold_id is not None
        extending = self.database.run(
            ledger.extend_hold,
            order.hold_id,
            extra,
            limit=order.max_credits,
            key_cap=order.key_cap,
        )
        try:
            order.hold_amount = await maybe_deferred_to_future(extending)
        except ledger.HoldGone:  # released by whoever answered, or expired: charged nothing
            return
        except (ledger.OverLimit, ledger.KeyCapReached, ledger.InsufficientCredits) as refusal:
            self._refused(item, cost, over_budget(order, refusal))

    def _refused(self, item: ScrapeItem, cost: int, why: str) -> None:
        """The document's scrape as a failure that says what it would have cost and why not;
        the settlement then releases the hold. ``document`` stays, the content does not."""
        result = item.result
        pages = (getattr(result, "document", None) or {}).get("pages")
        result.success = False
        result.error_code = "document_over_budget"
        result.error = (
            f"the document has {pages} pages, {item.blocks} blocks of up to "
            f"{self.pages_per_block}, which cost {cost} credits, {why}; nothing was charged"
        )
        result.empty(empty_fields(item.order.selectors))
        if self.stats is not None:
            self.stats.inc_value("scrapespy/billing/document_over_budget")

    def _answered_otherwise(self, item: ScrapeItem) -> ScrapeItem:
        """A scrape whose caller was told something else first: its hold is released by whoever
        answered (service.scrape.engine), and nothing is charged for this late result."""
        item.charged = item.result.credits_charged = 0
        if self.stats is not None:
            self.stats.inc_value("scrapespy/billing/answered_otherwise")
        return item

    def _to_settle(self, item: ScrapeItem) -> ScrapeItem:
        """What the batch settles with the page's result, on the final outcome: the result
        says what it costs, which the settlement charges unless the hold was settled before
        (then the batch stores the result with what was charged)."""
        order = item.order
        cost, consume_trial = charge_for(
            order, item.result, item.tier_used, item.blocks, item.model_credits
        )
        usage = usage_row(order, item.result, item.tier_used, item.model_credits)
        order.to_settle = (cost, consume_trial, usage)
        item.charged = item.result.credits_charged = cost
        if self.stats is not None:
            self.stats.inc_value("scrapespy/billing/captured", cost)
        return item
