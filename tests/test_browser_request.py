"""The js engine's request, built in one place (service.scrape.browser_request) for the feed
spider and the escalation middleware, and the typed access to a request's meta
(service.scrape.meta)."""

from __future__ import annotations

import dataclasses
from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse

from harness.site import JS_ONLY
from middlewares.escalation import EscalationMiddleware, start_escalation
from service.core.config import Config
from service.core.escalation import ladder
from service.scrape import meta as scrape_meta
from service.scrape.browser_request import for_browser
from service.scrape.meta import DEADLINE, ORDER
from service.scrape.order import ScrapeOrder
from spiders.feed import FeedSpider, request_for

URL = "http://shop.example/item"
COOKIES = ({"name": "a", "value": "1"}, {"name": "b", "value": "2", "path": "/x"})
STEPS = ({"type": "click", "selector": "#more", "all": False},)


def everything(**fields: Any) -> ScrapeOrder:
    return ScrapeOrder(
        URL,
        engine="js",
        formats=frozenset({"screenshot"}),
        screenshot_full_page=True,
        wait_for={"selector": "#prices"},
        actions=STEPS,
        device="mobile",
        cookies=COOKIES,
        **fields,
    )


def test_the_first_request_carries_what_the_caller_asked_of_the_browser() -> None:
    order = everything()
    meta: dict[str, Any] = {}
    for_browser(meta, order)
    assert list(meta.items()) == [
        ("playwright", True),
        ("playwright_context", f"scrape-{order.id}"),
        ("playwright_page_goto_kwargs", {"wait_until": "load"}),
        ("scrapespy_screenshot", {"full_page": True}),
        ("scrapespy_wait_for", {"selector": "#prices"}),
        ("scrapespy_actions", [{"type": "click", "selector": "#more", "all": False}]),
        ("scrapespy_device", "mobile"),
        (
            "scrapespy_cookies",
            [{"name": "a", "value": "1"}, {"name": "b", "value": "2", "path": "/x"}],
        ),
    ]
    # copies: the browser writes in the meta, never in the order
    assert meta["scrapespy_wait_for"] is not order.wait_for
    assert meta["scrapespy_cookies"][0] is not order.cookies[0]


def test_a_later_attempt_has_a_fresh_context_the_device_and_cookies_and_no_steps() -> None:
    order = everything()
    meta: dict[str, Any] = {}
    for_browser(meta, order, attempt=2)
    assert list(meta.items()) == [
        ("playwright", True),
        ("playwright_context", f"scrape-{order.id}-2"),
        ("playwright_page_goto_kwargs", {"wait_until": "load"}),
        ("scrapespy_device", "mobile"),
        (
            "scrapespy_cookies",
            [{"name": "a", "value": "1"}, {"name": "b", "value": "2", "path": "/x"}],
        ),
    ]


def test_a_plain_js_request_carries_nothing_more() -> None:
    order = ScrapeOrder(URL, engine="js")
    meta: dict[str, Any] = {}
    for_browser(meta, order)
    assert meta == {
        "playwright": True,
        "playwright_context": f"scrape-{order.id}",
        "playwright_page_goto_kwargs": {"wait_until": "load"},
    }


def test_the_feed_spider_builds_its_js_request_there() -> None:
    order = everything()
    request = request_for(order, FeedSpider())
    built: dict[str, Any] = {}
    for_browser(built, order)
    assert {key: request.meta[key] for key in built} == built
    assert request.cookies == {}  # in the browser's context, not in a jar


def test_the_escalation_builds_its_js_attempt_there() -> None:
    config = dataclasses.replace(Config(), proxies_datacenter=["http://dc:3128"])
    steps, _, _ = ladder(config, "auto", "none", unlocked=True, trials_left=0, max_credits=None)
    order = ScrapeOrder(URL, engine="auto", ladder=steps, started=999.5)
    order.device, order.cookies = "mobile", COOKIES
    meta: dict[str, Any] = {ORDER: order, DEADLINE: 1020.0}
    start_escalation(order, meta)
    request = Request(URL, meta=meta, dont_filter=True)
    middleware = EscalationMiddleware(clock=lambda: 1000.0)
    answer = HtmlResponse(URL, status=200, body=JS_ONLY.encode(), request=request)
    retry = middleware.process_response(request, answer)
    assert isinstance(retry, Request)
    built: dict[str, Any] = {}
    for_browser(built, order, attempt=1)
    assert {key: retry.meta[key] for key in built} == built
    assert retry.meta["playwright_context"] == f"scrape-{order.id}-1"


def test_the_accessors_read_and_write_the_requests_meta() -> None:
    order = ScrapeOrder(URL)
    request = Request(URL, meta={ORDER: order, DEADLINE: 12.5})
    assert scrape_meta.order(request) is order
    assert scrape_meta.order_if_any(Request(URL)) is None
    assert scrape_meta.deadline(request) == 12.5
    assert scrape_meta.engine(request) == "static" and not scrape_meta.renders(request)
    assert scrape_meta.tier_used(request) == "none"
    scrape_meta.set_tier_used(request, "datacenter")
    assert request.meta["scrapespy_tier_used"] == "datacenter"
    scrape_meta.set_block_reason(request, "datadome")
    assert scrape_meta.block_reason(request) == "datadome"
    scrape_meta.set_block_reason(request, None)
    assert "scrapespy_block_reason" not in request.meta
    scrape_meta.set_proxy_in_use(request, "datacenter/0")
    assert scrape_meta.proxy_in_use(request) == "datacenter/0"
    scrape_meta.set_proxy_in_use(request, None)
    assert "scrapespy_proxy" not in request.meta
    assert (
        scrape_meta.proxies_failed(request) == [] and "scrapespy_proxies_failed" not in request.meta
    )
    goto = scrape_meta.goto_kwargs(request)
    goto["timeout"] = 1.0
    assert "playwright_page_goto_kwargs" not in request.meta  # a copy
    assert scrape_meta.action_outcomes(request) == scrape_meta.action_results(request) == []
    response = HtmlResponse(URL, body=b"", request=request)
    assert scrape_meta.order(response) is order  # a response's meta is its request's
