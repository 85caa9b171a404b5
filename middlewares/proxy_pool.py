"""Server-owned proxy pools: send a scrape through a healthy proxy of its tier, or go direct.

The engine bridge puts the requested tier in ``meta["scrapespy_proxy_tier"]`` (``none``,
``datacenter``, ``residential``). This middleware picks a proxy of that tier's pool, round-robin
over the healthy ones, and records the tier actually used in ``meta["scrapespy_tier_used"]``:
the result pipeline turns it into ``proxy_used`` and billing charges that tier. When the pool
is empty or every proxy in it is benched, the request goes direct and the tier used is ``none``.

* ``static`` requests get ``meta["proxy"]`` (credentials included); Scrapy's
  ``HttpProxyMiddleware`` (750) turns the credentials into ``Proxy-Authorization`` and strips
  them from the URL. A direct request gets ``meta["proxy"] = None``, which makes
  ``HttpProxyMiddleware`` drop a ``Proxy-Authorization`` left by an earlier attempt (and ignore
  ``http_proxy`` from the environment: ``none`` means a direct connection).
* ``js`` requests (``meta["playwright"]``) get ``meta["playwright_context_kwargs"]["proxy"] =
  {"server", "username", "password"}``: Playwright sets proxies per browser context and
  scrapy-playwright ignores ``meta["proxy"]``, which stays ``None`` so that no
  ``Proxy-Authorization`` header is handed to the browser (it would send it to the target).
  ``meta["scrapespy_proxy"]`` names the proxy in use (``<tier>/<n>``, no credentials); the
  browser context must be one per (request, proxy), so a retry on another proxy needs a fresh
  context.

Sessions (service.scrape.sessions): a request whose order has a session prefers the session's
exit, the proxy its earlier calls went through, while that proxy is healthy; the proxy that
carries the request becomes the session's exit (another one when the old one died).

Passive health: a proxy that cannot be connected to (refused, its name does not resolve, a
connect timeout, a CONNECT refused, a 407) is benched for ``SCRAPESPY_PROXY_BENCH_SECONDS`` and
tried again afterwards. A failure that may be the target's as much as the proxy's (connection
dropped mid-request, a read timeout, a CONNECT the proxy could not complete) is a strike; a proxy
is benched after ``SCRAPESPY_PROXY_MAX_STRIKES`` of them in a row, so that one user's slow or
dead target cannot bench a whole pool. Either way the scrape is retried on another proxy of the
pool, at most ``SCRAPESPY_PROXY_ATTEMPTS`` proxies in all, and then directly.

Countries: an entry ``de=http://host:port`` is a proxy in Germany (service.core.places). A
request whose ``meta["scrapespy_country"]`` names a country goes through that country's proxies
of its tier only (then directly, as above); any other request, through any proxy of its tier.

Credentials never reach logs, stats, errors or results: proxies are named by ``host:port``.

    DOWNLOADER_MIDDLEWARES = {"middlewares.proxy_pool.ProxyPoolMiddleware": 740}
    SCRAPESPY_PROXIES_DATACENTER = ["http://user:pass@dc1.example:3128"]
    SCRAPESPY_PROXIES_RESIDENTIAL = ["http://user:pass@gw.example:8000"]
    SCRAPESPY_PROXY_BENCH_SECONDS = 60
    SCRAPESPY_PROXY_MAX_STRIKES = 3
    SCRAPESPY_PROXY_ATTEMPTS = 2
    SCRAPESPY_PROXY_POOL_ENABLED = True     # False: NotConfigured

Stats: ``scrapespy/proxy_pool/<tier>/used``, ``.../benched``, ``.../retried``, ``.../direct``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.core.downloader.handlers.http11 import TunnelError
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    NotConfigured,
    ResponseDataLossError,
)
from twisted.internet import error as net_error
from twisted.web.client import ResponseFailed

from middlewares.proxies import Proxy, ProxyPool, shown
from service.core.vocabulary import PROXY_TIERS
from service.scrape import meta as scrape_meta

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

TIERS: tuple[str, ...] = PROXY_TIERS
STATS_PREFIX = "scrapespy/proxy_pool"

# Chromium's names for failures of the proxy itself, and for connections that died on the way.
_BROWSER_CONNECT_FAILURES = (
    "net::ERR_PROXY_CONNECTION_FAILED",
    "net::ERR_INVALID_AUTH_CREDENTIALS",
    "net::ERR_PROXY_AUTH_",
    "net::ERR_NO_SUPPORTED_PROXIES",
    "net::ERR_PROXY_CERTIFICATE_INVALID",
)
_BROWSER_MIDWAY_FAILURES = (
    "net::ERR_TUNNEL_CONNECTION_FAILED",
    "net::ERR_CONNECTION_RESET",
    "net::ERR_CONNECTION_CLOSED",
    "net::ERR_CONNECTION_ABORTED",
    "net::ERR_EMPTY_RESPONSE",
)
_TUNNEL_STATUS = re.compile(r"'status': (\d{3})")

CONNECT = "connect"
MIDWAY = "midway"
TIMEOUT = "timeout"


def _session_exit(request: Request) -> str | None:
    """The proxy the request's session went out through so far, if it has one."""
    order = scrape_meta.order_if_any(request)
    session = order.session if order is not None else None
    return session.exit if session is not None else None


