"""``scrapy crawl page -a url=URL``: one scrape by the service's engine, printed as the API's JSON.

Run from the repository root, so ``scrapy.cfg`` brings the project's settings: the egress guard,
robots.txt, deadline and anti-bot middlewares and the result pipeline apply exactly as in the
service. Nothing is billed (there is no database here).

    scrapy crawl page -a url=https://example.com/ [-a engine=js] [-a timeout=20]
        [-a respect_robots=false] [-a selectors='{"h": "h1::text"}']
        [-a formats=markdown,html,raw_html,screenshot] [-a only_main_content=true]
        [-a include_tags='["article"]'] [-a exclude_tags='[".ad", "aside"]']
        [-a screenshot_full_page=true]

The tags are a JSON list of CSS selectors, or one selector.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import asdict
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from service.extraction import InvalidSelector, compile_selectors, compile_tags
from service.jobs import ScrapeItem, ScrapeJob
from service.results import ScrapeResult
from service.schemas import FORMATS
from spiders.feed import item_for_failure, item_for_response, request_for


def _flag(value: str) -> bool:
    return value.strip().lower() not in ("0", "false", "no", "off")


def _tags(name: str, value: str) -> tuple[str, ...]:
    tags = json.loads(value) if value.strip().startswith("[") else ([value] if value else [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise ValueError(f"{name} must be a JSON list of CSS selectors")
    try:
        return compile_tags(name, tags)
    except InvalidSelector as exc:
        raise ValueError(str(exc)) from None


class PageSpider(Spider):
    name = "page"

    def __init__(
        self,
        url: str = "",
        engine: str = "static",
        timeout: str = "20",
        respect_robots: str = "true",
        selectors: str = "",
        formats: str = "",
        only_main_content: str = "false",
        include_tags: str = "",
        exclude_tags: str = "",
        screenshot_full_page: str = "false",
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if not url:
            raise ValueError("give the page to fetch: scrapy crawl page -a url=URL")
        if engine not in ("static", "js"):
            raise ValueError("engine must be static or js")
        try:
            compiled = compile_selectors(json.loads(selectors) if selectors else None)
        except (ValueError, InvalidSelector) as exc:
            raise ValueError(f"selectors: {exc}") from None
        asked = frozenset(name.strip() for name in formats.split(",") if name.strip())
        if not asked <= set(FORMATS):
            raise ValueError(f"formats must be among {', '.join(FORMATS)}")
        if "screenshot" in asked and engine != "js":
            raise ValueError("formats: a screenshot needs the js engine (-a engine=js)")
        full_page = _flag(screenshot_full_page)
        if full_page and "screenshot" not in asked:
            raise ValueError("screenshot_full_page needs screenshot in formats")
        self.job = ScrapeJob(
            url=url,
            engine=engine,
            selectors=compiled,
            respect_robots=_flag(respect_robots),
            timeout=float(timeout),
            formats=asked,
            only_main_content=_flag(only_main_content),
            include_tags=_tags("include_tags", include_tags),
            exclude_tags=_tags("exclude_tags", exclude_tags),
            screenshot_full_page=full_page,
        )
        self.result: ScrapeResult | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> PageSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.print_result, signal=signals.item_scraped)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        yield request_for(self.job, self)

    def parse(self, response: Response, **kwargs: Any) -> Any:
        yield item_for_response(response)

    def failed(self, failure: Failure) -> Any:
        yield item_for_failure(failure)

    def print_result(self, item: ScrapeItem, **_: Any) -> None:
        self.result = item.result
        sys.stdout.write(json.dumps(asdict(self.result), ensure_ascii=False) + "\n")
        sys.stdout.flush()
