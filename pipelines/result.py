"""Builds the result JSON of the interface specification from what the download gave.

The item comes from the feed spider: ``{"job", "response", "failure"}``. Every field is filled
from what was received, even for an error status (a 404 page still has its title and text).
Adds ``item["result"]`` and leaves the rest for the billing pipeline.

    ITEM_PIPELINES = {"pipelines.result.ResultPipeline": 100}
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.http import TextResponse
from twisted.internet import error as net_error
from twisted.internet.defer import Deferred
from twisted.internet.defer import TimeoutError as DeferredTimeoutError
from twisted.python.failure import Failure

from middlewares.deadline import DeadlineExceeded
from service.browser_failures import BrowserError
from service.extract_pool import ExtractionFailed, ExtractionPool
from service.extraction import empty_fields, extract
from service.jobs import ScrapeJob

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

log = logging.getLogger(__name__)


def timed_out(job: ScrapeJob) -> str:
    return f"timed out after {job.timeout:g} s"


def describe_failure(failure: Failure, job: ScrapeJob) -> str:
    exc = failure.value
    if isinstance(exc, DeadlineExceeded):
        return timed_out(job)
    if isinstance(exc, IgnoreRequest):
        message = str(exc) or "request refused"
        if "robots.txt" in message.lower():
            return "forbidden by the target's robots.txt"
        return message
    timeouts = (DownloadTimeoutError, net_error.TimeoutError, DeferredTimeoutError, TimeoutError)
    if isinstance(exc, timeouts) or exc.__class__.__name__ == "TimeoutError":  # playwright's too
        return timed_out(job)
    if isinstance(exc, (CannotResolveHostError, net_error.DNSLookupError)):
        return "could not resolve the target's host name"
    if isinstance(exc, (DownloadConnectionRefusedError, net_error.ConnectionRefusedError)):
        return "the target refused the connection"
    if isinstance(exc, (net_error.ConnectError, net_error.ConnectionLost)):
        return "could not connect to the target"
    if isinstance(exc, BrowserError):
        return str(exc)  # the js engine's own failures, worded for the caller
    if isinstance(exc, (DownloadFailedError, ResponseDataLossError)):
        return "the target closed the connection without a complete response"
    name = exc.__class__.__name__
    log.info("scrape of %s failed: %s", job.url, name)
    return f"fetch failed ({name})"


class ResultPipeline:
    """Fills ``item["result"]``; the page's fields come from the service's extraction workers
    (``crawler.scrapespy_extractor``, service.extract_pool) when it has them, else from this
    thread (``scrapy shell``, ``scrapy crawl page``, ``SCRAPESPY_EXTRACT_WORKERS=0``)."""

    def __init__(self, crawler: Crawler):
        self.stats = crawler.stats
        self.extractor: ExtractionPool | None = getattr(crawler, "scrapespy_extractor", None)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ResultPipeline:
        return cls(crawler)

    def process_item(self, item: dict[str, Any]) -> Deferred[dict[str, Any]] | dict[str, Any]:
        job: ScrapeJob = item["job"]
        response: Response | None = item.get("response")
        failure: Failure | None = item.get("failure")
        meta = response.meta if response is not None else item["request"].meta
        block_reason = meta.get("scrapespy_block_reason")
        tier_used = meta.get("scrapespy_tier_used", "none")
        result: dict[str, Any] = {
            "url": job.url,
            "final_url": response.url if response is not None else job.url,
            "status_code": response.status if response is not None else 0,
            "success": False,
            "engine": job.engine,
            "elapsed_ms": 0,
            "error": None,
            "blocked": block_reason is not None,
            "proxy_used": tier_used != "none",
        }
        item["result"] = result
        item["tier_used"] = tier_used
        if response is None:
            assert failure is not None
            result.update(empty_fields(job.selectors))
            result["error"] = describe_failure(failure, job)
            return self._finish(item, block_reason)
        if not isinstance(response, TextResponse):
            return self._page_done(empty_fields(job.selectors), item, response, block_reason)
        if self.extractor is None:
            fields = extract(response.text, response.url, job.selectors)
            return self._page_done(fields, item, response, block_reason)
        d = self.extractor.extract(
            response.text, response.url, job.selectors, job.deadline - time.monotonic()
        )
        d.addCallbacks(
            self._page_done,
            self._page_failed,
            callbackArgs=(item, response, block_reason),
            errbackArgs=(item, block_reason),
        )
        return d

    def _page_done(
        self,
        fields: dict[str, Any],
        item: dict[str, Any],
        response: Response,
        block_reason: str | None,
    ) -> dict[str, Any]:
        result = item["result"]
        result.update(fields)
        if response.status >= 400:
            result["error"] = f"the target answered HTTP {response.status}"
        else:
            result["success"] = True
        return self._finish(item, block_reason)

    def _page_failed(
        self, failure: Failure, item: dict[str, Any], block_reason: str | None
    ) -> dict[str, Any]:
        failure.trap(ExtractionFailed)
        result = item["result"]
        result.update(empty_fields(item["job"].selectors))
        result["error"] = str(failure.value)
        return self._finish(item, block_reason)

    def _finish(self, item: dict[str, Any], block_reason: str | None) -> dict[str, Any]:
        job: ScrapeJob = item["job"]
        result = item["result"]
        if block_reason is not None:
            result["block_reason"] = block_reason
        result["elapsed_ms"] = job.elapsed_ms()
        if self.stats is not None:
            outcome = (
                "blocked" if result["blocked"] else ("success" if result["success"] else "failed")
            )
            self.stats.inc_value(f"scrapespy/result/{job.engine}/{outcome}")
        return item
