"""robots.txt with a cache that expires.

Scrapy's ``RobotsTxtMiddleware`` keeps every parsed robots.txt for the life of the crawler; a
service whose crawler lives for months must notice when a site changes its rules, and must not
grow without bound. This subclass forgets a site's robots.txt after
``SCRAPESPY_ROBOTS_TTL_SECONDS`` seconds and keeps at most ``SCRAPESPY_ROBOTS_MAX_SITES`` of
them (plus those still being fetched, which are never dropped while someone waits for them). A
request opts out with ``meta["dont_obey_robotstxt"] = True`` (the API's ``respect_robots:
false``).

Switch it on in place of Scrapy's own::

    DOWNLOADER_MIDDLEWARES = {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "middlewares.robots.ExpiringRobotsTxtMiddleware": 100,
    }
"""

from __future__ import annotations

import time
from itertools import islice
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

FORBIDDEN_MESSAGE = "forbidden by the target's robots.txt"


class ExpiringRobotsTxtMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self._ttl = crawler.settings.getfloat("SCRAPESPY_ROBOTS_TTL_SECONDS")
        self._max_sites = crawler.settings.getint("SCRAPESPY_ROBOTS_MAX_SITES")
        self._fetched_at: dict[str, float] = {}

    async def robot_parser(self, request: Request) -> RobotParser | None:
        netloc = urlparse_cached(request).netloc
        now = time.monotonic()
        fetched = self._fetched_at.get(netloc)
        if fetched is not None and now - fetched > self._ttl:
            self._forget(netloc)
            self.crawler.stats.inc_value("scrapespy/robots/expired")
        if netloc not in self._parsers:
            self._evict_oldest()
            self._fetched_at[netloc] = now
        return await super().robot_parser(request)

    def _forget(self, netloc: str) -> None:
        if not self._pending(netloc):
            self._parsers.pop(netloc, None)
            self._fetched_at.pop(netloc, None)

    def _evict_oldest(self) -> None:
        """Make room for one more site: forget the oldest sites whose robots.txt is in.

        A site whose robots.txt is still on its way stays, so that its waiters get their answer
        (Scrapy's middleware resolves them through ``_parsers``): when every remembered site is
        still fetching, the cache holds more than its cap until those fetches end. The excess is
        at most the robots.txt downloads in flight, which the crawler's concurrency bounds.
        """
        excess = len(self._fetched_at) - self._max_sites + 1
        if excess <= 0:
            return
        done = (site for site in self._fetched_at if not self._pending(site))
        for site in list(islice(done, excess)):
            self._forget(site)

    def _pending(self, netloc: str) -> bool:
        return isinstance(self._parsers.get(netloc), Deferred)
