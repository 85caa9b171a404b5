"""Scrapy's cookie middleware on the Public Suffix List that tldextract ships.

Scrapy's ``CookiesMiddleware`` asks a module-level ``TLDExtract`` whether a cookie's domain is a
public suffix; built with tldextract's defaults, that extractor fetches the list from the
internet on its first use, with no timeout, on the reactor thread. This one hands it the
bundled list (service.core.public_suffixes) when a crawler builds it, so the service, ``scrapy
shell`` and ``scrapy crawl page`` all read cookies without a fetch.

    DOWNLOADER_MIDDLEWARES = {
        "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": None,
        "middlewares.cookies.CookiesMiddleware": 700,
    }
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares import cookies

from service.core.public_suffixes import install

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class CookiesMiddleware(cookies.CookiesMiddleware):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        install()
        return super().from_crawler(crawler)
