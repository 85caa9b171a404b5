"""The engine bridge: one long-lived Scrapy crawler, fed one request per API call.

The HTTP front talks to Scrapy only through this module. :meth:`EngineBridge.start` builds the
crawler once; :meth:`EngineBridge.submit` turns a :class:`ScrapeOrder`, whose credits are held
already, into one request for the running engine and returns the order's Deferred, which fires
with the result once the pipelines (result building, billing) are through. A watchdog answers an
order that overran its timeout by a margin, and releases its hold, whatever Scrapy is doing with
it; so does the shutdown's :meth:`EngineBridge.drain`, after which an order is answered and its hold
released without entering the engine, and so does a caller who went away (the HTTP front cancels
the answer it waits for). A scrape that finishes after its caller was answered so bills nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler, CrawlerRunner
from scrapy.downloadermiddlewares.cookies import CookiesMiddleware
from scrapy.settings import Settings
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import deferLater

from service.billing import ledger
from service.core.config import Config
from service.core.reactor import running
from service.db import Database
from service.extraction import empty_fields
from service.extraction.bounds import AnswerBounds
from service.extraction.llm import LanguageModel, ModelEndpoint
from service.extraction.pool import ExtractionPool
from service.scrape.metrics import HOLDS_OPEN, record_scrape
from service.scrape.order import ScrapeItem, ScrapeOrder, new_result, timed_out, usage_row
from service.scrape.results import ScrapeResult
from service.scrape.scrapy_settings import from_config

log = logging.getLogger(__name__)

WATCHDOG_MARGIN = 5.0
SHUTTING_DOWN = "the service is shutting down; the scrape was not completed and not billed"
CALLER_GONE = "the caller went away before the answer; the scrape was not billed"


def crawler_settings(config: Config) -> Settings:
    """The crawler's settings: the project's, with the ones ``config`` decides (the js engine's
    handler makes its browser's launch options or remote address of them)."""
    settings = Settings()
    settings.setmodule("service.scrape.scrapy_settings", priority="project")
    settings.update(from_config(config), priority="project")
    return settings


def endpoint_of(config: Config) -> ModelEndpoint:
    """The operator's language model as its SCRAPESPY_LLM_* settings give it."""
    return ModelEndpoint(
        config.llm_base_url,
        config.llm_model,
        config.llm_api_key,
        timeout_seconds=config.llm_timeout_seconds,
        concurrency=config.llm_concurrency,
        max_input_tokens=config.llm_max_input_tokens,
        max_output_tokens=config.llm_max_output_tokens,
    )


class EngineBridge:
    def __init__(self, config: Config, database: Database | None):
        self.config = config
        self.database = database
        self.runner: CrawlerRunner | None = None
        self.crawler: Crawler | None = None
        self.spider: Any = None  # the feed spider (spiders.feed), named by SCRAPESPY_FEED_SPIDER
        self._finished: Deferred[None] | None = None
        self._watchdogs: dict[int, Any] = {}  # order id -> IDelayedCall
        self._orders: dict[int, ScrapeOrder] = {}
        self._drained = False  # the shutdown answered what was in flight; nothing more goes in
        self._cookie_jars: Any = None
        self.extractor: ExtractionPool | None = None
        self.model: LanguageModel | None = None

    @property
    def in_flight(self) -> int:
        return len(self._orders)

    def _alone_in_flight(self) -> bool:
        return len(self._orders) <= 1

    async def start(self) -> None:
        settings = crawler_settings(self.config)
        self.runner = CrawlerRunner(settings)
        self.crawler = self.runner.create_crawler(load_object(settings["SCRAPESPY_FEED_SPIDER"]))
        # Settings are deep-copied, so the database (a live pool) travels on the crawler.
        self.crawler.scrapespy_database = self.database  # type: ignore[attr-defined]
        self.crawler.scrapespy_config = self.config  # type: ignore[attr-defined]
        if self.config.model_configured:  # pipelines.llm; its key stays out of Scrapy's settings
            self.model = LanguageModel(endpoint_of(self.config))
            self.crawler.scrapespy_model = self.model  # type: ignore[attr-defined]
        if self.config.extract_workers > 0:
            self.extractor = ExtractionPool(
                self.config.extract_workers,
                alone=self._alone_in_flight,
                bounds=AnswerBounds.of(self.config),
            )
            self.extractor.start()
            self.crawler.scrapespy_extractor = self.extractor  # type: ignore[attr-defined]
        opened: Deferred[None] = Deferred()

        def on_opened(spider: Any) -> None:
            if not opened.called:
                opened.callback(None)

        self._on_opened = on_opened  # signals hold weak references
        self.crawler.signals.connect(self._on_opened, signal=signals.spider_opened)
        self.crawler.signals.connect(self._item_scraped, signal=signals.item_scraped)
        self.crawler.signals.connect(self._item_failed, signal=signals.item_error)
        self._finished = self.runner.crawl(self.crawler)
        self._finished.addErrback(self._crawl_failed, opened)
        await opened
        assert self.crawler.spider is not None and self.crawler.engine is not None
        self.spider = self.crawler.spider  # type: ignore[assignment]
        for mw in self.crawler.engine.downloader.middleware.middlewares:
            if isinstance(mw, CookiesMiddleware):
                self._cookie_jars = mw.jars

    def _crawl_failed(self, failure: Any, opened: Deferred[None]) -> None:
        log.error("the crawler stopped: %s", failure.getErrorMessage())
        if not opened.called:
            opened.errback(failure)

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.stop()
            self.runner = None
        if self.extractor is not None:
            await self.extractor.stop()
            self.extractor = None
        if self.model is not None:
            await Deferred.fromFuture(asyncio.ensure_future(self.model.close()))
            self.model = None

    def submit(self, order: ScrapeOrder) -> Deferred[ScrapeResult]:
        """Scrape ``order``, whose credits (if any) are held already. Returns its answer."""
        if self._drained:
            # the hold came in after the shutdown's drain: give it back and fetch nothing
            self._abandon(order, SHUTTING_DOWN)
            return order.done
        assert self.crawler is not None and self.crawler.engine is not None
        assert self.spider is not None
        if order.hold_id is not None:
            HOLDS_OPEN.inc()
        self._orders[order.id] = order
        self._watchdogs[order.id] = running().callLater(
            order.timeout + WATCHDOG_MARGIN, self._overran, order
        )
        order.done.addBoth(self._forget, order)
        if order.session is not None and order.engine != "js":
            self._seed_jar(order)
        self.crawler.engine.crawl(self.spider.request_for(order))
        return self._answer_for_caller(order)

    def _answer_for_caller(self, order: ScrapeOrder) -> Deferred[ScrapeResult]:
        """``order``'s answer, for a caller who may go away: cancelling it (the HTTP front does
        when the client disconnects) answers the order without it and releases its hold, so a
        scrape that finishes later bills nothing."""
        answer: Deferred[ScrapeResult] = Deferred(lambda _: self._caller_gone(order))
        order.done.chainDeferred(answer)
        return answer

    def _caller_gone(self, order: ScrapeOrder) -> None:
        if order.done.called:
            return
        log.info(
            "the caller of scrape %s went away; releasing its hold",
            order.id,
            extra={"event": "scrape_caller_gone", "request_id": order.request_id},
        )
        self._abandon(order, CALLER_GONE)

    def _forget(self, result: Any, order: ScrapeOrder) -> Any:
        if order.hold_id is not None:
            HOLDS_OPEN.dec()
        self._orders.pop(order.id, None)
        watchdog = self._watchdogs.pop(order.id, None)
        if watchdog is not None and watchdog.active():
            watchdog.cancel()
        if self._cookie_jars is not None:
            jar = self._cookie_jars.pop(order.id, None)
            session = order.session
            if session is not None and jar is not None and order.engine != "js":
                if not session.rendered:  # what the static engine left in it
                    session.keep_jar(list(jar.jar))
        return result

    def _seed_jar(self, order: ScrapeOrder) -> None:
        """The order's own jar starts with its session's cookies (service.scrape.sessions);
        the js engine gets them in its browser context instead."""
        if self._cookie_jars is None or order.session is None:
            return
        jar = self._cookie_jars[order.id]
        for cookie in order.session.jar_cookies():
            jar.jar.set_cookie(cookie)

    def _item_scraped(self, item: ScrapeItem, **_: Any) -> None:
        order = item.order
        if order.finish(item.result):
            record_scrape(item.result, order.proxy_type, item.tier_used, item.charged)

    def _item_failed(self, item: ScrapeItem, failure: Any, **_: Any) -> None:
        if not item.order.done.called:
            item.order.done.errback(failure)

    def _overran(self, order: ScrapeOrder) -> None:
        self._watchdogs.pop(order.id, None)
        if order.done.called:
            return
        log.warning(
            "scrape %s overran its timeout of %s s; answering without it",
            order.id,
            order.timeout,
            extra={"event": "scrape_overran", "request_id": order.request_id},
        )
        self._abandon(order, timed_out(order), "timeout")

    def _abandon(self, order: ScrapeOrder, error: str, code: str = "unavailable") -> Deferred[Any]:
        """Answer an order that Scrapy has not finished, and release its hold (at most once),
        unless its own answer was claimed first (pipelines.billing): then that one goes out."""
        result = new_result(
            order,
            empty_fields(order.selectors),
            final_url=order.url,
            status_code=0,
            error=error,
            error_code=code,
        )
        if not order.claim(result):
            return succeed(None)
        if order.hold_id is None or self.database is None:
            order.finish(result)
            return succeed(None)
        return self._release(order, result).addCallbacks(
            lambda _: order.finish(result), order.done.errback
        )

    def _release(self, order: ScrapeOrder, result: ScrapeResult) -> Deferred[Any]:
        """Release ``order``'s hold, unbilled, with a usage row for the answer ``result``."""
        assert self.database is not None and order.hold_id is not None

        def released(settlement: ledger.Settlement) -> None:
            order.balance_after = settlement.balance

        return self.database.run_hot(
            ledger.release, order.hold_id, usage_row(order, result, "none")
        ).addCallback(released)

    async def drain(self, grace: float) -> int:
        """Wait up to ``grace`` seconds for the scrapes in flight; answer and release the rest.
        A scrape submitted afterwards is answered and released the same way, unfetched.

        Returns how many had to be abandoned.
        """
        deadline = time.monotonic() + grace
        while self._orders and time.monotonic() < deadline:
            await deferLater(running(), 0.05)
        self._drained = True
        left = [order for order in self._orders.values() if not order.done.called]
        for order in left:
            await self._abandon(order, SHUTTING_DOWN)
        return len(left)
