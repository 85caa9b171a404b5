"""The crawl figure's baseline: a raw Scrapy ``CrawlSpider`` over the benchmark's local site.

    python -m bench.crawlspider START_URL PAGES CONCURRENCY  -> one JSON line of figures

It follows every link on the start URL's host (``LinkExtractor(allow_domains=[host:port])``, so the
site's external links are left alone, as the service's crawl rules leave them) and does on each
page what the service's extraction workers do (``service.extraction.extract``, the function
service.extraction.pool runs for a scrape without output options), inline in the callback. It
runs at ``CONCURRENCY`` requests in flight overall and per domain, no delay, robots.txt obeyed,
and closes after ``PAGES`` items. Its time runs from the first request to the last item.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from service.core.reactor import install

install()  # the asyncio reactor, as the service and bench/ceiling.py run

from scrapy import Request, signals  # noqa: E402
from scrapy.crawler import CrawlerRunner  # noqa: E402
from scrapy.http import Response  # noqa: E402
from scrapy.linkextractors import LinkExtractor  # noqa: E402
from scrapy.spiders import CrawlSpider, Rule  # noqa: E402
from twisted.internet import defer, reactor  # noqa: E402
from twisted.python.failure import Failure  # noqa: E402

from service.extraction import extract  # noqa: E402


class SiteSpider(CrawlSpider):
    name = "crawl-baseline"

    def __init__(self, start: str, *args: Any, **kwargs: Any) -> None:
        # Scrapy compares a URL's netloc, port included, with allow_domains: "127.0.0.1" alone
        # matches no link of a site on a port of its own
        host = urlsplit(start).netloc
        self.start_url = start
        self.rules = (
            Rule(LinkExtractor(allow_domains=[host]), callback="parse_page", follow=True),
        )
        super().__init__(*args, **kwargs)
        self.first: float | None = None
        self.last: float | None = None
        self.items = 0

    async def start(self) -> Any:
        self.first = time.monotonic()
        yield Request(self.start_url)

    def parse_start_url(self, response: Response, **kwargs: Any) -> Any:
        # the start page is a page of the crawl too, as the service's start URL is
        return self.parse_page(response)

    def parse_page(self, response: Response) -> dict[str, Any]:
        fields = extract(response.text, response.url)
        return {"url": response.url, "title": fields.get("title"), "links": len(fields["links"])}

    def scraped(self, item: Any) -> None:
        self.items += 1
        self.last = time.monotonic()


async def run(start: str, pages: int, concurrency: int) -> dict[str, Any]:
    runner = CrawlerRunner(
        {
            "CONCURRENT_REQUESTS": concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
            "DOWNLOAD_DELAY": 0,
            "ROBOTSTXT_OBEY": True,
            "CLOSESPIDER_ITEMCOUNT": pages,
            "LOG_LEVEL": "WARNING",
            "TELNETCONSOLE_ENABLED": False,
        }
    )
    crawler = runner.create_crawler(SiteSpider)
    spiders: list[SiteSpider] = []

    def opened(spider: SiteSpider) -> None:
        spiders.append(spider)
        crawler.signals.connect(spider.scraped, signal=signals.item_scraped)

    crawler.signals.connect(opened, signal=signals.spider_opened)
    cpu0 = time.process_time()
    await runner.crawl(crawler, start=start)
    spider = spiders[0]
    seconds = (spider.last or 0.0) - (spider.first or 0.0)
    return {
        "pages": spider.items,
        "seconds": round(seconds, 3),
        "pages_per_s": round(spider.items / seconds, 1) if seconds > 0 else None,
        "cpu_s_per_1000": round((time.process_time() - cpu0) / max(spider.items, 1) * 1000, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "concurrency": concurrency,
    }


def main() -> None:
    start, pages, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out: dict[str, Any] = {}

    async def go() -> None:
        out.update(await run(start, pages, concurrency))

    def failed(failure: Failure) -> None:
        out.update(error=failure.getErrorMessage())

    def stop(_: object) -> None:
        loop.stop()

    loop: Any = reactor
    d = defer.ensureDeferred(go())
    d.addErrback(failed)
    d.addBoth(stop)
    loop.run()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
