"""The native API: ``POST /scrape`` here, and the other families of routes joining the same
Klein app (service.api.jobs, .reads, .payments, .instance). The process mounts it beside the
other fronts (service.process.server); it knows none of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson
from twisted.web.server import Request

from service.api.instance import InstanceRoutes
from service.api.jobs import JobRoutes
from service.api.monitors import MonitorRoutes
from service.api.openapi import document
from service.api.payments import PaymentRoutes
from service.api.reads import ReadRoutes
from service.billing.idempotency import Answer, Idempotency, checked_key
from service.billing.payments.provider import PaymentProvider
from service.billing.payments.webhooks import StripeWebhooks
from service.billing.pricing import price_list
from service.core.config import Config
from service.db import Database
from service.jobs.monitors import Monitors
from service.jobs.queue_worker import QueueWorker
from service.scrape.scraper import Scraper
from service.search.searcher import Searcher
from service.web import operations
from service.web.account import AccountReads
from service.web.http import api_key_of, read_json_body, render_json
from service.web.operations import Jobs

if TYPE_CHECKING:
    from service.scrape.results import ScrapeResult


class ScrapespyApp(JobRoutes, MonitorRoutes, ReadRoutes, PaymentRoutes, InstanceRoutes):
    app = JobRoutes.app

    def __init__(
        self,
        config: Config,
        database: Database,
        scraper: Scraper,
        payments: PaymentProvider | None = None,
        *,
        reads: AccountReads,
        jobs: Jobs,
        workers: Sequence[QueueWorker] = (),
        searcher: Searcher | None = None,
        monitors: Monitors | None = None,
    ):
        self.config = config
        self.database = database
        self.scraper = scraper
        # POST /search; without a backend it answers 400 (service.search.provider)
        self.searcher = searcher or Searcher(scraper, None)
        self.reads = reads
        self.jobs = jobs
        self.monitors = monitors  # POST /monitors and friends; a 503 without jobs
        self.workers = workers  # PostgreSQL: the queues' workers, which /healthz reports on
        self.idempotency = Idempotency(database)
        self.payments = payments
        self.stripe_webhooks = (
            StripeWebhooks(config.stripe_webhook_secret, database)
            if config.stripe_webhook_secret
            else None
        )
        self._prices = orjson.dumps(price_list(config))
        # what GET /openapi.json answers, and what the reference page (GET /docs) shows
        self.openapi_document = document(
            config.public_url,
            config.countries,
            config.session_max_idle_seconds,
            config.monitor_min_interval_seconds,
        )
        self._openapi = orjson.dumps(self.openapi_document)
        self._metrics_token = config.metrics_token.encode()

    def resource(self) -> Any:
        return self.app.resource()

    # POST /scrape: the site's root calls it directly (service.web.root)

    @app.route("/scrape", methods=["POST"])
    async def scrape(self, request: Request) -> bytes:
        key = checked_key(request.getHeader(b"Idempotency-Key"))
        body = read_json_body(request)

        async def scraped() -> ScrapeResult:
            return await operations.scrape(self.scraper, request, api_key_of(request), body)

        if key is None:
            return render_json(request, await scraped())

        async def answer() -> Answer:
            return 200, orjson.dumps(await scraped())

        caller = await self.scraper.authenticate(api_key_of(request))
        return await self._idempotent(request, caller.account_id, key, "scrape", body, answer)

    @app.route("/search", methods=["POST"])
    async def search(self, request: Request) -> bytes:
        body = read_json_body(request)
        answer = await operations.search(self.searcher, request, api_key_of(request), body)
        return render_json(request, answer)
