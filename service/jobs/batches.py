"""Jobs (``POST /batch``, ``GET /jobs``, ``DELETE /jobs/{id}``) and the run of one page.

A job and its pages are stored before the answer goes out (service.jobs.batch_store); a queue
(service.jobs.queue) then hands each page to :meth:`Batches.run_page` on some instance. A page is
scraped as ``POST /scrape`` scrapes: authorize-and-hold with the job's key for the page's price,
the engine bridge, settlement by the pipelines; the hold is written on the page's row in the
transaction that makes it, and the result in the page's row once it settled. So a page whose
instance died is taken over knowing whether it was billed (page_claims.claim_page), and the
first page whose price the balance cannot cover stops the job with ``insufficient_credits``.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from service.billing import keys, ledger
from service.billing.answers import Page
from service.billing.idempotency import KEPT_FOR as KEYS_KEPT_FOR
from service.billing.ratelimit import RateLimiter, retry_after_seconds
from service.core.config import Config
from service.core.errors import ApiError, BadRequest, NotFound, TooManyRequests, Unauthorized
from service.core.schemas import ScrapeRequest, checked_scrape, parse_json_object, validate
from service.db import Database
from service.jobs import batch_store, job_reads, monitor_store
from service.jobs.answers import RESULTS_LIMIT, Job, JobAccepted, JobItem
from service.jobs.page_runs import PageRuns
from service.jobs.webhook_spec import take_webhook
from service.scrape.engine import EngineBridge
from service.scrape.scraper import Scraper

log = logging.getLogger(__name__)

MAX_URLS = 1000
JOBS_LIMIT = 100


class TooManyJobs(ApiError):
    status = 429
    code = "too_many_jobs"


def _count(name: str, raw: list[bytes] | None, default: int, most: int) -> int:
    if not raw:
        return default
    text = raw[0].decode("ascii", "replace")
    if not text.isdigit() or not 1 <= int(text) <= most:
        raise BadRequest(f"invalid request: {name!r}: must be an integer from 1 to {most}")
    return int(text)


def _cursor(raw: list[bytes] | None) -> int | None:
    if not raw:
        return None
    text = raw[0].decode("ascii", "replace")
    if not text.isdigit() or len(text) > 18:
        raise BadRequest("invalid request: 'cursor': not a next_cursor of this listing")
    return int(text)


class Batches(PageRuns):
    """The jobs' API (their pages run by :class:`PageRuns`)."""

    def __init__(
        self,
        config: Config,
        database: Database,
        scraper: Scraper,
        bridge: EngineBridge,
        reads_limiter: RateLimiter | None = None,
    ):
        super().__init__(config, database, scraper, bridge)
        # GET and DELETE /jobs count in the bucket of GET /account (service.web.account): a
        # client polling its job never takes a scrape's turn
        self.reads_limiter = reads_limiter
        self.queue: Any = None  # service.jobs.queue: set when the service is built

    def parse(self, body: bytes) -> tuple[dict[str, Any], list[str]]:
        """The options and the URLs of a batch, each URL checked as ``POST /scrape`` checks it
        with those options; a 400 names the field, or the index of the URL."""
        data = parse_json_object(body)
        urls = data.pop("urls", None)
        if "url" in data:
            raise BadRequest("invalid request: 'url': a batch takes a list, 'urls'")
        if (
            not isinstance(urls, list)
            or not 1 <= len(urls) <= MAX_URLS
            or not all(isinstance(url, str) for url in urls)
        ):
            raise BadRequest(
                f"invalid request: 'urls': must be a list of 1 to {MAX_URLS} URLs (strings)"
            )
        webhook = take_webhook(data, self.config)
        # the options once, selectors compiled: their errors name their field; then each URL
        # with them (compiling the selectors 1,000 times over took 25 ms of the reactor thread)
        checked_scrape(
            {**data, "url": urls[0]}, self.config.countries, model=self.config.model_configured
        )
        for index, url in enumerate(urls):
            try:
                validate(ScrapeRequest, {**data, "url": url})
            except BadRequest as exc:
                detail = exc.message.removeprefix("invalid request: ")
                raise BadRequest(f"invalid request: 'urls[{index}]': {detail}") from None
        if webhook is not None:
            data["webhook"] = webhook
        return data, urls

    async def caller(self, api_key: str | None, *, reading: bool = False) -> keys.Caller:
        """The key's caller, after the key's rate limit (the reads' bucket when ``reading``)."""
        if not api_key or not keys.well_formed(api_key):
            raise Unauthorized()
        limiter = self.reads_limiter if reading and self.reads_limiter else self.scraper.limiter
        wait = await limiter.check(keys.hash_key(api_key))
        if wait > 0:
            raise TooManyRequests(retry_after_seconds(wait))
        return await self.scraper.authenticate(api_key)

    async def start_session(self, caller: keys.Caller, options: dict[str, Any]) -> None:
        """A job whose pages run in a session (``session`` in its options) makes it now, if it
        is new: the account's bound and the idle time are checked (409, 400) before the job is
        stored, and the session is listed from the start."""
        name = options.get("session")
        if name is not None:
            idle = options.get("session_idle_seconds")
            session = await self.scraper.open_session(caller.key_hash, name, idle)
            await self.scraper.save_session(session)

    async def create(
        self, caller: keys.Caller, options: dict[str, Any], urls: list[str]
    ) -> JobAccepted:
        """Stores the job; ``options`` are its pages' scrape options and, under ``webhook``, the
        job's webhook as service.jobs.webhook_spec.take_webhook checked it."""
        await self.start_session(caller, options)
        options = dict(options)
        webhook = options.pop("webhook", None)
        public_id = uuid.uuid4().hex
        try:
            seq = await self.database.run(
                batch_store.create_job,
                public_id=public_id,
                account_id=caller.account_id,
                key_id=caller.key_id,
                key_hash=caller.key_hash,
                options=options,
                urls=urls,
                limit=self.config.max_jobs_per_account,
                webhook=webhook,
            )
        except batch_store.TooManyJobs as exc:
            raise TooManyJobs(
                f"this account has {exc.limit} jobs queued or running, the most it may; wait "
                "for one to finish or cancel one (DELETE /jobs/{id})"
            ) from None
        try:
            await self.queue.enqueue(seq)
        except Exception as exc:  # stored: the queue's recovery queues it (service.jobs.queue)
            log.warning("job %s is stored but not queued yet: %s", public_id, exc)
        return {"id": public_id, "status_url": f"{self.config.public_url}/jobs/{public_id}"}

    async def view(self, api_key: str | None, public_id: str, query: dict[bytes, Any]) -> Job:
        caller = await self.caller(api_key, reading=True)
        after = _cursor(query.get(b"cursor"))
        limit = _count("limit", query.get(b"limit"), RESULTS_LIMIT, RESULTS_LIMIT)
        found = await self.database.run(
            job_reads.view,
            caller.account_id,
            public_id[:64],
            -1 if after is None else after,
            limit,
        )
        if found is None:
            raise NotFound("no such job")
        return found

    async def listing(self, api_key: str | None, query: dict[bytes, Any]) -> Page[JobItem]:
        caller = await self.caller(api_key, reading=True)
        before = _cursor(query.get(b"cursor"))
        limit = _count("limit", query.get(b"limit"), JOBS_LIMIT, JOBS_LIMIT)
        return await self.database.run(job_reads.listing, caller.account_id, before, limit)

    async def purge(self) -> int:
        """Deletes what is past the retention time (config.job_retention_days)."""
        now = ledger.now()
        before = now - timedelta(days=self.config.job_retention_days)
        await self.database.run(monitor_store.purge_checks, before)
        return await self.database.run(batch_store.purge, before, now - KEYS_KEPT_FOR)
