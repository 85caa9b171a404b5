"""``POST /crawl`` and ``POST /map``: a site's pages, followed from a start URL and its sitemap.

A crawl is a job (service.jobs.batches) whose pages are found as it goes: its seeds (the start page,
and the sitemap's URLs unless ``"sitemap": "skip"``) are stored with the job before the ``202``,
and each page's links that pass the rules (service.jobs.crawl_rules) become pages in the
transaction that stores its result (service.jobs.crawl_store). Each page is scraped, held, settled
and billed exactly as a batch's page; robots.txt is honoured per page by the engine's robots
middleware unless the options say ``"respect_robots": false``. A crawl's pages in flight are at
most ``config.crawl_pages_per_site`` across all instances, each after
``config.crawl_delay_seconds``.

A map answers at once: the sitemap's URLs and the start page's links, fetched as unbilled
scrapes (so through the egress guard), the whole held and settled as one scrape priced
``config.map_credits``, charged only when it answered.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Final

from service.billing import keys, ledger
from service.core.config import Config
from service.core.errors import BadRequest, insufficient_credits, key_cap_reached
from service.core.schemas import ScrapeRequest, checked_scrape, parse_json_object, validate
from service.db.tables import UsageRow
from service.jobs import crawl_store
from service.jobs.answers import JobAccepted, MapResult
from service.jobs.batch_store import TooManyJobs as StoredTooManyJobs
from service.jobs.batches import Batches, TooManyJobs
from service.jobs.crawl_rules import CRAWL_FIELDS, CrawlRules, MapRequest, Rules, normalised
from service.jobs.sitemaps import sitemap_urls
from service.jobs.webhook_spec import take_webhook
from service.scrape.order import ScrapeOrder

MAP_FAILED: Final = "map_failed"
NOT_FETCHED = "no sitemap listed URLs within the rules, and the start page could not be fetched"
NO_SITEMAP = "the site has no sitemap listing URLs within the rules"
NONE_WITHIN_RULES = "neither the sitemaps nor the start page have URLs within the rules"


class Crawls:
    def __init__(self, batches: Batches):
        self.batches = batches
        self.config: Config = batches.config

    # POST /crawl -----------------------------------------------------------------------------

    def parse(self, body: bytes) -> tuple[CrawlRules, dict[str, Any], str]:
        """The crawl's own fields, the scrape options of its pages (with, under ``webhook``, the
        job's webhook as service.jobs.webhook_spec checked it), and its start URL (checked as
        ``POST /scrape`` checks it with those options); a 400 names the field."""
        data = parse_json_object(body)
        if "urls" in data:
            raise BadRequest("invalid request: 'urls': a crawl starts from one URL, 'url'")
        own = {name: data.pop(name) for name in CRAWL_FIELDS if name in data}
        asked = validate(CrawlRules, own)
        webhook = take_webhook(data, self.config)
        request, _ = checked_scrape(data, self.config.countries, model=self.config.model_configured)
        if normalised(request.url) is None:
            raise BadRequest("invalid request: 'url': must be an http(s) URL")
        options = {name: value for name, value in data.items() if name != "url"}
        if webhook is not None:
            options["webhook"] = webhook
        return asked, options, request.url

    async def create(
        self, caller: keys.Caller, asked: CrawlRules, options: dict[str, Any], url: str
    ) -> JobAccepted:
        rules = Rules.of(url, asked)
        start = normalised(url)
        assert start is not None  # parse checked it
        await self.batches.start_session(caller, options)
        timeout = options.get("timeout", ScrapeRequest.model_fields["timeout"].default)
        seeds = [] if asked.sitemap == "only" else [start]
        if asked.sitemap != "skip":
            found = await sitemap_urls(
                self.batches.bridge,
                start,
                rules.accepts,
                asked.max_pages,
                timeout=float(timeout),
            )
            seeds += [page for page in found if page != start]
        webhook = options.pop("webhook", None)
        stored = {
            **options,
            "crawl": {
                "rules": rules.stored(),
                "max_pages": asked.max_pages,
                "max_depth": asked.max_depth,
                "sitemap": asked.sitemap,
            },
        }
        public_id = uuid.uuid4().hex
        try:
            await self.batches.database.run(
                crawl_store.create_crawl,
                public_id=public_id,
                account_id=caller.account_id,
                key_id=caller.key_id,
                key_hash=caller.key_hash,
                options=stored,
                seeds=seeds[: asked.max_pages],
                limit=self.config.max_jobs_per_account,
                slots=self.config.crawl_pages_per_site,
                webhook=webhook,
            )
        except StoredTooManyJobs as exc:
            raise TooManyJobs(
                f"this account has {exc.limit} jobs queued or running, the most it may; wait "
                "for one to finish or cancel one (DELETE /jobs/{id})"
            ) from None
        if self.batches.database.dialect != "postgresql":
            await self.batches.queue.enqueue(0)  # the local loop: look for pages now
        return {"id": public_id, "status_url": f"{self.config.public_url}/jobs/{public_id}"}

    # POST /map -------------------------------------------------------------------------------

    def parse_map(self, body: bytes) -> MapRequest:
        asked = validate(MapRequest, parse_json_object(body))
        validate(ScrapeRequest, {"url": asked.url})
        if normalised(asked.url) is None:
            raise BadRequest("invalid request: 'url': must be an http(s) URL")
        return asked

    async def map(self, caller: keys.Caller, asked: MapRequest) -> MapResult:
        """The site's URLs; held and settled as one scrape of ``config.map_credits``, charged
        only when it found some (a map that found none says why, free)."""
        hold_id = await self.batches.database.run(self._hold, caller, self.config.map_credits)
        urls: list[str] = []
        error: str | None = "the map did not finish"
        started = time.monotonic()
        try:
            urls, error = await self._map(asked)
        finally:
            usage = UsageRow(
                account_id=caller.account_id,
                url=asked.url[:4000],
                engine="map",
                tier_requested="none",
                tier_used="none",
                status_code=None,
                success=bool(urls),
                blocked=False,
                error=error,
                elapsed_ms=int((time.monotonic() - started) * 1000),
            )
            cost = self.config.map_credits if urls else 0
            await self.batches.database.run(ledger.settle, hold_id, cost=cost, usage_row=usage)
        return {
            "url": asked.url,
            "urls": urls,
            "count": len(urls),
            "error": error,
            "error_code": MAP_FAILED if error else None,
        }

    def _hold(self, conn: Any, caller: keys.Caller, price: int) -> int:
        try:
            return ledger.hold(
                conn,
                caller.account_id,
                price,
                trial=False,
                ttl_seconds=self.config.hold_ttl_seconds,
                key_id=caller.key_id,
                key_cap=caller.monthly_cap,
            )
        except ledger.KeyCapReached as exc:
            raise key_cap_reached(exc.cap, exc.spent, exc.cost) from None
        except ledger.InsufficientCredits as exc:
            raise insufficient_credits(exc.cost, exc.available) from None

    async def _map(self, asked: MapRequest) -> tuple[list[str], str | None]:
        """The URLs found, or none and why."""
        start = normalised(asked.url)
        assert start is not None  # parse_map checked it
        rules = Rules.of(start, asked)
        found: dict[str, None] = {}
        if asked.sitemap != "skip":
            listed = await sitemap_urls(self.batches.bridge, start, rules.accepts, asked.max_urls)
            found.update(dict.fromkeys(listed))
        why = NO_SITEMAP
        if asked.sitemap != "only":
            result = await self.batches.bridge.submit(
                ScrapeOrder(url=start, respect_robots=asked.respect_robots)
            )
            if result.success:
                for url in (start, *(link["href"] for link in result.links)):
                    kept = rules.accepts(url)
                    if kept is not None:
                        found[kept] = None
                why = NONE_WITHIN_RULES
            else:
                why = f"{NOT_FETCHED}: {result.error}"
        if not found:
            return [], why
        return list(found)[: asked.max_urls], None