def classify(exception: BaseException) -> str | None:
    """What a download failure says about the proxy it went through, or None if nothing."""
    if isinstance(exception, DownloadConnectionRefusedError | net_error.ConnectionRefusedError):
        return CONNECT
    # Through a proxy, the download handler resolves only the proxy's name (the egress guard
    # raises Twisted's DNSLookupError for targets, which says nothing about the proxy).
    if isinstance(exception, CannotResolveHostError):
        return CONNECT
    if isinstance(exception, TunnelError):
        status = _TUNNEL_STATUS.search(str(exception))
        # 407: our credentials were refused; no status: what answered is no HTTP proxy.
        if status is None or status.group(1) == "407":
            return CONNECT
        return MIDWAY
    if isinstance(exception, DownloadTimeoutError | net_error.TimeoutError):
        # A connect timeout keeps Twisted's TimeoutError as its cause; a read timeout has none.
        cause = exception.__cause__
        if isinstance(exception, net_error.TimeoutError) or isinstance(
            cause, net_error.TimeoutError
        ):
            return CONNECT
        return TIMEOUT
    midway = (
        DownloadFailedError,
        ResponseDataLossError,
        ResponseFailed,
        net_error.ConnectionLost,
        net_error.ConnectionDone,
    )
    if isinstance(exception, midway):
        return MIDWAY
    if type(exception).__module__.startswith(("playwright", "patchright")):
        message = str(exception)
        if any(marker in message for marker in _BROWSER_CONNECT_FAILURES):
            return CONNECT
        if any(marker in message for marker in _BROWSER_MIDWAY_FAILURES):
            return MIDWAY
        if type(exception).__name__ == "TimeoutError":
            return TIMEOUT
    return None


