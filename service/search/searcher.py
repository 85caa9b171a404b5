"""``POST /search`` as a business operation: check, hold, ask the backend, scrape, answer.

Order: the backend is configured (a 400 otherwise), strict parse and validation (the ``scrape``
options as a scrape's), the key's form, the per-key rate limit (one search is one request),
then the hold of the whole worst case in one transaction (service.search.holds): 401, 402, 403
stop the search before the backend is asked. The backend's answer (or a kept one,
service.search.provider) is filtered (service.search.results); the search's own price is
captured when it has any result, the holds of results that will not be scraped are released,
and the web results are scraped concurrently, each as ``POST /scrape`` scrapes (its order, the
engine bridge, the egress guard, robots.txt, politeness, the pipelines' settlement), at most
``SCRAPESPY_SEARCH_SCRAPES_IN_FLIGHT`` at once and within the service's bound on scrapes in
flight. ``credits_charged`` is the search's charge plus each page's, each what its settlement
took. A backend that fails is a 503 ``search_unavailable`` and everything held is released.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, NamedTuple

import orjson
from twisted.internet.defer import Deferred, DeferredSemaphore, gatherResults

from service.billing import keys
from service.billing.ratelimit import retry_after_seconds
from service.core.errors import (
    ApiError,
    BadRequest,
    TooManyRequests,
    Unauthorized,
)
from service.core.schemas import ScrapeRequest, checked_scrape, parse_json_object
from service.core.schemas.search import SearchRequest, checked_search, result_scrape
from service.scrape.order import ScrapeOrder
from service.scrape.results import ScrapeResult
from service.scrape.scraper import Scraper
from service.search.backend import SOURCES, BackendFailed, Query, SearchBackend
from service.search.holds import SearchHolds, SearchLedger, page_share
from service.search.provider import NOT_CONFIGURED, KeptAnswers
from service.search.results import asked_count, asked_text, kept

log = logging.getLogger(__name__)

BACKEND_FAILED = "the search backend is unavailable, retry later; nothing was charged"


class SearchUnavailable(ApiError):
    status = 503
    code = "search_unavailable"
    message = BACKEND_FAILED


class SearchAnswer(NamedTuple):
    body: dict[str, Any]
    remaining: int


class Searcher:
    def __init__(self, scraper: Scraper, backend: SearchBackend | None) -> None:
        self.scraper = scraper
        self.config = scraper.config
        self.backend = backend
        self.answers = (
            KeptAnswers(backend, self.config.search_cache_seconds) if backend is not None else None
        )
        self.ledger = SearchLedger(self.config, scraper.database)

    def parse(self, body: bytes) -> tuple[SearchRequest, ScrapeRequest | None]:
        if self.answers is None:
            raise BadRequest(NOT_CONFIGURED)
        return checked_search(
            parse_json_object(body), self.config.countries, model=self.config.model_configured
        )

    async def search(
        self,
        api_key: str | None,
        request: SearchRequest,
        scrape: ScrapeRequest | None,
        request_id: str | None = None,
    ) -> SearchAnswer:
        assert self.answers is not None and self.backend is not None
        if not api_key or not keys.well_formed(api_key):
            raise Unauthorized()
        key_hash = keys.hash_key(api_key)
        wait = await self.scraper.limiter.check(key_hash)
        if wait > 0:
            raise TooManyRequests(retry_after_seconds(wait))
        pages = request.limit if scrape is not None and "web" in request.sources else 0
        share = page_share(
            scrape.max_credits if scrape is not None else None, self.config.search_credits, pages
        )
        held = await self.ledger.hold(key_hash, scrape, pages, share)
        query = Query(
            asked_text(request),
            tuple(s for s in SOURCES if s in request.sources),
            asked_count(request),
            request.lang,
            request.country,
            request.tbs,
            float(request.timeout),
        )
        try:
            found, _ = await Deferred.fromFuture(asyncio.ensure_future(self.answers.search(query)))
        except BackendFailed as failure:
            log.warning("search backend %s failed: %s", self.backend.name, failure)
            await self.ledger.release_all(held)
            raise SearchUnavailable() from None
        except BaseException:
            await self.ledger.release_all(held)
            raise
        shown: dict[str, list[dict[str, Any]]] = {
            source: kept(request, found.of(source)) for source in request.sources
        }
        to_scrape = shown.get("web", []) if scrape is not None else []
        # the search's own settlement travels while its results are scraped
        settled = Deferred.fromCoroutine(
            self.ledger.settle(
                held,
                any(shown.values()),
                held.scrape_holds[len(to_scrape) :],
                request.query,
                found.elapsed_ms,
            )
        )
        balances: list[int | None] = []
        if to_scrape:
            balances = await self._scrape_all(
                held, request.scrape or {}, share, to_scrape, request_id
            )
        search_settled = await settled
        charged = search_settled.charged
        charged += sum(item["page"]["credits_charged"] for item in to_scrape if item["page"])
        body: dict[str, Any] = {source: shown.get(source, []) for source in SOURCES}
        body |= {"credits_charged": charged, "backend": self.backend.name}
        # the balance once everything settled: the lowest the settlements saw (each charge only
        # lowers it), read from them rather than by one more round trip
        known = [b for b in (search_settled.balance, *balances) if b is not None]
        remaining = min(known) if known else await self.ledger.balance(held.caller.account_id)
        return SearchAnswer(body, remaining)

    async def _scrape_all(
        self,
        held: SearchHolds,
        options: dict[str, Any],
        share: int | None,
        items: list[dict[str, Any]],
        request_id: str | None,
    ) -> list[int | None]:
        """Each item's ``page``: its scrape's result (as ``POST /scrape`` answers it), on the
        hold made for it; the balances their settlements saw."""
        limit = DeferredSemaphore(self.config.search_scrapes_in_flight)
        balances: list[int | None] = []

        async def one(item: dict[str, Any], hold_id: int) -> None:
            try:
                request, compiled = checked_scrape(
                    result_scrape(options, item["url"], share), self.config.countries
                )
            except BadRequest:  # a URL the backend gave that no scrape takes
                await self.ledger.release_one(hold_id)
                item["page"] = None
                return
            assert held.price is not None
            order = ScrapeOrder.held(
                request, compiled, held.caller, held.price, hold_id, request_id=request_id
            )
            self.scraper.active += 1
            try:
                result: ScrapeResult = await self.scraper.bridge.submit(order)
            finally:
                self.scraper.active -= 1
            balances.append(order.balance_after)
            item["page"] = orjson.loads(orjson.dumps(result))

        def run(item: dict[str, Any], hold_id: int) -> Deferred[None]:
            return limit.run(lambda: Deferred.fromCoroutine(one(item, hold_id)))

        await gatherResults(
            [run(item, hold_id) for item, hold_id in zip(items, held.scrape_holds, strict=False)],
            consumeErrors=True,
        )
        return balances
