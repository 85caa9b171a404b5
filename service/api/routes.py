"""The native API's Klein app, which every family of its routes joins (service.api.app), and
what those routes share: the service's parts they call and the answer once per idempotency
key. Routes stay thin: parse, call one operation, render JSON; errors are rendered in one place
(service.web.http) and a caller never sees a traceback."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from twisted.web.server import Request

from service.billing import ledger
from service.billing.idempotency import Answer, Idempotency
from service.web.http import json_routes
from service.web.operations import answered_once

if TYPE_CHECKING:
    from service.billing.payments.provider import PaymentProvider
    from service.billing.payments.webhooks import StripeWebhooks
    from service.core.config import Config
    from service.db import Database
    from service.jobs.monitors import Monitors
    from service.jobs.queue_worker import QueueWorker
    from service.scrape.scraper import Scraper
    from service.web.account import AccountReads
    from service.web.operations import Jobs


class ApiRoutes:
    app = json_routes()

    config: Config
    database: Database
    scraper: Scraper
    reads: AccountReads
    jobs: Jobs
    monitors: Monitors | None
    idempotency: Idempotency
    payments: PaymentProvider | None
    stripe_webhooks: StripeWebhooks | None
    workers: Sequence[QueueWorker]

    async def _idempotent(
        self,
        request: Request,
        account_id: int,
        key: str,
        endpoint: str,
        body: bytes,
        answer: Callable[[], Awaitable[Answer]],
    ) -> bytes:
        """The answer of the first call with ``key`` (service.billing.idempotency). A scrape's
        replay cost nothing: the body tells the first call's charge, the headers this one's."""
        payload, replayed = await answered_once(
            self.idempotency, request, account_id, key, endpoint, body, answer
        )
        if replayed and endpoint == "scrape":
            remaining = await self.database.run(ledger.balance, account_id)
            request.setHeader(b"X-Credits-Charged", b"0")
            request.setHeader(b"X-Credits-Remaining", b"%d" % remaining)
        return payload
