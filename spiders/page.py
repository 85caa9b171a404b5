"""``scrapy crawl page -a url=URL``: one scrape by the service's engine, printed as the API's JSON.

Run from the repository root, so ``scrapy.cfg`` brings the project's settings: the egress guard,
robots.txt, deadline and anti-bot middlewares and the result pipeline apply exactly as in the
service. Nothing is billed (there is no database here).

    scrapy crawl page -a url=https://example.com/ [-a engine=js|auto] [-a timeout=20]
        [-a respect_robots=false] [-a selectors='{"h": "h1::text"}']
        [-a formats=markdown,html,raw_html,screenshot] [-a only_main_content=true]
        [-a include_tags='["article"]'] [-a exclude_tags='[".ad", "aside"]']
        [-a screenshot_full_page=true] [-a device=mobile] [-a headers='{"X-A": "1"}']
        [-a cookies='[{"name": "session", "value": "abc"}]']
        [-a wait_for='#prices' | -a wait_for=1500]
        [-a actions='[{"type": "click", "selector": "#more"}]']

The tags are a JSON list of CSS selectors, or one selector. ``wait_for`` is a CSS selector, a
number of milliseconds, or the API's JSON object; ``actions``, ``headers`` and ``cookies`` are the
API's JSON.
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

from service.core.config import Config
from service.core.errors import BadRequest
from service.core.escalation import AUTO, ladder
from service.core.schemas import checked_scrape
from service.scrape.order import ScrapeItem, ScrapeOrder
from service.scrape.results import ScrapeResult
from spiders.feed import item_for_failure, item_for_response, request_for


def _flag(value: str) -> bool:
    return value.strip().lower() not in ("0", "false", "no", "off")


def _tags(value: str) -> Any:
    """A JSON list of CSS selectors, or one selector."""
    return json.loads(value) if value.strip().startswith("[") else ([value] if value else [])


def _json(name: str, value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        raise ValueError(f"-a {name}= must be JSON: {value!r}") from None


def _wait_for(value: str) -> Any:
    """The API's object, a number of milliseconds, or a CSS selector."""
    value = value.strip()
    if value.startswith("{"):
        return _json("wait_for", value)
    ms = value.isascii() and value.isdigit() and len(value) <= 9
    return {"ms": int(value)} if ms else {"selector": value}


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
        wait_for: str = "",
        actions: str = "",
        device: str = "desktop",
        headers: str = "",
        cookies: str = "",
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if not url:
            raise ValueError("give the page to fetch: scrapy crawl page -a url=URL")
        asked = [name.strip() for name in formats.split(",") if name.strip()]
        data: dict[str, Any] = {
            "url": url,
            "engine": engine,
            "timeout": float(timeout),
            "respect_robots": _flag(respect_robots),
            "selectors": json.loads(selectors) if selectors else None,
            "formats": asked,
            "only_main_content": _flag(only_main_content),
            "include_tags": _tags(include_tags),
            "exclude_tags": _tags(exclude_tags),
            "screenshot_full_page": _flag(screenshot_full_page),
            "device": device,
        }
        if wait_for.strip():
            data["wait_for"] = _wait_for(wait_for)
        for name, given in (("actions", actions), ("headers", headers), ("cookies", cookies)):
            if given.strip():
                data[name] = _json(name, given)
        try:  # the API's own checks, with its messages
            request, compiled = checked_scrape(data)
        except BadRequest as exc:
            raise ValueError(exc.message) from None
        steps = None
        if request.engine == AUTO:  # static, then js for a JavaScript shell; nothing billed
            config = Config.from_env()
            steps, _, _ = ladder(
                config, AUTO, request.proxy_type, unlocked=True, trials_left=0, max_credits=None
            )
        self.order = ScrapeOrder.asked(request, compiled, ladder=steps)
        self.result: ScrapeResult | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> PageSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.print_result, signal=signals.item_scraped)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        yield request_for(self.order, self)

    def parse(self, response: Response, **kwargs: Any) -> Any:
        yield item_for_response(response)

    def failed(self, failure: Failure) -> Any:
        yield item_for_failure(failure)

    def print_result(self, item: ScrapeItem, **_: Any) -> None:
        self.result = item.result
        sys.stdout.write(json.dumps(asdict(self.result), ensure_ascii=False) + "\n")
        sys.stdout.flush()
