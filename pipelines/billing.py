"""Settles the credits held for a scrape: capture the tier actually used, or release.

Billed only when ``success`` is true and ``blocked`` is false, at the cost of the tier that was
actually used (a fallback to a direct connection bills ``none``). A residential trial that went
through the residential pool costs nothing and uses up one trial. The usage row is written in
the same transaction. Settling is at most once per hold (see ``service.ledger.settle``), so a
late item after the watchdog answered, or after the sweeper expired the hold, charges nothing.

Needs the service's database on the crawler (``crawler.scrapespy_database``, set by the
engine bridge); without it (for
instance ``scrapy crawl page``) the pipeline is not configured.

    ITEM_PIPELINES = {"pipelines.billing.BillingPipeline": 200}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from twisted.internet.defer import Deferred

from service import ledger
from service.jobs import ScrapeJob

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from service.db import Database


def charge_for(job: ScrapeJob, result: dict[str, Any], tier_used: str) -> tuple[int, bool]:
    """(credits to capture, whether a residential trial is consumed)."""
    if not result["success"] or result["blocked"]:
        return 0, False
    if job.trial and tier_used == "residential":
        return 0, True
    return job.costs[tier_used], False


def _storable(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL, which a URL's fragment may carry: store it as %00."""
    return text.replace("\x00", "%00") if text is not None else None


def usage_row(job: ScrapeJob, result: dict[str, Any], tier_used: str) -> dict[str, Any]:
    return {
        "account_id": job.account_id,
        "url": _storable(job.url[:4000]),
        "engine": job.engine,
        "tier_requested": job.proxy_type,
        "tier_used": tier_used,
        "status_code": result["status_code"] or None,
        "success": result["success"],
        "blocked": result["blocked"],
        "error": _storable(result["error"]),
        "elapsed_ms": result["elapsed_ms"],
    }


class BillingPipeline:
    def __init__(self, crawler: Crawler, database: Database):
        self.stats = crawler.stats
        self.database = database

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BillingPipeline:
        database = getattr(crawler, "scrapespy_database", None)
        if database is None:
            raise NotConfigured
        return cls(crawler, database)

    def process_item(self, item: dict[str, Any]) -> Deferred[dict[str, Any]] | dict[str, Any]:
        job: ScrapeJob = item["job"]
        if job.hold_id is None:
            return item
        result, tier_used = item["result"], item["tier_used"]
        cost, consume_trial = charge_for(job, result, tier_used)
        usage = usage_row(job, result, tier_used)
        d: Deferred[ledger.Settlement]
        if self.database.reactor_calls:  # PostgreSQL: one statement, on the reactor
            d = self.database.call(
                "pg_settle", ledger.settle_params(job.hold_id, cost, consume_trial, usage)
            ).addCallback(ledger.settlement)
        else:
            d = self.database.run_hot(
                ledger.settle, job.hold_id, cost=cost, consume_trial=consume_trial, usage_row=usage
            )

        def settled(settlement: ledger.Settlement) -> dict[str, Any]:
            item["charged"] = settlement.charged
            if self.stats is not None:
                self.stats.inc_value("scrapespy/billing/captured", settlement.charged)
                if not settlement.settled_here:
                    self.stats.inc_value("scrapespy/billing/already_settled")
            return item

        return d.addCallback(settled)
