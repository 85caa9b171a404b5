"""Builds the scrape result (docs/api.md) from what the download gave.

The item is the feed spider's :class:`service.scrape.order.ScrapeItem`. Every field of its
:class:`service.scrape.results.ScrapeResult` is filled from what was received, even for an error
status (a 404 page still has its title and text).

Two stages, with the billing's settlement sent between them (service.scrape.scrapy_settings):
:class:`ResultPipeline` sets ``item.result`` with everything the bill rests on (status,
success, blocked, the tier used, ``elapsed_ms``) and leaves the page in ``item.page``;
:class:`FieldsPipeline` then parses the page's fields while the settlement is on its way. A page
that cannot be parsed turns a success into a failure, which the billing gives back.

    ITEM_PIPELINES = {
        "pipelines.result.ResultPipeline": 100,
        "pipelines.result.FieldsPipeline": 300,
    }
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.http import Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import error as net_error
from twisted.internet.defer import TimeoutError as DeferredTimeoutError
from twisted.python.failure import Failure

from middlewares.deadline import DeadlineExceeded
from middlewares.decompression import too_large
from middlewares.failure_codes import failure_code, tls_failed
from service.browser.failures import BrowserError
from service.core.config import Config
from service.core.formats import OUTPUTS
from service.extraction import empty_fields
from service.extraction.bounds import AnswerBounds, PageTooLarge
from service.extraction.documents import DocumentRefused, document_type
from service.extraction.failures import (
    PROCESSING_FAILED,
    PROCESSING_TIMED_OUT,
    DocumentFailed,
    ExtractionFailed,
)
from service.extraction.pool import ExtractionPool
from service.extraction.worker import convert_within, extract_within
from service.scrape import meta as scrape_meta
from service.scrape.order import ScrapeItem, ScrapeOrder, new_result, timed_out
from service.scrape.results import with_document, with_truncated

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

DEFAULT_MAX_RAW_HTML_BYTES = Config.max_raw_html_bytes


def describe_failure(failure: Failure, order: ScrapeOrder, download_limit: int = 0) -> str:
    exc = failure.value
    if isinstance(exc, DeadlineExceeded):
        return timed_out(order)
    if isinstance(exc, IgnoreRequest):
        message = str(exc) or "request refused"
        if "robots.txt" in message.lower():
            return "forbidden by the target's robots.txt"
        return message
    timeouts = (DownloadTimeoutError, net_error.TimeoutError, DeferredTimeoutError, TimeoutError)
    if isinstance(exc, timeouts) or exc.__class__.__name__ == "TimeoutError":  # playwright's too
        return timed_out(order)
    if isinstance(exc, DownloadCancelledError):  # Scrapy's DOWNLOAD_MAXSIZE (download_limit)
        return too_large(download_limit) if download_limit else "the page is too large"
    if isinstance(exc, (CannotResolveHostError, net_error.DNSLookupError)):
        return "could not resolve the target's host name"
    if isinstance(exc, (DownloadConnectionRefusedError, net_error.ConnectionRefusedError)):
        return "the target refused the connection"
    if isinstance(exc, (net_error.ConnectError, net_error.ConnectionLost)):
        return "could not connect to the target"
    if isinstance(exc, BrowserError):
        return str(exc)  # the js engine's own failures, worded for the caller
    if tls_failed(exc):
        return "the TLS handshake with the target failed"
    if isinstance(exc, (DownloadFailedError, ResponseDataLossError)):
        return "the target closed the connection without a complete response"
    name = exc.__class__.__name__
    log.info("scrape of %s failed: %s", order.url, name)
    return f"fetch failed ({name})"


def raw_html_too_large(size: int, limit: int) -> str:
    return (
        f"the page's HTML is {size} bytes, over the {limit}-byte limit on raw_html "
        "(SCRAPESPY_MAX_RAW_HTML_BYTES)"
    )


class ResultPipeline:
    """Sets ``item.result``, all but the page's fields: the outcome that the bill rests on.

    It also sets the outputs that need no parsing: ``raw_html`` (a document past
    ``SCRAPESPY_MAX_RAW_HTML_BYTES`` is a failure, so unbilled), ``screenshot``, the base64 of
    the PNG that service.browser left in ``response.meta["scrapespy_screenshot_png"]``, and, for a
    request with actions, the steps' outcomes and results it left in the request's meta."""

    def __init__(
        self, max_raw_html_bytes: int = DEFAULT_MAX_RAW_HTML_BYTES, download_limit: int = 0
    ) -> None:
        self.max_raw_html_bytes = max_raw_html_bytes
        self.download_limit = download_limit

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ResultPipeline:
        return cls(
            crawler.settings.getint("SCRAPESPY_MAX_RAW_HTML_BYTES"),
            crawler.settings.getint("DOWNLOAD_MAXSIZE"),
        )

    def process_item(self, item: ScrapeItem) -> ScrapeItem:
        order, response, request = item.order, item.response, item.request
        block_reason = scrape_meta.block_reason(request)
        item.tier_used = scrape_meta.tier_used(request)
        code: str | None = None
        if response is None:
            assert item.failure is not None
            limit = request.meta.get("download_maxsize", self.download_limit)
            error: str | None = describe_failure(item.failure, order, limit)
            code = failure_code(item.failure)
        elif response.status >= 400:
            error = f"the target answered HTTP {response.status}"
            code = "http_error"
        elif (
            "raw_html" in order.formats
            and len(response.body) > self.max_raw_html_bytes
            and document_type(response.body) is None
        ):
            error = raw_html_too_large(len(response.body), self.max_raw_html_bytes)
            code = "too_large"
        else:
            error = None
        item.result = new_result(
            order,
            empty_fields(order.selectors),
            final_url=response.url if response is not None else order.url,
            status_code=response.status if response is not None else 0,
            error=error,
            error_code=code,
            tier_used=item.tier_used,
            block_reason=block_reason,
            engine=None if order.ladder is None else scrape_meta.engine(request),
        )
        kind = document_type(response.body) if response is not None and not error else None
        if kind is not None:
            assert response is not None
            item.document = (kind, response.body)
        elif isinstance(response, TextResponse):
            item.page = response
        if order.formats and response is not None and kind is None:
            self._received(item, response)
        if order.actions:  # what service.browser reported, on a success as on a failure
            result = item.result
            setattr(result, "actions", scrape_meta.action_outcomes(request))  # noqa: B010
            setattr(result, "action_results", scrape_meta.action_results(request))  # noqa: B010
        return item

    def _received(self, item: ScrapeItem, response: Response) -> None:
        """The formats made from the response or the rendered page (service.core.formats), by
        their producers: :func:`raw_html_of`, ``service.browser.screenshot.screenshot_of``..."""
        result = item.result
        made = OUTPUTS.from_response(item.order.formats, response, self.max_raw_html_bytes)
        for field, value in made.items():
            setattr(result, field, value)  # a result_class field


def raw_html_of(response: Response, max_bytes: int) -> str | None:
    """The document as received or rendered; none past ``max_bytes``, a failure (too_large)."""
    if isinstance(response, TextResponse) and len(response.body) <= max_bytes:
        return response.text
    return None


def _keep_model_input(item: ScrapeItem, fields: dict[str, Any]) -> None:
    """The page's markdown for the language model (pipelines.llm) and for the comparison with
    the previous scrape (pipelines.changes), out of the answer unless the request asked for it
    too; and what change_tracking's selectors extracted, never in the answer."""
    order = item.order
    if order.tracks_changes:
        item.tracked_json = fields.pop("tracked_json", None)
    if not (order.asks_model or order.tracks_changes):
        return
    if "markdown" in order.formats:
        markdown = fields.get("markdown")
    else:
        markdown = fields.pop("markdown", None)
        cut = fields.get("truncated")
        if cut and "markdown" in cut:
            fields["truncated"] = [name for name in cut if name != "markdown"]
            if not fields["truncated"]:
                del fields["truncated"]
    if order.asks_model:
        item.model_input = markdown
    if order.tracks_changes:
        item.tracked_markdown = markdown


