"""Assembles the running service: database, crawler, limits, payments and the HTTP front.

Import this only after the asyncio reactor is installed (``service.core.reactor.install``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall

from service.api.account import AccountReads
from service.api.app import ScrapespyApp
from service.api.site import ObservedSite
from service.billing import ledger
from service.billing.payments.provider import make_provider
from service.billing.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from service.core.config import Config
from service.core.formats import OUTPUTS
from service.core.headers import security_headers
from service.dashboard.app import Dashboard
from service.db import Database
from service.firecrawl.webhooks import FLAVOURS as FIRECRAWL_WEBHOOKS
from service.jobs.batches import Batches
from service.jobs.queue import LocalQueue, PostgresQueue
from service.jobs.webhooks import WebhookSender
from service.scrape import sessions
from service.scrape.engine import EngineBridge
from service.scrape.scraper import Scraper

log = logging.getLogger(__name__)


# GET /account, /usage and /ledger count in a bucket of their own (service.api.account).
READS_REDIS_PREFIX = "scrapespy:rl-reads:"


def make_limiter(config: Config, redis_prefix: str = "scrapespy:rl:") -> RateLimiter:
    """The per-key limit at the configured rate; another ``redis_prefix`` is another bucket."""
    if config.redis_url:
        return RedisRateLimiter(
            config.redis_url,
            config.rate_limit_per_second,
            config.rate_limit_burst,
            prefix=redis_prefix,
        )
    return MemoryRateLimiter(config.rate_limit_per_second, config.rate_limit_burst)


@dataclass
class Service:
    config: Config
    database: Database
    bridge: EngineBridge
    scraper: Scraper
    http: ScrapespyApp
    sweeper: LoopingCall
    batches: Batches | None = None
    webhooks: WebhookSender | None = None

    def site(self) -> ObservedSite:
        site = ObservedSite(self.http.resource(), security_headers(self.config.public_url))
        site.displayTracebacks = False
        site.noisy = False
        return site

    async def stop(self) -> None:
        """Finish what is in flight (up to the grace period), settle or release every hold,
        close the crawler and its browser, then the database. Jobs take no more pages; their
        pages in flight finish or are released unbilled, to be taken over later."""
        queue = self.batches.queue if self.batches is not None else None
        if queue is not None:
            queue.stop_taking()
        if self.webhooks is not None:
            self.webhooks.stop_taking()
        abandoned = await self.bridge.drain(self.config.shutdown_grace_seconds)
        if abandoned:
            log.warning("shutdown: released the holds of %d unfinished scrapes", abandoned)
        if self.sweeper.running:
            self.sweeper.stop()
        if self.webhooks is not None:  # before the queue: on PostgreSQL it closes the app
            await self.webhooks.stop()
        if queue is not None:
            await queue.stop()
        await self.bridge.stop()
        if self.http.payments is not None:
            self.http.payments.stop()
        if self.http.dashboard is not None:
            self.http.dashboard.stop()
        self.database.stop()


async def build(config: Config, *, migrate: bool = True) -> Service:
    # the deployment's own formats, before anything offers or makes one (service.core.formats)
    OUTPUTS.declare_modules(config.format_modules)
    database = Database(config.database_url, threads=config.db_threads, reactor_calls=True)
    # Before any thread starts: payment settings that would lose money stop the start cleanly.
    payments = make_provider(config, database)
    database.start()
    bridge = EngineBridge(config, database)
    try:
        if migrate:
            await database.run_in_pool(database.upgrade)
        await bridge.start()
    except BaseException:
        # the pool's threads would keep a process that failed to start alive
        if payments is not None:
            payments.stop()
        await bridge.stop()
        database.stop()
        raise
    scraper = Scraper(config, database, bridge, make_limiter(config))
    dashboard = Dashboard(config, database, scraper, payments)
    dashboard.start()
    reads = AccountReads(database, make_limiter(config, READS_REDIS_PREFIX), scraper.limiter)
    batches = Batches(config, database, scraper, bridge, reads.limiter)
    if database.dialect == "postgresql":
        batches.queue = PostgresQueue(batches)
        await batches.queue.open()
    else:
        batches.queue = LocalQueue(batches)
    batches.queue.start()
    webhooks = WebhookSender(config, database, batches.instance, FIRECRAWL_WEBHOOKS)
    if isinstance(batches.queue, PostgresQueue):
        webhooks.use_queue(batches.queue.app)
    webhooks.start()
    workers = [
        worker
        for worker in (getattr(batches.queue, "worker", None), webhooks.worker)
        if worker is not None
    ]
    http = ScrapespyApp(
        config,
        database,
        scraper,
        payments,
        dashboard=dashboard,
        reads=reads,
        batches=batches,
        workers=workers,
    )
    sweeper = LoopingCall(_sweep, database, batches)
    sweeper.clock = reactor  # type: ignore[assignment]
    sweeper.start(config.sweep_interval_seconds, now=True).addErrback(_sweeper_stopped)
    return Service(config, database, bridge, scraper, http, sweeper, batches, webhooks)


def _sweep(database: Database, batches: Batches) -> Any:
    """Expired holds, then what the jobs' retention time let go of, then expired sessions."""
    d = database.run(ledger.expire_holds)
    d.addCallback(
        lambda freed: Deferred.fromCoroutine(batches.purge()).addCallback(lambda purged: freed)
    )
    d.addCallback(
        lambda freed: database.run(sessions.purge_expired).addCallback(lambda purged: freed)
    )

    def report(freed: int) -> None:
        if freed:
            log.warning("released %d expired holds", freed)

    def failed(failure: Any) -> None:
        log.error("hold sweeper failed: %s", failure.getErrorMessage())

    return d.addCallbacks(report, failed)


def _sweeper_stopped(failure: Any) -> None:
    log.error("hold sweeper stopped: %s", failure.getErrorMessage())
