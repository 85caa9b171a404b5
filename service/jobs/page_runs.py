"""The run of one page of a job, from its claim to its stored result (:class:`PageRuns`).

A page is scraped as ``POST /scrape`` scrapes: authorize-and-hold with the job's key for the page's
price, the engine bridge, settlement by the pipelines; the hold is written on the page's row in the
transaction that makes it, and the result in the page's row once it settled. So a page whose
instance died is taken over knowing whether it was billed (page_claims.claim_page), and the first
page whose price the balance cannot cover stops the job with ``insufficient_credits``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from sqlalchemy import Connection
from sqlalchemy.exc import SQLAlchemyError
from twisted.internet.defer import DeferredSemaphore
from twisted.internet.task import deferLater

from service.billing import ledger
from service.core.config import Config
from service.core.errors import ApiError, Forbidden, PaymentRequired, Unauthorized
from service.core.escalation import AUTO, Ladder, ladder
from service.core.reactor import running
from service.core.schemas import ScrapeRequest, checked_scrape
from service.db import Database
from service.db.grouped import Grouped
from service.db.hot import HotConnection
from service.jobs import batch_hot, batch_store, crawl_store, job_reads, page_claims
from service.jobs.instances import JobCache, instance_name
from service.jobs.page_results import page_status, stored_result
from service.scrape.engine import SHUTTING_DOWN, EngineBridge
from service.scrape.order import ScrapeOrder
from service.scrape.results import ScrapeResult
from service.scrape.scraper import Scraper

# what a job's stored options hold besides its pages' scrape options: a crawl's rules
# (service.jobs.crawls), and how its answers are shown (service.firecrawl.jobs)
NOT_SCRAPING = frozenset({"crawl", "firecrawl"})
# a claimed page's attempt: its job, or the refusal of its hold (PageRuns._start)
Started = tuple[page_claims.Claim, "ScrapeOrder | ApiError"]
_COLD = object()  # PageRuns._start_hot: not a page the hot path starts
KEY_GONE = "the API key that made this job was revoked; its remaining pages were not scraped"


class PageInterrupted(Exception):
    """The service shut down under a page: it was released unbilled, and is run again (by this
    instance once it is back, or by another)."""


class PageRuns:
    """Runs a job's pages on this instance (service.jobs.queue hands them over)."""

    def __init__(self, config: Config, database: Database, scraper: Scraper, bridge: EngineBridge):
        self.config = config
        self.database = database
        self.scraper = scraper
        self.bridge = bridge
        self.instance = instance_name()
        self._scraping = DeferredSemaphore(config.job_pages_in_flight)
        self._starts: Grouped[tuple[int, int | None], Started | None]
        self._starts = Grouped(database, self._start_all)
        self._finishes: Grouped[batch_store.Finish, bool]
        self._finishes = Grouped(database, batch_store.finish_pages)
        # SQLite's hot path: the pages that start, or finish, while a transaction of the same
        # kind is under way share the next one (a write each was three a page with the
        # settlement, all waiting for SQLite's one writer)
        self._hot_starts: Grouped[tuple[int, int | None, int, page_claims.JobTerms], Any]
        self._hot_starts = Grouped(database, self._start_hot_all, hot=True)
        self._hot_finishes: Grouped[tuple[batch_store.Finish, int], bool]
        self._hot_finishes = Grouped(database, batch_hot.finish_hot_all, hot=True)
        # each job's terms (_terms_of) and checked options (_checked), on the database's threads
        self._terms: JobCache[page_claims.JobTerms] = JobCache()
        self._requests: JobCache[tuple[ScrapeRequest, Any]] = JobCache()

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
        delayed = crawling and self.config.crawl_delay_seconds > 0
        if delayed:
            await deferLater(running(), self.config.crawl_delay_seconds)
        # the scrape is what a job's pages in flight count: their claims, holds and results,
        # round trips to the database, overlap the other pages' scrapes
        job.background = True
        name = claim.options.get("session")
        if name is not None:  # each page starts from the session as stored when it starts
            idle = claim.options.get("session_idle_seconds")
            job.session = await self.scraper.open_session(claim.key_hash, name, idle, bounded=False)
        # a page that waited (its crawl delay, or for a slot: every one taken) reads its job
        waits = delayed or self._scraping.tokens == 0
        result = await self._scraping.run(self._scrape, claim.job_seq, job, waits)
        if result is None:  # its job was cancelled while it waited: not scraped, not billed
            await self._give_back(page_id, claim, job)
            return
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

    async def _scrape(self, job_seq: int, job: ScrapeOrder, waited: bool) -> ScrapeResult | None:
        """The page's scrape, once it has a slot; None, fetching nothing, when it waited (for
        the slot, or its crawl delay) and its job was cancelled meanwhile: a cancel skips the
        pages not started, and a page claimed and held but waiting has not started. (A job
        stopped for want of credits scrapes the pages it could hold: they were paid for.)"""
        if waited and await self.database.run(job_reads.job_cancelled, job_seq):
            return None
        return await self.bridge.submit(job)

    async def _give_back(self, page_id: int, claim: page_claims.Claim, job: ScrapeOrder) -> None:
        """A page whose job was cancelled before its scrape: its hold released, no usage row
        (nothing was fetched), the page skipped as the job's other pages not started."""
        if job.hold_id is not None:
            await self.database.run_hot(ledger.release, job.hold_id)
        await self.database.run(batch_store.release_page, page_id, claim.attempt)

    async def _terms_of(self, job_seq: int) -> page_claims.JobTerms | None:
        terms = self._terms.get(job_seq)
        if terms is None:
            terms = await self.database.run(page_claims.job_terms, job_seq)
            if terms is not None:
                self._terms.put(job_seq, terms)
        return terms

    async def _start_hot(
        self, page_id: int, seen_attempt: int | None, job_seq: int, terms: page_claims.JobTerms
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
            **batch_hot.claim_params(page_id, self.instance, seen_attempt),
            **self.scraper.holds.hold_params(terms.key_hash, engine, tier, most, request.country),
        }
        row = await self.database.call("pg_start_page", params)
        if row is None:
            return _COLD
        claim = self._claim_of(page_id, job_seq, str(row[1]), int(row[2]), terms)
        request = request.model_copy(update={"url": claim.url.strip()})
        try:
            made = self.scraper.holds.authorized(
                row[3:] if row[3] is not None else None,
                terms.key_hash,
                engine,
                tier,
                most,
                request.country,
            )
            if made is None:  # auto, and the residential trials went meanwhile: without one
                made = await self.scraper.holds.hold(
                    terms.key_hash, engine, tier, most, country=request.country
                )
                await self.database.run(page_claims.set_hold, page_id, claim.attempt, made[2])
        except (PaymentRequired, Unauthorized, Forbidden) as exc:
            return claim, exc
        caller, price, hold_id = made
        # a page whose result the hot path stores settles with it, in one call (_finish_hot)
        job = ScrapeOrder.held(request, compiled, caller, price, hold_id, settle_later=terms.hot)
        return claim, job

    def _start_hot_all(
        self,
        conn: HotConnection,
        pages: list[tuple[int, int | None, int, page_claims.JobTerms]],
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
        terms: page_claims.JobTerms,
    ) -> Started | None | object:
        claimed = batch_hot.claim_hot(conn, page_id, self.instance, seen_attempt)
        if claimed is None:
            return _COLD
        _, url, attempt = claimed
        claim = self._claim_of(page_id, job_seq, url, attempt, terms)
        return self._held(conn, claim, batch_hot.set_hold_hot)

    @staticmethod
    def _claim_of(
        page_id: int, job_seq: int, url: str, attempt: int, terms: page_claims.JobTerms
    ) -> page_claims.Claim:
        return page_claims.Claim(
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
        params = batch_hot.finish_call_params(finish, job_seq)
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

    async def _finish_crawl_hot(self, claim: page_claims.Claim, result: ScrapeResult) -> None:
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
        claim = page_claims.claim_page(conn, page_id, self.instance, seen_attempt)
        if claim is None:
            return None
        if claim.paid_hold is not None:
            # billed by an attempt that died before storing its result: scraped again, unbilled
            request, compiled = self._request(claim)
            return claim, ScrapeOrder.asked(
                request, compiled, ladder=self._unbilled_ladder(request)
            )
        return self._held(conn, claim, page_claims.set_hold)

    def _held(
        self,
        conn: Any,
        claim: page_claims.Claim,
        record: Callable[[Any, int, int, int], bool],
    ) -> Started:
        """The hold of a claimed page, in the claim's transaction, recorded on the page by
        ``record`` (the hot path's statement or SQLAlchemy's); or the claim with the refusal."""
        request, compiled = self._request(claim)
        try:
            caller, price, hold_id = self.scraper.holds.hold_in(
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

    def _request(self, claim: page_claims.Claim) -> tuple[ScrapeRequest, Any]:
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
        self, claim: page_claims.Claim, result: ScrapeResult
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
        return stored_result(result, self.config.job_result_max_bytes)
