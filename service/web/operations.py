"""The operations every front calls, whatever its dialect: a scrape with its credits headers,
an answer given once per idempotency key, and the jobs (create, cancel). The native API calls
them with its requests as they come; the Firecrawl API translates its requests into the same
calls and their answers back, so each rule lives here once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from twisted.web.server import Request

from service.billing import keys, ledger
from service.billing.idempotency import Answer, Idempotency
from service.billing.pricing import quote
from service.core.config import Config
from service.core.errors import ServiceUnavailable, insufficient_credits
from service.core.schemas import ScrapeRequest
from service.db import Database
from service.jobs import batch_store
from service.jobs.answers import JobAccepted, JobSummary
from service.jobs.batches import MAX_URLS, Batches
from service.jobs.crawl_rules import CrawlRules
from service.jobs.crawls import Crawls
from service.scrape.scraper import Scraper
from service.search.searcher import Searcher
from service.web.http import MAX_BODY_BYTES
from service.web.site import request_id_of

if TYPE_CHECKING:
    from service.scrape.results import ScrapeResult

NO_JOBS = "jobs are not available on this instance"
# a batch's URLs may each be as long as a scrape's (8 KiB), besides the options
MAX_BATCH_BODY_BYTES = MAX_URLS * 8 * 1024 + MAX_BODY_BYTES


async def scrape(
    scraper: Scraper, request: Request, api_key: str | None, body: bytes
) -> ScrapeResult:
    """One scrape of the native request ``body``; what it cost and what is left of the balance
    go in the ``X-Credits-Charged`` and ``X-Credits-Remaining`` headers."""
    result, remaining = await scraper.answer(api_key, body, request_id=request_id_of(request))
    request.setHeader(b"X-Credits-Charged", b"%d" % result.credits_charged)
    if remaining is not None:
        request.setHeader(b"X-Credits-Remaining", b"%d" % remaining)
    return result


async def search(
    searcher: Searcher, request: Request, api_key: str | None, body: bytes
) -> dict[str, Any]:
    """One search of the native request ``body`` (service.search.searcher), with the same
    credits headers as a scrape: what the whole call cost, and the balance after."""
    parsed, scrape = searcher.parse(body)
    answer = await searcher.search(api_key, parsed, scrape, request_id_of(request))
    request.setHeader(b"X-Credits-Charged", b"%d" % answer.body["credits_charged"])
    request.setHeader(b"X-Credits-Remaining", b"%d" % answer.remaining)
    return answer.body


async def answered_once(
    idempotency: Idempotency,
    request: Request,
    account_id: int,
    key: str,
    endpoint: str,
    body: bytes,
    answer: Callable[[], Awaitable[Answer]],
) -> tuple[bytes, bool]:
    """The answer of the first call with ``key`` (service.billing.idempotency), with its status
    and headers set, and whether it is that first call's, replayed (``Idempotent-Replayed``)."""
    (status, payload), replayed = await idempotency.run(account_id, key, endpoint, body, answer)
    if replayed:
        request.setHeader(b"Idempotent-Replayed", b"true")
    request.setResponseCode(status)
    request.setHeader(b"Content-Type", b"application/json")
    request.setHeader(b"Cache-Control", b"no-store")
    return payload, replayed


class Jobs:
    """Batches and crawls as every front makes and cancels them (a 503 on an instance
    without jobs)."""

    def __init__(self, config: Config, database: Database, batches: Batches | None) -> None:
        self.config = config
        self.database = database
        self._batches = batches
        self._crawls = Crawls(batches) if batches is not None else None

    def batches(self) -> Batches:
        if self._batches is None:
            raise ServiceUnavailable(NO_JOBS)
        return self._batches

    def crawls(self) -> Crawls:
        if self._crawls is None:
            raise ServiceUnavailable(NO_JOBS)
        return self._crawls

    async def create_batch(
        self,
        caller: keys.Caller,
        options: dict[str, Any],
        urls: list[str],
        *,
        paid_ahead: bool = False,
    ) -> JobAccepted:
        """The batch stored and queued; with ``paid_ahead``, only if the balance pays for one
        page now (a 402 otherwise)."""
        if paid_ahead:
            await self._affordable(caller, options)
        return await self.batches().create(caller, options, urls)

    async def create_crawl(
        self,
        caller: keys.Caller,
        asked: CrawlRules,
        options: dict[str, Any],
        url: str,
        *,
        paid_ahead: bool = False,
    ) -> JobAccepted:
        """The crawl stored and queued; with ``paid_ahead``, only if the balance pays for one
        page now (a 402 otherwise), before its sitemaps are read."""
        if paid_ahead:
            await self._affordable(caller, options)
        return await self.crawls().create(caller, asked, options, url)

    async def cancel(self, caller: keys.Caller, public_id: str) -> JobSummary | None:
        """The caller's job cancelled (if it was still running): its summary after, or None
        when the caller has no such job."""
        return await self.database.run(batch_store.cancel, caller.account_id, public_id)

    async def _affordable(self, caller: keys.Caller, options: dict[str, Any]) -> None:
        """A 402 before anything is fetched when the balance cannot pay for one page, which
        the job would find only at its first page (and a crawl after its sitemaps)."""
        defaults = ScrapeRequest.model_fields
        price = quote(
            self.config,
            options.get("engine", defaults["engine"].default),
            options.get("proxy_type", defaults["proxy_type"].default),
            caller,
            options.get("max_credits"),
            ((options.get("location") or {}).get("country") or "").lower() or None,
        ).hold
        available = await self.database.run(ledger.available, caller.account_id)
        if available < price:
            raise insufficient_credits(price, available)
