"""Scrapy's decompression, with a body that grows past ``DOWNLOAD_MAXSIZE`` as a clean failure.

Scrapy's ``HttpCompressionMiddleware`` stops a decompression bomb at ``DOWNLOAD_MAXSIZE`` with
an ``IgnoreRequest`` whose text ("Ignored response <200 ...> ... exceeded DOWNLOAD_MAXSIZE")
reached the caller as an ``internal`` error. Here it is a :class:`ResponseTooLarge`
(``error_code`` ``too_large``, unbilled) that says so in words, as the download cap itself does
(pipelines.result.describe_failure).

    DOWNLOADER_MIDDLEWARES = {
        "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
        "middlewares.decompression.DecompressionMiddleware": 590,
    }
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class ResponseTooLarge(IgnoreRequest):
    """A page whose body is larger than the download limit once decompressed."""


def too_large(limit: int) -> str:
    return f"the page is larger than the download limit of {limit} bytes"


class DecompressionMiddleware(HttpCompressionMiddleware):
    limit: int

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        middleware.limit = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        return middleware

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        try:
            return super().process_response(request, response)
        except IgnoreRequest:  # the only one it raises: the body outgrew the limit
            if self.stats is not None:
                self.stats.inc_value("scrapespy/decompression/too_large")
            limit = request.meta.get("download_maxsize", self.limit)
            raise ResponseTooLarge(f"{too_large(limit)} once decompressed") from None
