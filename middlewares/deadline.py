"""The request's ``timeout`` bounds the whole scrape, queueing and robots.txt included.

The engine bridge stores an absolute deadline (``time.monotonic()``) in
``meta["scrapespy_deadline"]``. Placed after the robots.txt middleware, this one gives the
download only the time that is left, and refuses a request whose time is already up.
Requests without a deadline (robots.txt, ``scrapy shell``) are untouched.

    DOWNLOADER_MIDDLEWARES = {"middlewares.deadline.DeadlineMiddleware": 120}
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from service.scrape import meta as scrape_meta

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler


class DeadlineExceeded(IgnoreRequest):
    pass


class DeadlineMiddleware:
    def __init__(self, crawler: Crawler):
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DeadlineMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        deadline = scrape_meta.deadline(request)
        if deadline is None:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0.001:
            if self.stats is not None:
                self.stats.inc_value("scrapespy/deadline/exceeded")
            raise DeadlineExceeded("timed out before the download started")
        request.meta["download_timeout"] = remaining
        if scrape_meta.renders(request):
            goto = scrape_meta.goto_kwargs(request)
            goto["timeout"] = remaining * 1000
            scrape_meta.set_goto_kwargs(request, goto)
