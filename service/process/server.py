"""Assembles the running service: database, crawler, limits, payments and the HTTP fronts,
mounted side by side on the site's root (which front answers which path is said here, once).

Import this only after the asyncio reactor is installed (``service.core.reactor.install``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall

from service.api.app import ScrapespyApp
from service.billing import ledger
from service.billing.payments.provider import PaymentProvider, make_provider
from service.billing.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from service.core.config import Config
from service.core.formats import OUTPUTS
from service.core.headers import security_headers
from service.dashboard import mount
from service.dashboard.app import Dashboard
from service.db import Database
from service.firecrawl.routes import FirecrawlApi, is_firecrawl
from service.firecrawl.webhooks import FLAVOURS as FIRECRAWL_WEBHOOKS
from service.jobs.batches import Batches
from service.jobs.monitors import Monitors
from service.jobs.queue import LocalQueue, PostgresQueue
from service.jobs.webhooks import WebhookSender
from service.reference import routes as reference
from service.reference.page import Reference
from service.scrape import sessions, snapshots
from service.scrape.engine import EngineBridge
from service.scrape.scraper import Scraper
from service.search.provider import make_backend
from service.search.searcher import Searcher
from service.web.account import AccountReads
from service.web.operations import Jobs
from service.web.root import Root
from service.web.site import ObservedSite

log = logging.getLogger(__name__)


# GET /account, /usage and /ledger count in a bucket of their own (service.web.account).
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
    root: Root
    sweeper: LoopingCall
    payments: PaymentProvider | None = None
    dashboard: Dashboard | None = None
    batches: Batches | None = None
    webhooks: WebhookSender | None = None
    monitors: Monitors | None = None

    def site(self) -> ObservedSite:
        site = ObservedSite(self.root, security_headers(self.config.public_url))
        site.displayTracebacks = False
        site.noisy = False
        return site

    async def stop(self) -> None:
        """Finish what is in flight (up to the grace period), settle or release every hold,
        close the crawler and its browser, then the database. Jobs take no more pages; their
        pages in flight finish or are released unbilled, to be taken over later. A stage that
        takes long is named in the log, so that a slow shutdown says where it waited."""
        queue = self.batches.queue if self.batches is not None else None
        if queue is not None:
            queue.stop_taking()
        if self.webhooks is not None:
            self.webhooks.stop_taking()
        if self.monitors is not None:
            self.monitors.stop()
        with _stage("draining the scrapes in flight"):
            abandoned = await self.bridge.drain(self.config.shutdown_grace_seconds)
        if abandoned:
            log.warning("shutdown: released the holds of %d unfinished scrapes", abandoned)
        if self.sweeper.running:
            self.sweeper.stop()
        if self.webhooks is not None:  # before the queue: on PostgreSQL it closes the app
            with _stage("stopping the webhooks"):
                await self.webhooks.stop()
        if queue is not None:
            with _stage("stopping the job queue"):
                await queue.stop()
        with _stage("closing the crawler"):
            await self.bridge.stop()
        if self.payments is not None:
            self.payments.stop()
        if self.dashboard is not None:
            self.dashboard.stop()
        with _stage("closing the database"):
            self.database.stop()


# a shutdown stage longer than this is named in the log
SLOW_STAGE_SECONDS = 2.0


@contextmanager
def _stage(name: str) -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        took = time.monotonic() - started
        if took > SLOW_STAGE_SECONDS:
            log.warning("shutdown: %s took %.1f s", name, took)


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
    monitors = Monitors(batches)
    monitors.start()
    workers = [
        worker
        for worker in (getattr(batches.queue, "worker", None), webhooks.worker)
        if worker is not None
    ]
    jobs = Jobs(config, database, batches)
    searcher = Searcher(scraper, make_backend(config))
    api = ScrapespyApp(
        config,
        database,
        scraper,
        payments,
        reads=reads,
        jobs=jobs,
        workers=workers,
        searcher=searcher,
        monitors=monitors,
    )
    firecrawl = FirecrawlApi(scraper, config, database, reads, jobs, searcher)
    root = site_root(api, firecrawl, dashboard)
    sweeper = LoopingCall(_sweep, database, batches, config.change_retention_days)
    sweeper.clock = reactor  # type: ignore[assignment]
    sweeper.start(config.sweep_interval_seconds, now=True).addErrback(_sweeper_stopped)
    return Service(
        config,
        database,
        bridge,
        scraper,
        root,
        sweeper,
        payments,
        dashboard,
        batches,
        webhooks,
        monitors,
    )


def site_root(api: ScrapespyApp, firecrawl: FirecrawlApi, dashboard: Dashboard) -> Root:
    """Which front answers which path: Firecrawl's API ``/v1/`` and ``/v2/``, the reference
    ``/docs``, the dashboard ``/`` and ``/dashboard``, the native API the rest. The scrapes go
    straight to their routes (service.web.root)."""
    docs = reference.ReferenceRoutes(Reference(api.config, api.openapi_document))
    return Root(
        scrapes={
            b"/scrape": api.scrape,
            b"/v1/scrape": firecrawl.scrape,
            b"/v2/scrape": firecrawl.scrape,
        },
        fronts=[
            (lambda request: is_firecrawl(request.path), firecrawl.resource()),
            (reference.claims, docs.resource()),
            (mount.claims, mount.DashboardMount(dashboard).resource()),
        ],
        rest=api.resource(),
    )


def _sweep(database: Database, batches: Batches, change_retention_days: int) -> Any:
    """Expired holds, then what the jobs' retention time let go of, then expired sessions and
    change_tracking's snapshots."""
    d = database.run(ledger.expire_holds)
    d.addCallback(
        lambda freed: Deferred.fromCoroutine(batches.purge()).addCallback(lambda purged: freed)
    )
    d.addCallback(
        lambda freed: database.run(sessions.purge_expired).addCallback(lambda purged: freed)
    )
    d.addCallback(
        lambda freed: database.run(snapshots.purge_expired, change_retention_days).addCallback(
            lambda purged: freed
        )
    )

    def report(freed: int) -> None:
        if freed:
            log.warning("released %d expired holds", freed)

    def failed(failure: Any) -> None:
        log.error("hold sweeper failed: %s", failure.getErrorMessage())

    return d.addCallbacks(report, failed)


def _sweeper_stopped(failure: Any) -> None:
    log.error("hold sweeper stopped: %s", failure.getErrorMessage())
