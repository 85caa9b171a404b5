"""Jobs (``POST /batch``, ``GET /jobs``, ``DELETE /jobs/{id}``) and the run of one page.

A job and its pages are stored before the answer goes out (service.jobs.batch_store); a queue
(service.jobs.queue) then hands each page to :meth:`Batches.run_page` on some instance. A page is
scraped as ``POST /scrape`` scrapes: authorize-and-hold with the job's key for the page's price,
the engine bridge, settlement by the pipelines; the hold is written on the page's row in the
transaction that makes it, and the result in the page's row once it settled. So a page whose
instance died is taken over knowing whether it was billed (batch_store.claim_page), and the
first page whose price the balance cannot cover stops the job with ``insufficient_credits``.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Generic, TypeVar, cast

import orjson
from sqlalchemy import Connection
from sqlalchemy.exc import SQLAlchemyError
from twisted.internet.defer import DeferredSemaphore
from twisted.internet.task import deferLater

from service.billing import keys, ledger
from service.billing.answers import Page
from service.billing.idempotency import KEPT_FOR as KEYS_KEPT_FOR
from service.billing.ratelimit import RateLimiter, retry_after_seconds
from service.core.config import Config
from service.core.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    NotFound,
    PaymentRequired,
    TooManyRequests,
    Unauthorized,
)
from service.core.escalation import AUTO, Ladder, ladder
from service.core.reactor import running
from service.core.schemas import ScrapeRequest, checked_scrape, parse_json_object, validate
from service.db import Database
from service.db.grouped import Grouped
from service.db.hot import HotConnection
from service.jobs import batch_store, crawl_store
from service.jobs.answers import RESULTS_LIMIT, Job, JobAccepted, JobItem, JobSummary
from service.jobs.webhook_spec import take_webhook
from service.scrape.engine import SHUTTING_DOWN, EngineBridge
from service.scrape.order import ScrapeOrder
from service.scrape.results import ACTION_FIELDS, TRUNCATED, ScrapeResult, format_fields
from service.scrape.scraper import Scraper

log = logging.getLogger(__name__)
V = TypeVar("V")

MAX_URLS = 1000
JOBS_LIMIT = 100
JOBS_KEPT = 256  # jobs whose terms and checked options an instance keeps (Batches._claim)
# ... and for how long: a job's seq may be given to a new job once the old one is purged, at
# least a day after it finished (SQLite reuses the highest rowid), far longer than this
JOB_KEPT_SECONDS = 600.0
# what a result larger than config.job_result_max_bytes keeps: its status, not its page
_BULKY: dict[str, Any] = {
    "title": None,
    "meta": {},
    "headings": {},
    "links": [],
    "images": [],
    "text": None,
    "extracted": {},
}
# ... and none of the fields that the request's formats and actions added


# what a job's stored options hold besides its pages' scrape options: a crawl's rules
# (service.jobs.crawls), and how its answers are shown (service.firecrawl.jobs)
NOT_SCRAPING = frozenset({"crawl", "firecrawl"})

# a claimed page's attempt: its job, or the refusal of its hold (Batches._start)
Started = tuple[batch_store.Claim, "ScrapeOrder | ApiError"]

_COLD = object()  # Batches._start_hot: not a page the hot path starts

KEY_GONE = "the API key that made this job was revoked; its remaining pages were not scraped"


class TooManyJobs(ApiError):
    status = 429
    code = "too_many_jobs"


class PageInterrupted(Exception):
    """The service shut down under a page: it was released unbilled, and is run again (by this
    instance once it is back, or by another)."""


class JobCache(Generic[V]):
    """What an instance keeps of each job that never changes (its terms, its checked options):
    at most JOBS_KEPT jobs, each for JOB_KEPT_SECONDS."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[float, V]] = {}

    def get(self, job_seq: int) -> V | None:
        found = self._kept.get(job_seq)
        if found is None or time.monotonic() - found[0] > JOB_KEPT_SECONDS:
            return None
        return found[1]

    def put(self, job_seq: int, value: V) -> None:
        if len(self._kept) >= JOBS_KEPT:
            self._kept.clear()
        self._kept[job_seq] = (time.monotonic(), value)


