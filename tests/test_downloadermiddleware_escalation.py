"""Tests for middlewares.escalation: when an auto request is tried again, and how, no network."""

from __future__ import annotations

import dataclasses
from typing import Any

from scrapy.exceptions import DownloadConnectionRefusedError, DownloadFailedError
from scrapy.http import HtmlResponse, Request
from twisted.internet.error import DNSLookupError

from harness.site import ARTICLE, JS_ONLY
from middlewares.deadline import DeadlineExceeded
from middlewares.escalation import EscalationMiddleware, start_escalation
from middlewares.failure_codes import failure_code
from service.core.config import Config
from service.core.escalation import ladder
from service.egress.addresses import EgressBlocked
from service.scrape.meta import ORDER
from service.scrape.order import ScrapeOrder

URL = "http://shop.example/item"
CONFIG = dataclasses.replace(
    Config(), proxies_datacenter=["http://dc:3128"], proxies_residential=["http://resi:8000"]
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def auto_request(
    engine: str = "static", tier: str = "auto", max_credits: int | None = None
) -> tuple[Request, ScrapeOrder]:
    steps, _, _ = ladder(
        CONFIG, engine, tier, unlocked=True, trials_left=0, max_credits=max_credits
    )
    order = ScrapeOrder(URL, engine=engine, proxy_type=tier, ladder=steps, started=999.5)
    meta: dict[str, Any] = {ORDER: order, "scrapespy_deadline": 1020.0}
    start_escalation(order, meta)
    return Request(URL, meta=meta, dont_filter=True), order


def answered(request: Request, status: int = 200, body: str = ARTICLE) -> HtmlResponse:
    return HtmlResponse(request.url, status=status, body=body.encode(), request=request)


def test_a_request_without_auto_is_left_alone() -> None:
    middleware = EscalationMiddleware()
    request = Request(URL, meta={"scrapespy_proxy_tier": "none", "scrapespy_block_reason": "x"})
    response = answered(request, 403, JS_ONLY)
    assert middleware.process_response(request, response) is response
    assert middleware.process_exception(request, DownloadFailedError()) is None
    assert request.meta == {"scrapespy_proxy_tier": "none", "scrapespy_block_reason": "x"}


def test_a_blocked_answer_goes_to_the_next_tier_from_the_url_again() -> None:
    clock = Clock()
    middleware = EscalationMiddleware(clock=clock)
    request, order = auto_request()
    redirected = request.replace(url=URL + "/moved")
    redirected.meta.update(
        {
            "scrapespy_tier_used": "none",
            "scrapespy_block_reason": "datadome",
            "proxy": None,
            "redirect_times": 1,
            "redirect_urls": [URL],
        }
    )
    retry = middleware.process_response(redirected, answered(redirected, 200))
    assert isinstance(retry, Request) and retry.url == URL and retry.dont_filter
    assert retry.meta["scrapespy_proxy_tier"] == "datacenter"
    for stale in ("scrapespy_tier_used", "scrapespy_block_reason", "proxy", "redirect_times"):
        assert stale not in retry.meta
    assert retry.meta["scrapespy_attempt_started"] == clock.now
    assert order.attempts == [
        {
            "tier": "none",
            "engine": "static",
            "fingerprint": "chrome",
            "status_code": 200,
            "blocked": True,
            "block_reason": "datadome",
            "error_code": "blocked",
            "elapsed_ms": 500,
        }
    ]


def test_blocked_with_scrapys_fingerprint_tries_chromes_on_the_same_tier_first() -> None:
    middleware = EscalationMiddleware(clock=Clock(), fingerprint="scrapy")
    request, order = auto_request()
    request.meta.update({"scrapespy_tier_used": "none", "scrapespy_block_reason": "cloudflare"})
    retry = middleware.process_response(request, answered(request, 403))
    assert isinstance(retry, Request)
    assert (retry.meta["scrapespy_proxy_tier"], retry.meta["scrapespy_fingerprint"]) == (
        "none",
        "chrome",
    )
    # blocked again with Chrome's: the next tier, still Chrome's
    retry.meta.update({"scrapespy_tier_used": "none", "scrapespy_block_reason": "cloudflare"})
    again = middleware.process_response(retry, answered(retry, 403))
    assert isinstance(again, Request)
    assert (again.meta["scrapespy_proxy_tier"], again.meta["scrapespy_fingerprint"]) == (
        "datacenter",
        "chrome",
    )
    assert [a["fingerprint"] for a in order.attempts or ()] == ["scrapy", "chrome"]


def test_a_js_attempt_presents_chromes_fingerprint() -> None:
    middleware = EscalationMiddleware(clock=Clock(), fingerprint="scrapy")
    request, order = auto_request(engine="js")
    request.meta.update({"scrapespy_tier_used": "none", "playwright": True})
    middleware.process_response(request, answered(request, 500))
    assert [(a["engine"], a["fingerprint"]) for a in order.attempts or ()] == [("js", "chrome")]


def test_403_and_429_climb_other_errors_do_not() -> None:
    middleware = EscalationMiddleware(clock=Clock())
    for status in (403, 429):
        request, _ = auto_request()
        request.meta["scrapespy_tier_used"] = "none"
        assert isinstance(middleware.process_response(request, answered(request, status)), Request)
    for status in (404, 500, 200):
        request, order = auto_request()
        response = answered(request, status)
        assert middleware.process_response(request, response) is response
        assert order.attempts is not None and len(order.attempts) == 1


def test_the_last_tier_answers_as_it_is() -> None:
    middleware = EscalationMiddleware(clock=Clock())
    request, order = auto_request(max_credits=2)  # residential (10) is left out
    request.meta["scrapespy_proxy_tier"] = "datacenter"
    response = answered(request, 403)
    assert middleware.process_response(request, response) is response
    assert order.attempts is not None and order.attempts[0]["error_code"] == "http_error"


def test_no_new_attempt_when_the_time_is_up() -> None:
    clock = Clock()
    middleware = EscalationMiddleware(clock=clock)
    request, _ = auto_request()
    clock.now = 1019.99
    response = answered(request, 429)
    assert middleware.process_response(request, response) is response


def test_a_javascript_shell_is_rendered_at_the_same_tier() -> None:
    middleware = EscalationMiddleware(clock=Clock())
    request, order = auto_request(engine="auto", tier="datacenter")
    request.meta["scrapespy_tier_used"] = "datacenter"
    retry = middleware.process_response(request, answered(request, 200, JS_ONLY))
    assert isinstance(retry, Request)
    assert retry.meta["playwright"] is True and retry.meta["scrapespy_proxy_tier"] == "datacenter"
    assert retry.meta["playwright_context"] == f"scrape-{order.id}-1"
    # The rendered answer is the job's, shell or not.
    rendered = answered(retry, 200, JS_ONLY)
    assert middleware.process_response(retry, rendered) is rendered
    assert order.attempts is not None
    assert [(a["engine"], a["tier"]) for a in order.attempts] == [
        ("static", "datacenter"),
        ("js", "datacenter"),
    ]


def test_the_js_attempt_gets_the_device_and_cookies_the_static_one_had() -> None:
    middleware = EscalationMiddleware(clock=Clock())
    request, order = auto_request(engine="auto", tier="none")
    order.device, order.cookies = "mobile", ({"name": "session", "value": "s1"},)
    retry = middleware.process_response(request, answered(request, 200, JS_ONLY))
    assert isinstance(retry, Request)
    assert retry.meta["scrapespy_device"] == "mobile"
    assert retry.meta["scrapespy_cookies"] == [{"name": "session", "value": "s1"}]


def test_a_page_stays_static_and_a_shell_over_the_cap_too() -> None:
    middleware = EscalationMiddleware(clock=Clock())
    request, _ = auto_request(engine="auto", tier="none")
    response = answered(request, 200, ARTICLE)
    assert middleware.process_response(request, response) is response
    request, _ = auto_request(engine="auto", tier="none", max_credits=4)  # js costs 5
    response = answered(request, 200, JS_ONLY)
    assert middleware.process_response(request, response) is response


def test_a_reset_connection_climbs_a_refused_one_does_not() -> None:
    middleware = EscalationMiddleware(clock=Clock())
    request, order = auto_request()
    retry = middleware.process_exception(request, DownloadFailedError("reset"))
    assert isinstance(retry, Request) and retry.meta["scrapespy_proxy_tier"] == "datacenter"
    assert middleware.process_exception(request, DownloadConnectionRefusedError()) is None
    assert order.attempts is not None
    assert [(a["status_code"], a["error_code"]) for a in order.attempts] == [
        (0, "connection_error"),
        (0, "connection_error"),
    ]


def test_error_codes_of_failures() -> None:
    assert failure_code(DeadlineExceeded()) == "timeout"
    assert failure_code(EgressBlocked()) == "egress_blocked"
    assert failure_code(DNSLookupError()) == "dns_error"