class FieldsPipeline:
    """Parses the page's fields into ``item.result``, in the service's extraction workers
    (``crawler.scrapespy_extractor``, service.extraction.pool) when it has them, else on this
    thread (``scrapy shell``, ``scrapy crawl page``, ``SCRAPESPY_EXTRACT_WORKERS=0``)."""

    def __init__(self, crawler: Crawler):
        self.stats = crawler.stats
        self.pages_per_block = crawler.settings.getint("SCRAPESPY_DOCUMENT_PAGES_PER_BLOCK")
        self.extractor: ExtractionPool | None = getattr(crawler, "scrapespy_extractor", None)
        self.bounds = (
            self.extractor.bounds
            if self.extractor is not None
            else AnswerBounds.of(Config.from_env())
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FieldsPipeline:
        return cls(crawler)

    async def process_item(self, item: ScrapeItem) -> ScrapeItem:
        order, page = item.order, item.page
        if item.document is not None:
            return self._counted(await self._converted(item))
        if page is None:
            return self._counted(item)
        item.page = None
        parsing_started = time.monotonic()
        try:
            options = order.output_options()
            if self.extractor is None:
                fields = extract_within(page.text, page.url, order.selectors, options, self.bounds)
            else:
                left = order.deadline - time.monotonic()
                parsing = self.extractor.extract(
                    page.text,
                    page.url,
                    order.selectors,
                    left,
                    options,
                    account=order.account_id,
                    background=order.background,
                )
                fields = await maybe_deferred_to_future(parsing)
        except Exception as exc:
            self._not_parsed(exc, item)
        else:
            _keep_model_input(item, fields)
            item.result.fill(fields)
            if "truncated" in fields:
                item.result = with_truncated(item.result, fields["truncated"])
        extraction = time.monotonic() - parsing_started
        order.clock.extraction = extraction
        item.result.timings["extraction"] = round(extraction * 1000, 1)
        return self._counted(item)

    async def _converted(self, item: ScrapeItem) -> ScrapeItem:
        """A document's fields and ``document``, converted like a page is parsed; ``raw_html``
        and ``html`` stay null: there is no HTML."""
        assert item.document is not None
        (kind, body), item.document = item.document, None
        order = item.order
        started = time.monotonic()
        try:
            options = order.output_options()
            if self.extractor is None:
                fields = convert_within(body, kind, order.selectors, options, self.bounds)
            else:
                converting = self.extractor.convert(
                    body,
                    kind,
                    item.result.final_url,
                    order.selectors,
                    order.deadline - time.monotonic(),
                    options,
                    account=order.account_id,
                    background=order.background,
                )
                fields = await maybe_deferred_to_future(converting)
        except (DocumentFailed, DocumentRefused) as exc:
            if item.result.success:
                item.result.success = False
                item.result.error = str(exc)
                item.result.error_code = exc.code
        except Exception as exc:
            self._not_parsed(exc, item)
        else:
            document = fields.pop("document")
            item.blocks = -(-document["pages"] // self.pages_per_block)
            _keep_model_input(item, fields)
            item.result.fill(fields)
            item.result = with_document(item.result, document)
            if "truncated" in fields:
                item.result = with_truncated(item.result, fields["truncated"])
        elapsed = time.monotonic() - started
        order.clock.extraction = elapsed
        item.result.timings["extraction"] = round(elapsed * 1000, 1)
        return item

    def _not_parsed(self, exc: Exception, item: ScrapeItem) -> None:
        if isinstance(exc, PageTooLarge):  # past a bound: the caller is told which
            if item.result.success:
                item.result.success = False
                item.result.error = str(exc)
                if not item.result.blocked:
                    item.result.error_code = "too_large"
            return
        expected = isinstance(exc, ExtractionFailed)
        if not expected:  # a bug: the caller still gets an honest answer, unbilled
            log.error("extraction failed", exc_info=exc)
        result = item.result
        if result.success:
            result.success = False
            result.error = str(exc) if expected else PROCESSING_FAILED
            if not result.blocked:  # out of the scrape's time, or the parse itself failed
                result.error_code = (
                    "timeout" if result.error == PROCESSING_TIMED_OUT else "internal"
                )

    def _counted(self, item: ScrapeItem) -> ScrapeItem:
        if self.stats is not None:
            result = item.result
            outcome = "blocked" if result.blocked else ("success" if result.success else "failed")
            self.stats.inc_value(f"scrapespy/result/{item.order.engine}/{outcome}")
        return item
