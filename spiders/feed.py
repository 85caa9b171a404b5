"""The feed spider: stays open for the life of the service and is fed one request per API call.

It never schedules anything by itself. The engine bridge calls :meth:`FeedSpider.request_for`
and hands the request to the running engine. The callback and the errback each yield exactly one
item, so success and failure take the same road through the pipelines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from twisted.python.failure import Failure

from middlewares.escalation import start_escalation
from service.core.places import accept_language
from service.scrape import meta as scrape_meta
from service.scrape.browser_request import for_browser
from service.scrape.meta import CLOCK, COUNTRY, DEADLINE, ORDER, PROXY_TIER
from service.scrape.order import ScrapeItem, ScrapeOrder

if TYPE_CHECKING:
    from scrapy.http.request import VerboseCookie

# Chrome on Android as Chrome itself sends it (the reduced form), for ``device: "mobile"`` on
# the static engine; the js engine's mobile context has its own.
MOBILE_USER_AGENT = (
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0.0.0 Mobile Safari/537.36"
)


def request_for(order: ScrapeOrder, spider: Spider) -> Request:
    """The Scrapy request of ``order``. What a caller may add (headers, cookies, a device, steps
    for the browser) is looked at only when asked, so a plain scrape builds nothing more."""
    meta: dict[str, Any] = {
        ORDER: order,
        DEADLINE: order.deadline,
        "download_timeout": order.timeout,
        "dont_obey_robotstxt": not order.respect_robots,
        "cookiejar": order.id,
        PROXY_TIER: order.proxy_type,
        CLOCK: order.clock,
    }
    if order.country is not None:
        meta[COUNTRY] = order.country
    engine = order.engine if order.ladder is None else start_escalation(order, meta)
    if engine == "js":
        for_browser(meta, order)  # the cookies too, set in the scrape's own browser context
        cookies = None
    else:
        # Into the order's own jar (meta["cookiejar"]), which the engine drops after it.
        cookies = [cast("VerboseCookie", dict(c)) for c in order.cookies] if order.cookies else None
    headers = order.headers
    if order.languages:
        headers = _with_languages(headers, order.languages)
    if order.device == "mobile" and engine != "js":
        headers = {**headers} if headers else {}
        if not any(name.lower() == "user-agent" for name in headers):  # the caller's wins
            headers["User-Agent"] = MOBILE_USER_AGENT
    return Request(
        order.url,
        callback=spider.parse,
        errback=spider.failed,  # type: ignore[attr-defined]
        headers=headers,
        cookies=cookies,
        meta=meta,
        dont_filter=True,
        priority=-1 if order.background else 0,  # a caller's scrape first (service.jobs.batches)
    )


def _with_languages(headers: dict[str, str] | None, languages: tuple[str, ...]) -> dict[str, str]:
    """The location's ``Accept-Language`` (for js, on the page's own navigations; the browser's
    locale says the same elsewhere), unless the caller sent one."""
    headers = {**headers} if headers else {}
    if not any(name.lower() == "accept-language" for name in headers):
        headers["Accept-Language"] = accept_language(languages)
    return headers


def item_for_response(response: Response) -> ScrapeItem:
    request = response.request
    assert request is not None  # Scrapy sets it on every response it hands a callback
    return ScrapeItem(scrape_meta.order(request), request, response=response)


def item_for_failure(failure: Failure) -> ScrapeItem:
    request = failure.request  # type: ignore[attr-defined]
    return ScrapeItem(scrape_meta.order(request), request, failure=failure)


class FeedSpider(Spider):
    name = "feed"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> FeedSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.keep_open, signal=signals.spider_idle)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        return
        yield

    def keep_open(self) -> None:
        raise DontCloseSpider

    def request_for(self, order: ScrapeOrder) -> Request:
        """The request the engine bridge feeds the crawler for ``order``."""
        return request_for(order, self)

    # Lists, not generators: Scrapy reads a generator callback's source with ``ast`` to warn
    # about return values, and its cache of that is keyed weakly by the bound method, which
    # is a new object for every request, so the source was parsed again on every scrape.
    def parse(self, response: Response, **kwargs: Any) -> list[ScrapeItem]:
        return [item_for_response(response)]

    def failed(self, failure: Failure) -> list[ScrapeItem]:
        return [item_for_failure(failure)]
