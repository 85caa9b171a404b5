"""``proxy_type: "auto"`` and ``engine: "auto"``: try again on the next step while it can help.

An auto order carries its ladder (service.core.escalation): the (engine, tier) steps it may
try, those over its ``max_credits`` left out. :func:`start_escalation` (spiders.feed) puts the
first step in the meta. Each answer or failure of an attempt is recorded in ``order.attempts``
(tier used, engine, fingerprint, status, blocked, block reason, error code, elapsed time), and
the next attempt is the same request, from its URL again, for:

* Chrome's fingerprint at the same tier, before the next tier, when a ``static`` attempt that
  presented Scrapy's own (``SCRAPESPY_STATIC_FINGERPRINT=scrapy``) met what follows: many
  sites tell a client by its TLS and HTTP/2 fingerprint before any HTML (service.impersonation);
* the next tier, when the answer is an anti-bot page (``meta["scrapespy_block_reason"]``, set
  by the anti-bot middleware before this one sees the response), a 403 or a 429, or the
  connection was reset or cut short (what a proxy can help with; a refused connection or an
  unknown host is the target's, and the proxy pool has already tried its other proxies);
* the ``js`` engine at the same tier, when a ``static`` answer is a JavaScript shell
  (service.extraction.shell); it gets a fresh browser context of its own.

No attempt starts with less than :data:`MIN_LEFT` seconds of the order's timeout left; the last
answer or failure is then the order's. Billing charges the attempt that answered, at its engine
and tier (pipelines.billing). A request that is not auto has no ladder in its meta and costs this
middleware one dictionary lookup per answer.

    DOWNLOADER_MIDDLEWARES = {"middlewares.escalation.EscalationMiddleware": 560}

Below the anti-bot middleware (580): Scrapy hands responses down from the highest number, so
this one sees them marked, and failures after the proxy pool (740) has retried its own proxies.
Stats: ``scrapespy/escalation/tier``, ``scrapespy/escalation/js``,
``scrapespy/escalation/fingerprint``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from middlewares.failure_codes import failure_code
from middlewares.proxy_pool import MIDWAY, classify
from service.extraction.shell import is_js_shell
from service.scrape import meta as scrape_meta
from service.scrape.browser_request import for_browser
from service.scrape.meta import (
    ATTEMPT_STARTED,
    BLOCK_REASON,
    LADDER,
    PRESENTED,
    PROXIES_FAILED,
    PROXY_IN_USE,
    PROXY_TIER,
    TIER_USED,
)

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

    from service.scrape.order import ScrapeOrder

MIN_LEFT = 0.05  # seconds: less than this left of the timeout, no new attempt
RETRY_STATUSES = frozenset((403, 429))
# what an attempt leaves in the meta that must not reach the next one
_STALE = (
    TIER_USED,
    PROXY_IN_USE,
    PROXIES_FAILED,
    BLOCK_REASON,
    PRESENTED,
    "proxy",
    "redirect_times",
    "redirect_ttl",
    "redirect_urls",
    "redirect_reasons",
)
STATS_PREFIX = "scrapespy/escalation"
BROWSER_FINGERPRINT = "chrome"  # what an attempt blocked with Scrapy's own tries next


def start_escalation(order: ScrapeOrder, meta: dict[str, Any]) -> str:
    """Puts the first step of auto ``order`` in its request's ``meta``; returns its engine."""
    assert order.ladder is not None
    engine, tier = order.ladder.first
    meta[PROXY_TIER] = tier
    meta[LADDER] = order.ladder
    meta[ATTEMPT_STARTED] = order.started
    order.attempts = []
    return engine


class EscalationMiddleware:
    def __init__(
        self,
        stats: StatsCollector | None = None,
        clock: Callable[[], float] = time.monotonic,
        fingerprint: str = BROWSER_FINGERPRINT,
    ):
        self.stats = stats
        self.clock = clock
        self.fingerprint = fingerprint  # a static attempt's when its meta names none

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.stats, fingerprint=crawler.settings.get("SCRAPESPY_STATIC_FINGERPRINT"))

    def process_response(self, request: Request, response: Response) -> Request | Response:
        ladder = scrape_meta.ladder(request)
        if ladder is None:
            return response
        engine = scrape_meta.engine(request)
        tier = scrape_meta.attempt_tier(request)
        reason = scrape_meta.block_reason(request)
        status = response.status
        code = "blocked" if reason else ("http_error" if status >= 400 else None)
        self._record(request, engine, status, reason, code)
        if reason or status in RETRY_STATUSES:
            if self._presents_scrapy(request, engine):
                return self._next(request, engine, tier, "fingerprint") or response
            higher = ladder.next_tier(engine, tier)
            if higher is not None:
                return self._next(request, engine, higher, "tier") or response
        elif engine == "static" and status < 400 and ladder.renders_at(tier):
            if is_js_shell(response.body):
                return self._next(request, "js", tier, "js") or response
        return response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        ladder = scrape_meta.ladder(request)
        if ladder is None:
            return None
        engine = scrape_meta.engine(request)
        self._record(request, engine, 0, None, failure_code(exception))
        if classify(exception) == MIDWAY:
            if self._presents_scrapy(request, engine):
                return self._next(request, engine, scrape_meta.attempt_tier(request), "fingerprint")
            higher = ladder.next_tier(engine, scrape_meta.attempt_tier(request))
            if higher is not None:
                return self._next(request, engine, higher, "tier")
        return None

    def _record(
        self, request: Request, engine: str, status: int, reason: str | None, code: str | None
    ) -> None:
        order = scrape_meta.order(request)
        assert order.attempts is not None
        order.attempts.append(
            {
                "tier": scrape_meta.tier_used(request, scrape_meta.attempt_tier(request)),
                "engine": engine,
                "fingerprint": self._fingerprint(request, engine),
                "status_code": status,
                "blocked": reason is not None,
                "block_reason": reason,
                "error_code": code,
                "elapsed_ms": max(
                    0, int((self.clock() - scrape_meta.attempt_started(request)) * 1000)
                ),
            }
        )

    def _fingerprint(self, request: Request, engine: str) -> str:
        # the js engine is Chromium itself: its network stack is Chrome's, and the identity its
        # context presented says which (service.browser.identity)
        if engine == "js":
            return scrape_meta.presented(request) or BROWSER_FINGERPRINT
        return scrape_meta.fingerprint(request, self.fingerprint)

    def _presents_scrapy(self, request: Request, engine: str) -> bool:
        return engine == "static" and self._fingerprint(request, engine) != BROWSER_FINGERPRINT

    def _next(self, request: Request, engine: str, tier: str, why: str) -> Request | None:
        """The order's request again, for ``engine`` at ``tier``, unless its time is up."""
        deadline = scrape_meta.deadline(request)
        if deadline is not None and deadline - self.clock() <= MIN_LEFT:
            return None
        order = scrape_meta.order(request)
        retry = request.replace(url=order.url, dont_filter=True)
        for key in _STALE:
            retry.meta.pop(key, None)
        scrape_meta.set_proxy_tier(retry, tier)
        scrape_meta.set_attempt_started(retry, self.clock())
        if why == "fingerprint":
            scrape_meta.set_fingerprint(retry, BROWSER_FINGERPRINT)
        if engine == "js" and not scrape_meta.renders(retry):
            # as spiders.feed asks for js; every attempt renders in a fresh context
            for_browser(retry.meta, order, attempt=len(order.attempts or ()))
        if self.stats is not None:
            self.stats.inc_value(f"{STATS_PREFIX}/{why}")
        return retry