def instance_name() -> str:
    """What a page's row records as the instance of its attempt: host, process and a token of
    this start of the process (a process that comes back may get the same pid)."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def is_dead(instance: str | None, this: str) -> bool:
    """SQLite: whether the attempt of the process named ``instance`` is over. The database is one
    host's file, so a process of another host name was this host's before a restart (a
    container's). This process's own pages are asked about only when its loop is not running
    them (an attempt that raised): they are over too."""
    if instance is None or instance == this:
        return True
    host, pid, _ = instance.rsplit(":", 2) if instance.count(":") >= 2 else ("", "0", "")
    mine, my_pid, _ = this.rsplit(":", 2)
    if host != mine or not pid.isdigit() or int(pid) == int(my_pid):
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def page_status(result: ScrapeResult) -> str:
    if result.blocked:
        return "blocked"
    return "done" if result.success else "failed"


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


class Batches:
    def __init__(
        self,
        config: Config,
        database: Database,
        scraper: Scraper,
        bridge: EngineBridge,
        reads_limiter: RateLimiter | None = None,
    ):
        self.config = config
        self.database = database
        self.scraper = scraper
        self.bridge = bridge
        # GET and DELETE /jobs count in the bucket of GET /account (service.web.account): a
        # client polling its job never takes a scrape's turn
        self.reads_limiter = reads_limiter
        self.instance = instance_name()
        self._scraping = DeferredSemaphore(config.job_pages_in_flight)
        self.queue: Any = None  # service.jobs.queue: set when the service is built
        self._starts: Grouped[tuple[int, int | None], Started | None]
        self._starts = Grouped(database, self._start_all)
        self._finishes: Grouped[batch_store.Finish, bool]
        self._finishes = Grouped(database, batch_store.finish_pages)
        # SQLite's hot path: the pages that start, or finish, while a transaction of the same
        # kind is under way share the next one (a write each was three a page with the
        # settlement, all waiting for SQLite's one writer)
        self._hot_starts: Grouped[tuple[int, int | None, int, batch_store.JobTerms], Any]
        self._hot_starts = Grouped(database, self._start_hot_all, hot=True)
        self._hot_finishes: Grouped[tuple[batch_store.Finish, int], bool]
        self._hot_finishes = Grouped(database, batch_store.finish_hot_all, hot=True)
        # each job's terms (_claim) and checked options (_request), on the database's threads
        self._terms: JobCache[batch_store.JobTerms] = JobCache()
        self._requests: JobCache[tuple[ScrapeRequest, Any]] = JobCache()

    # the API ------------------------------------------------------------------------------

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
            batch_store.view,
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
        return await self.database.run(batch_store.listing, caller.account_id, before, limit)

    async def cancel(self, api_key: str | None, public_id: str) -> JobSummary:
        caller = await self.caller(api_key, reading=True)
        found = await self.database.run(batch_store.cancel, caller.account_id, public_id[:64])
        if found is None:
            raise NotFound("no such job")
        return found

    # the pages ----------------------------------------------------------------------------

    async def run_page(
        self, page_id: int, seen_attempt: int | None = None, job_seq: int | None = None
    ) -> None:
        """One attempt at one page, from its claim to its stored result; with ``seen_attempt``,
        only if the page is still at that attempt (no other process claimed it meanwhile).

        A page no attempt started, whose job the queue names, starts by the hot path's
        statements, as ``POST /scrape``'s hold does; so does the result of a job with neither
        webhook nor crawl (whose result writes nothing else). The others, and any page no
        attempt can start afresh (taken over, or of a stopped job), share SQLAlchemy
        transactions with the pages that come at the same moment (service.db.grouped)."""
        terms = await self._terms_of(job_seq) if job_seq is not None else None
        started: Started | None | object = _COLD
        if terms is not None and job_seq is not None:
            started = await self._start_hot(page_id, seen_attempt, job_seq, terms)
        if started is _COLD:
            started = await self._starts((page_id, seen_attempt))
        if started is None:
            return
        claim, job = cast(Started, started)
        if isinstance(job, ApiError):  # the hold was refused: the job stops
            status = "insufficient_credits" if isinstance(job, PaymentRequired) else "failed"
            why = KEY_GONE if isinstance(job, Unauthorized) else job.message
            await self.database.run(batch_store.stop_job, claim.job_seq, status, why)
            await self.database.run(batch_store.release_page, page_id, claim.attempt)
            return
        crawling = "crawl" in claim.options  # a crawl's rules (service.jobs.crawls)
        if crawling and self.config.crawl_delay_seconds:
            await deferLater(running(), self.config.crawl_delay_seconds)
        # the scrape is what a job's pages in flight count: their claims, holds and results,
        # round trips to the database, overlap the other pages' scrapes
        job.background = True
        name = claim.options.get("session")
        if name is not None:  # each page starts from the session as stored when it starts
            idle = claim.options.get("session_idle_seconds")
            job.session = await self.scraper.open_session(claim.key_hash, name, idle, bounded=False)
        result = await self._scraping.run(self.bridge.submit, job)
        if job.session is not None:
            await self.scraper.save_session(job.session)
        if result.error == SHUTTING_DOWN:
            raise PageInterrupted()
        if terms is not None and terms.hot_crawl and self.database.reactor_calls:
            await self._finish_crawl_hot(claim, result)
            return
        found = self._links_of(claim, result) if crawling and result.success else None
        finish = batch_store.Finish(
            page_id,
            claim.attempt,
            page_status(result),
            self.stored(result),
            found,
            claim.job_seq,
            claim.tells_pages,
        )
        if claim.hot:
            await self._finish_hot(finish, claim.job_seq, job, result)
        else:
            await self._finishes(finish)

    async def _terms_of(self, job_seq: int) -> batch_store.JobTerms | None:
        terms = self._terms.get(job_seq)
        if terms is None:
            terms = await self.database.run(batch_store.job_terms, job_seq)
            if terms is not None:
                self._terms.put(job_seq, terms)
        return terms

    async def _start_hot(
        self, page_id: int, seen_attempt: int | None, job_seq: int, terms: batch_store.JobTerms
    ) -> Started | None | object:
        """The claim and the hold of a hot job's page; ``_COLD`` when the page is not one no
        attempt started (the other way says what it is). SQLite: one transaction; PostgreSQL:
        three statements on the reactor, each committed (a hold made for a claim that was
        then lost, or by an instance that died before recording it, is never captured: it
        expires, unbilled)."""
        if not self.database.reactor_calls:
            return await self._hot_starts((page_id, seen_attempt, job_seq, terms))
        request, compiled = self._checked(job_seq, terms.options)
        engine, tier, most = request.engine, request.proxy_type, request.max_credits
        params = {
            **batch_store.claim_params(page_id, self.instance, seen_attempt),
            **self.scraper.hold_params(terms.key_hash, engine, tier, most, request.country),
        }
        row = await self.database.call("pg_start_page", params)
        if row is None:
            return _COLD
        claim = self._claim_of(page_id, job_seq, str(row[1]), int(row[2]), terms)
        request = request.model_copy(update={"url": claim.url.strip()})
        try:
            made = self.scraper.authorized(
                row[3:] if row[3] is not None else None,
                terms.key_hash,
                engine,
                tier,
                most,
                request.country,
            )
            if made is None:  # auto, and the residential trials went meanwhile: without one
                made = await self.scraper.hold(
                    terms.key_hash, engine, tier, most, country=request.country
                )
                await self.database.run(batch_store.set_hold, page_id, claim.attempt, made[2])
        except (PaymentRequired, Unauthorized, Forbidden) as exc:
            return claim, exc
        caller, price, hold_id = made
        # a page whose result the hot path stores settles with it, in one call (_finish_hot)
        job = ScrapeOrder.held(request, compiled, caller, price, hold_id, settle_later=terms.hot)
        return claim, job

    def _start_hot_all(
        self,
        conn: HotConnection,
        pages: list[tuple[int, int | None, int, batch_store.JobTerms]],
    ) -> list[Started | None | object]:
        """:meth:`_start_hot_in` for each page, in one transaction (an error fails them all:
        each page's attempt is then tried again, by the queue)."""
        return [self._start_hot_in(conn, *page) for page in pages]

    def _start_hot_in(
        self,
        conn: HotConnection,
        page_id: int,
        seen_attempt: int | None,
        job_seq: int,
        terms: batch_store.JobTerms,
    ) -> Started | None | object:
        claimed = batch_store.claim_hot(conn, page_id, self.instance, seen_attempt)
        if claimed is None:
            return _COLD
        _, url, attempt = claimed
        claim = self._claim_of(page_id, job_seq, url, attempt, terms)
        return self._held(conn, claim, batch_store.set_hold_hot)

    @staticmethod
    def _claim_of(
        page_id: int, job_seq: int, url: str, attempt: int, terms: batch_store.JobTerms
    ) -> batch_store.Claim:
        return batch_store.Claim(
            page_id,
            job_seq,
            attempt,
            url,
            terms.options,
            terms.key_hash,
            None,
            terms.tells_pages,
            terms.hot,
        )

    async def _finish_hot(
        self, finish: batch_store.Finish, job_seq: int, job: ScrapeOrder, result: ScrapeResult
    ) -> None:
        """A hot job's result; on PostgreSQL with the page's settlement, in one call (migration
        0017), when the billing pipeline left one (not when the watchdog answered first: it
        released the hold)."""
        if not self.database.reactor_calls:
            await self._hot_finishes((finish, job_seq))
            return
        params = batch_store.finish_call_params(finish, job_seq)
        if job.to_settle is not None and job.hold_id is not None:
            settle = ledger.settle_params(job.hold_id, *job.to_settle)
            row = await self.database.call("pg_settle_finish_page", {**settle, **params})
            assert row is not None  # the function answers one row
            charged = int(row[0])
            if charged == job.to_settle[0]:  # stored, saying what it cost
                return
            # the hold was settled before: the result says what was charged (nothing)
            result.credits_charged = charged
            params["result"] = self.stored(result)
        await self.database.call("pg_finish_page", params)

    async def _finish_crawl_hot(self, claim: batch_store.Claim, result: ScrapeResult) -> None:
        """A crawl's page without a webhook, on PostgreSQL: its result and its links in one
        call (migration 0015), as ``_finishes`` stores them with ``_links_of``."""
        finish = batch_store.Finish(
            claim.page_id,
            claim.attempt,
            page_status(result),
            self.stored(result),
            None,
            claim.job_seq,
            False,
        )
        links = [link["href"] for link in result.links] if result.success else []
        params = crawl_store.finish_crawl_params(
            finish,
            claim.job_seq,
            claim.options["crawl"],
            links,
            self.config.crawl_pages_per_site,
        )
        await self.database.call("pg_finish_crawl_page", params)

    def _start_all(
        self, conn: Connection, pages: list[tuple[int, int | None]]
    ) -> list[Started | None | Exception]:
        """:meth:`_start` for each page, in one transaction. An error of one page that is not
        the database's (the transaction goes on) fails that page's attempt only."""
        started: list[Started | None | Exception] = []
        for page_id, seen_attempt in pages:
            try:
                started.append(self._start(conn, page_id, seen_attempt))
            except SQLAlchemyError:
                raise
            except Exception as exc:
                started.append(exc)
        return started

    def _start(self, conn: Connection, page_id: int, seen_attempt: int | None) -> Started | None:
        """The claim of an attempt and its hold, in one transaction: the claim and the job of
        the page, or None when there is nothing to scrape. When the account cannot make the
        hold, the claim comes with the refusal in place of the job: the caller stops the job
        (``insufficient_credits``; ``failed`` when the key was revoked or may not use the
        tier) in a transaction of its own, which waits for no other page's claim."""
        claim = batch_store.claim_page(conn, page_id, self.instance, seen_attempt)
        if claim is None:
            return None
        if claim.paid_hold is not None:
            # billed by an attempt that died before storing its result: scraped again, unbilled
            request, compiled = self._request(claim)
            return claim, ScrapeOrder.asked(
                request, compiled, ladder=self._unbilled_ladder(request)
            )
        return self._held(conn, claim, batch_store.set_hold)

    def _held(
        self,
        conn: Any,
        claim: batch_store.Claim,
        record: Callable[[Any, int, int, int], bool],
    ) -> Started:
        """The hold of a claimed page, in the claim's transaction, recorded on the page by
        ``record`` (the hot path's statement or SQLAlchemy's); or the claim with the refusal."""
        request, compiled = self._request(claim)
        try:
            caller, price, hold_id = self.scraper.hold_in(
                conn,
                claim.key_hash,
                request.engine,
                request.proxy_type,
                request.max_credits,
                request.country,
            )
        except (PaymentRequired, Unauthorized, Forbidden) as exc:
            return claim, exc
        record(conn, claim.page_id, claim.attempt, hold_id)
        return claim, ScrapeOrder.held(request, compiled, caller, price, hold_id)

    def _request(self, claim: batch_store.Claim) -> tuple[ScrapeRequest, Any]:
        """The page's scrape request: its job's, with the page's URL, which was checked when
        the job was made (service.jobs.crawl_rules for a crawl's links)."""
        request, compiled = self._checked(claim.job_seq, claim.options, claim.url)
        return request.model_copy(update={"url": claim.url.strip()}), compiled

    def _checked(
        self, job_seq: int, options: dict[str, Any], url: str = "http://localhost/"
    ) -> tuple[ScrapeRequest, Any]:
        """A job's options as a checked request (of ``url``), selectors compiled: once per
        job, since they never change; what depends on a page is only its URL."""
        made = self._requests.get(job_seq)
        if made is None:
            kept = {name: value for name, value in options.items() if name not in NOT_SCRAPING}
            # model: checked when the job was made
            made = checked_scrape({**kept, "url": url}, model=True)
            self._requests.put(job_seq, made)
        return made

    def _links_of(
        self, claim: batch_store.Claim, result: ScrapeResult
    ) -> Callable[[Connection, int], int]:
        """What a crawl's page adds to its job with its result: its links, as new pages."""
        links = [link["href"] for link in result.links]
        slots = self.config.crawl_pages_per_site
        crawl, page_id = claim.options["crawl"], claim.page_id
        return lambda conn, job_seq: crawl_store.add_links(
            conn, job_seq, page_id, links, slots, crawl
        )

    def _unbilled_ladder(self, request: ScrapeRequest) -> Ladder | None:
        """An auto request's steps when nothing is billed: those open to any account (with a
        country, the tiers that offer it: the page was paid for at one of them)."""
        if AUTO not in (request.engine, request.proxy_type):
            return None
        steps, _, _ = ladder(
            self.config,
            request.engine,
            request.proxy_type,
            unlocked=request.country is not None,
            trials_left=0,
            max_credits=request.max_credits,
            country=request.country,
        )
        return steps

    def stored(self, result: ScrapeResult) -> str:
        """The result as stored: the JSON ``POST /scrape`` answers, within the size cap."""
        raw = orjson.dumps(result)
        cap = self.config.job_result_max_bytes
        if len(raw) <= cap:
            return raw.decode()
        small: dict[str, Any] = orjson.loads(raw)
        small.update(_BULKY)
        for name in (*format_fields(), *ACTION_FIELDS, *TRUNCATED):
            small.pop(name, None)
        note = (
            f"the result was larger than the job result cap of {cap} bytes: its page was left out"
        )
        small["error"] = f"{small['error']}; {note}" if small.get("error") else note
        return orjson.dumps(small).decode()

    async def purge(self) -> int:
        """Deletes what is past the retention time (config.job_retention_days)."""
        now = ledger.now()
        before = now - timedelta(days=self.config.job_retention_days)
        return await self.database.run(batch_store.purge, before, now - KEYS_KEPT_FOR)