class ProxyPoolMiddleware:
    def __init__(
        self,
        pools: dict[str, ProxyPool],
        *,
        attempts: int = 2,
        stats: StatsCollector | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.pools = pools
        self.attempts = attempts
        self.stats = stats
        self.clock = clock

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if not settings.getbool("SCRAPESPY_PROXY_POOL_ENABLED"):
            raise NotConfigured("SCRAPESPY_PROXY_POOL_ENABLED is off")
        bench_seconds = settings.getfloat("SCRAPESPY_PROXY_BENCH_SECONDS")
        max_strikes = max(1, settings.getint("SCRAPESPY_PROXY_MAX_STRIKES"))
        pools = {
            tier: ProxyPool.from_urls(
                tier,
                settings.getlist(f"SCRAPESPY_PROXIES_{tier.upper()}"),
                bench_seconds=bench_seconds,
                max_strikes=max_strikes,
            )
            for tier in TIERS
        }
        for pool in pools.values():
            if pool.proxies:
                logger.info(
                    "%s proxy pool: %s",
                    pool.tier,
                    ", ".join(shown(proxy) for proxy in pool.proxies),
                )
        return cls(
            pools,
            attempts=max(1, settings.getint("SCRAPESPY_PROXY_ATTEMPTS")),
            stats=crawler.stats,
        )

    def process_request(self, request: Request) -> None:
        tier = scrape_meta.proxy_tier(request)
        if tier is None:
            # Not a scrape of the service (robots.txt, ``scrapy shell``): leave it alone.
            return
        pool = self.pools.get(tier)
        failed = scrape_meta.proxies_failed(request)
        proxy = None
        if pool is not None and len(failed) < self.attempts:
            proxy = pool.pick(
                exclude=failed,
                prefer=scrape_meta.proxy_in_use(request) or _session_exit(request),
                country=scrape_meta.country(request),
            )
        if proxy is None:
            self._go_direct(request, tier)
        else:
            self._go_through(request, tier, proxy)

    def process_response(self, request: Request, response: Response) -> Request | Response:
        found = self._proxy_of(request)
        if found is None:
            return response
        pool, proxy = found
        if response.status != 407:
            pool.succeeded(proxy)
            return response
        pool.bench(proxy, "it refused our credentials (407)")
        self._inc(pool.tier, "benched")
        return self._retry(request, proxy) or response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        found = self._proxy_of(request)
        if found is None:
            return None
        kind = classify(exception)
        if kind is None:
            return None
        pool, proxy = found
        reason = type(exception).__name__
        if kind == CONNECT:
            pool.bench(proxy, reason)
            self._inc(pool.tier, "benched")
        elif pool.strike(proxy, reason):
            self._inc(pool.tier, "benched")
        return self._retry(request, proxy)

    def _proxy_of(self, request: Request) -> tuple[ProxyPool, Proxy] | None:
        pool = self.pools.get(scrape_meta.tier_used(request))
        if pool is None:
            return None
        proxy = pool.get(scrape_meta.proxy_in_use(request))
        return None if proxy is None else (pool, proxy)

    def _go_through(self, request: Request, tier: str, proxy: Proxy) -> None:
        scrape_meta.set_tier_used(request, tier)
        scrape_meta.set_proxy_in_use(request, proxy.key)
        order = scrape_meta.order_if_any(request)
        if order is not None and order.session is not None:
            order.session.exit = proxy.key  # the session's exit from now on
        if scrape_meta.renders(request):
            request.meta["proxy"] = None
            context = scrape_meta.context_kwargs(request)
            context["proxy"] = proxy.playwright_settings()
            scrape_meta.set_context_kwargs(request, context)
        else:
            request.meta["proxy"] = proxy.url
        self._inc(tier, "used")

    def _go_direct(self, request: Request, tier: str) -> None:
        scrape_meta.set_tier_used(request, "none")
        scrape_meta.set_proxy_in_use(request, None)
        request.meta["proxy"] = None
        context = scrape_meta.context_kwargs(request)
        if "proxy" in context:
            del context["proxy"]
            scrape_meta.set_context_kwargs(request, context)
        pool = self.pools.get(tier)
        if pool is not None:
            self._inc(tier, "direct")
            if scrape_meta.proxies_failed(request):
                logger.info("%s proxies failed; %s goes direct", tier, request.url)
            elif pool.proxies:
                logger.info("every %s proxy is benched; %s goes direct", tier, request.url)

    def _retry(self, request: Request, proxy: Proxy) -> Request | None:
        """The same request for another proxy (or direct), unless its time is up."""
        deadline = scrape_meta.deadline(request)
        if deadline is not None and deadline - self.clock() <= 0.05:
            return None
        retry = request.replace(dont_filter=True)
        scrape_meta.set_proxies_failed(retry, [*scrape_meta.proxies_failed(request), proxy.key])
        scrape_meta.set_proxy_in_use(retry, None)
        self._inc(scrape_meta.tier_used(request), "retried")
        return retry

    def _inc(self, tier: str, event: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"{STATS_PREFIX}/{tier}/{event}")
