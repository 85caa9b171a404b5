"""The ceiling: a plain persistent Scrapy crawler in one process, fed the same URLs, doing the
same extraction, with ``concurrency`` requests kept in flight for ``duration`` seconds.

    python -m bench.ceiling URLS_FILE CONCURRENCY DURATION  -> one JSON line of figures
"""

from __future__ import annotations

import itertools
import json
import resource
import sys
import time
from typing import Any

from service.core.reactor import install

install()

from scrapy import Request, Spider, signals  # noqa: E402
from scrapy.crawler import CrawlerRunner  # noqa: E402
from scrapy.exceptions import DontCloseSpider  # noqa: E402
from twisted.internet import defer, reactor  # noqa: E402

from service.extraction import extract  # noqa: E402


class FeedSpider(Spider):
    name = "ceiling"

    async def start(self) -> Any:
        return
        yield

    def keep_open(self) -> None:
        raise DontCloseSpider


class Driver:
    def __init__(self, urls: list[str], concurrency: int, duration: float):
        self.urls = itertools.cycle(urls)
        self.concurrency = concurrency
        self.duration = duration
        self.latencies: list[float] = []
        self.done: defer.Deferred[None] = defer.Deferred()
        self.ready: defer.Deferred[None] = defer.Deferred()

    def opened(self, spider: Any) -> None:
        self.ready.callback(None)

    def keep_open(self) -> None:
        raise DontCloseSpider

    def start(self, crawler: Any) -> None:
        self.crawler = crawler
        self.deadline = time.monotonic() + self.duration
        self.cpu0 = time.process_time()
        self.started = time.monotonic()
        self.in_flight = 0
        for _ in range(self.concurrency):
            self.submit()

    def submit(self) -> None:
        if time.monotonic() >= self.deadline:
            if self.in_flight == 0 and not self.done.called:
                self.elapsed = time.monotonic() - self.started
                self.cpu = time.process_time() - self.cpu0
                self.done.callback(None)
            return
        self.in_flight += 1
        sent = time.monotonic()
        request = Request(
            next(self.urls),
            callback=self.parse,
            errback=self.failed,
            cb_kwargs={"sent": sent},
            dont_filter=True,
        )
        self.crawler.engine.crawl(request)

    def parse(self, response: Any, sent: float) -> None:
        extract(response.text, response.url)
        self.latencies.append(time.monotonic() - sent)
        self.in_flight -= 1
        self.submit()

    def failed(self, failure: Any) -> None:
        self.in_flight -= 1
        self.submit()


async def run(urls: list[str], concurrency: int, duration: float) -> dict[str, Any]:
    runner = CrawlerRunner(
        {
            "CONCURRENT_REQUESTS": 512,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 512,
            "LOG_LEVEL": "WARNING",
            "TELNETCONSOLE_ENABLED": False,
            "REMOTE_CONTROL_ENABLED": False,
            "RETRY_ENABLED": False,
            "ROBOTSTXT_OBEY": True,
        }
    )
    crawler = runner.create_crawler(FeedSpider)
    driver = Driver(urls, concurrency, duration)
    crawler.signals.connect(driver.keep_open, signal=signals.spider_idle)
    crawler.signals.connect(driver.opened, signal=signals.spider_opened)
    finished = runner.crawl(crawler)
    await driver.ready
    # warm-up: robots.txt and connections, as the other contenders get
    warm = Driver(urls, concurrency, 1.0)
    warm.start(crawler)
    await warm.done
    driver.start(crawler)
    await driver.done
    await runner.stop()
    await finished
    lat = sorted(driver.latencies)
    count = len(lat)
    return {
        "requests": count,
        "rps": count / driver.elapsed,
        "p50_ms": lat[count // 2] * 1000 if lat else None,
        "p99_ms": lat[min(count - 1, int(count * 0.99))] * 1000 if lat else None,
        "cpu_s_per_1000": driver.cpu / count * 1000 if count else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    urls = [line.strip() for line in open(sys.argv[1]) if line.strip()]
    concurrency, duration = int(sys.argv[2]), float(sys.argv[3])
    out: dict[str, Any] = {}

    async def go() -> None:
        out.update(await run(urls, concurrency, duration))

    d = defer.ensureDeferred(go())
    d.addErrback(lambda f: out.update(error=f.getErrorMessage()))
    d.addBoth(lambda _: reactor.stop())  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
