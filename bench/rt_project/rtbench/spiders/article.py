"""The same extraction as scrapespy, for ScrapyRT to run per request."""

import os

from scrapy import Spider

from service.core.config import default_chromium_path
from service.extraction import extract

_ARGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
] + (["--no-sandbox"] if os.geteuid() == 0 else [])


class ArticleSpider(Spider):
    name = "article"

    def parse(self, response):
        yield extract(response.text, response.url)


class ArticleJsSpider(ArticleSpider):
    """scrapy-playwright inside ScrapyRT: a crawler, and so a browser, per API request."""

    name = "article_js"
    custom_settings = {
        "DOWNLOAD_HANDLERS": {
            "http": "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler",
            "https": "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler",
        },
        "PLAYWRIGHT_LAUNCH_OPTIONS": {
            # the browser scrapespy runs, so that both pay the same for one
            "executable_path": os.environ.get("SCRAPESPY_CHROMIUM_PATH") or default_chromium_path(),
            "args": _ARGS,
        },
    }
