"""Mark anti-bot block and challenge pages, so that such a scrape says ``blocked: true``.

A response that :func:`service.antibot.detect_block` recognises as a vendor's block page or
challenge interstitial, or as a page that is nothing but a CAPTCHA, is annotated with
``request.meta["scrapespy_block_reason"] = "<vendor>"`` (``response.meta`` is the same dict);
the result pipeline turns that into ``blocked: true`` and billing skips the scrape. A
response that is not a block removes a reason left in the meta by an earlier attempt (a
retry or a re-issue through another proxy tier copies the meta). The response itself is
always passed on unchanged.

Switching it on: the service's settings list it below ``HttpCompressionMiddleware`` (590),
so that it sees decompressed bodies::

    DOWNLOADER_MIDDLEWARES = {"middlewares.antibot.AntiBotMiddleware": 580}

It is on by default; ``SCRAPESPY_ANTIBOT_ENABLED = False`` turns it off (``NotConfigured``).
Stats: ``scrapespy/antibot/blocked`` and ``scrapespy/antibot/blocked/<vendor>``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from service.antibot import detect_block
from service.scrape import meta as scrape_meta

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

STATS_PREFIX = "scrapespy/antibot/blocked"


class AntiBotMiddleware:
    """Downloader middleware: annotates responses that are anti-bot pages (see module doc)."""

    def __init__(self, stats: StatsCollector | None = None) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AntiBotMiddleware:
        if not crawler.settings.getbool("SCRAPESPY_ANTIBOT_ENABLED"):
            raise NotConfigured("SCRAPESPY_ANTIBOT_ENABLED is off")
        return cls(crawler.stats)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        vendor = detect_block(response.status, response.headers, response.body)
        if vendor is None:
            # A retried or redirected request carries over the meta of the earlier attempt.
            scrape_meta.set_block_reason(request, None)
            return response
        scrape_meta.set_block_reason(request, vendor)
        if self.stats is not None:
            self.stats.inc_value(STATS_PREFIX)
            self.stats.inc_value(f"{STATS_PREFIX}/{vendor}")
        logger.debug("anti-bot page (%s) at %s (HTTP %s)", vendor, response.url, response.status)
        return response
