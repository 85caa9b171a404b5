"""Tests for middlewares.proxy_pool: choosing, rotating, benching and falling back, no network."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest
from playwright._impl._errors import Error as PlaywrightError
from playwright._impl._errors import TimeoutError as PlaywrightTimeout
from scrapy.core.downloader.handlers.http11 import TunnelError
from scrapy.downloadermiddlewares.httpproxy import HttpProxyMiddleware
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    NotConfigured,
)
from scrapy.http import HtmlResponse, Request, Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from twisted.internet.error import DNSLookupError
from twisted.internet.error import TimeoutError as TxTimeoutError
from twisted.web.client import ResponseNeverReceived

from middlewares.proxies import Proxy
from middlewares.proxy_pool import ProxyPoolMiddleware, classify
from service.scrape.meta import PROXIES_FAILED, PROXY_IN_USE, TIER_USED
from service.scrape.scrapy_settings import default_settings

DC = [
    "http://alice:s3cret@dc1.example:3128",
    "http://bob:hunter2@dc2.example:3128",
    "dc3.example:8080",
]
RESI = ["http://carol:p%40ss%20word@gw.example:8000"]
SECRETS = ("s3cret", "hunter2", "p@ss word", "p%40ss", "alice", "bob", "carol")
TARGET = "http://target.example/page"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def build(clock: Clock, **settings: Any) -> ProxyPoolMiddleware:
    crawler = get_crawler(
        settings_dict={
            **default_settings(),
            "SCRAPESPY_PROXIES_DATACENTER": DC,
            "SCRAPESPY_PROXIES_RESIDENTIAL": RESI,
            "SCRAPESPY_PROXY_BENCH_SECONDS": 60,
            **settings,
        }
    )
    mw = build_from_crawler(ProxyPoolMiddleware, crawler)
    mw.clock = clock
    for pool in mw.pools.values():
        pool.clock = clock
    return mw


@pytest.fixture
def mw(clock: Clock) -> ProxyPoolMiddleware:
    return build(clock)


@pytest.fixture
def httpproxy() -> HttpProxyMiddleware:
    return HttpProxyMiddleware()


def scrape(tier: str, url: str = TARGET, **meta: Any) -> Request:
    return Request(url, meta={"scrapespy_proxy_tier": tier, **meta})


def through(mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware, request: Request) -> Request:
    """Both middlewares in the service's order (740, then 750)."""
    assert mw.process_request(request) is None
    assert httpproxy.process_request(request) is None
    return request


def basic(user: str, password: str) -> bytes:
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())


def stat(mw: ProxyPoolMiddleware, key: str) -> Any:
    assert mw.stats is not None
    return mw.stats.get_value(f"scrapespy/proxy_pool/{key}")


# ---------------------------------------------------------------------------------------------
# Reading the operator's proxy URLs


def test_parse_keeps_credentials_apart_from_the_label() -> None:
    proxy = Proxy.parse("http://carol:p%40ss%20word@gw.example:8000", "residential", 0)
    assert proxy.label == "gw.example:8000"
    assert proxy.server == "http://gw.example:8000"
    assert proxy.key == "residential/0"
    assert proxy.playwright_settings() == {
        "server": "http://gw.example:8000",
        "username": "carol",
        "password": "p@ss word",
    }
    assert "p%40ss" not in repr(proxy) and "carol" not in repr(proxy)


def test_parse_accepts_host_port_without_scheme_or_credentials() -> None:
    proxy = Proxy.parse(" 10.0.0.7:3128 ", "datacenter", 2)
    assert proxy.url == "http://10.0.0.7:3128"
    assert proxy.label == "10.0.0.7:3128"
    assert proxy.playwright_settings() == {"server": "http://10.0.0.7:3128"}
    assert Proxy.parse("http://[::1]:3128", "datacenter", 0).label == "[::1]:3128"


@pytest.mark.parametrize(
    "url, message",
    [
        ("socks5://u:secretpw@h.example:1080", "only http:// proxies"),
        ("https://u:secretpw@h.example:443", "only http:// proxies"),
        ("http://u:secretpw@h.example:notaport", "not a valid proxy URL"),
        ("http://u:secretpw@h.example:3128/path", "no path"),
        ("http://u:secretpw@:3128", "no host"),
    ],
)
def test_parse_errors_name_the_entry_not_the_credentials(url: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        Proxy.parse(url, "datacenter", 4)
    assert message in str(info.value)
    assert "datacenter proxy #5" in str(info.value)
    assert "secretpw" not in str(info.value)


def test_from_crawler_refuses_a_bad_pool_entry_without_showing_it(clock: Clock) -> None:
    with pytest.raises(ValueError) as info:
        build(clock, SCRAPESPY_PROXIES_DATACENTER=["http://ok.example:1", "ftp://u:topsecret@x:2"])
    assert "datacenter proxy #2 (x:2)" in str(info.value)
    assert "topsecret" not in str(info.value)


def test_not_configured_when_disabled(clock: Clock) -> None:
    with pytest.raises(NotConfigured):
        build(clock, SCRAPESPY_PROXY_POOL_ENABLED=False)


# ---------------------------------------------------------------------------------------------
# Choosing a proxy


def test_requests_that_are_not_scrapes_are_left_alone(mw: ProxyPoolMiddleware) -> None:
    request = Request("http://target.example/robots.txt")
    assert mw.process_request(request) is None
    assert "proxy" not in request.meta and TIER_USED not in request.meta


def test_tier_none_goes_direct_even_with_an_environment_proxy(
    mw: ProxyPoolMiddleware, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("http_proxy", "http://envuser:envpass@corporate.example:3128")
    httpproxy = HttpProxyMiddleware()
    request = through(mw, httpproxy, scrape("none"))
    assert request.meta["proxy"] is None
    assert request.meta[TIER_USED] == "none"
    assert b"Proxy-Authorization" not in request.headers
    assert stat(mw, "datacenter/used") is None


def test_datacenter_request_goes_through_a_proxy_with_its_credentials(
    mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware
) -> None:
    request = scrape("datacenter")
    mw.process_request(request)
    assert request.meta["proxy"] == DC[0]
    assert request.meta[TIER_USED] == "datacenter"
    assert request.meta[PROXY_IN_USE] == "datacenter/0"
    httpproxy.process_request(request)
    # Scrapy's HttpProxyMiddleware moves the credentials into the header, out of the URL.
    assert request.meta["proxy"] == "http://dc1.example:3128"
    assert request.headers[b"Proxy-Authorization"] == basic("alice", "s3cret")
    assert stat(mw, "datacenter/used") == 1


def test_round_robin_over_the_pool(mw: ProxyPoolMiddleware) -> None:
    used = []
    for _ in range(6):
        request = scrape("datacenter")
        mw.process_request(request)
        used.append(request.meta[PROXY_IN_USE])
    assert used == ["datacenter/0", "datacenter/1", "datacenter/2"] * 2


def test_residential_uses_its_own_pool(mw: ProxyPoolMiddleware) -> None:
    request = scrape("residential")
    mw.process_request(request)
    assert request.meta[TIER_USED] == "residential"
    assert request.meta["proxy"] == RESI[0]


def test_empty_pool_falls_back_to_direct(clock: Clock, httpproxy: HttpProxyMiddleware) -> None:
    mw = build(clock, SCRAPESPY_PROXIES_RESIDENTIAL=[])
    request = through(mw, httpproxy, scrape("residential"))
    assert request.meta["proxy"] is None
    assert request.meta[TIER_USED] == "none"
    assert stat(mw, "residential/direct") == 1


def test_benched_proxies_are_skipped_then_tried_again(
    mw: ProxyPoolMiddleware, clock: Clock
) -> None:
    pool = mw.pools["datacenter"]
    pool.bench(pool.proxies[0], "test")
    pool.bench(pool.proxies[1], "test")
    picks = []
    for _ in range(2):
        request = scrape("datacenter")
        mw.process_request(request)
        picks.append(request.meta[PROXY_IN_USE])
    assert picks == ["datacenter/2", "datacenter/2"]
    pool.bench(pool.proxies[2], "test")
    request = scrape("datacenter")
    mw.process_request(request)
    assert request.meta[TIER_USED] == "none"

    clock.now += 60.5
    request = scrape("datacenter")
    mw.process_request(request)
    assert request.meta[TIER_USED] == "datacenter"


def test_js_request_gets_a_context_proxy_and_no_proxy_header(
    mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware
) -> None:
    request = scrape(
        "residential",
        playwright=True,
        playwright_context_kwargs={"java_script_enabled": True},
    )
    through(mw, httpproxy, request)
    assert request.meta["playwright_context_kwargs"] == {
        "java_script_enabled": True,
        "proxy": {"server": "http://gw.example:8000", "username": "carol", "password": "p@ss word"},
    }
    assert request.meta["proxy"] is None
    assert request.meta[TIER_USED] == "residential"
    # scrapy-playwright sends Scrapy's headers to the target: none may be for the proxy.
    assert b"Proxy-Authorization" not in request.headers


def test_js_request_falling_back_loses_its_context_proxy(
    mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware
) -> None:
    request = scrape("residential", playwright=True)
    through(mw, httpproxy, request)
    error = PlaywrightError("Page.goto: net::ERR_PROXY_CONNECTION_FAILED at http://x/")
    retry = mw.process_exception(request, error)
    assert retry is not None
    through(mw, httpproxy, retry)
    assert retry.meta[TIER_USED] == "none"
    assert "proxy" not in retry.meta["playwright_context_kwargs"]
    assert PROXY_IN_USE not in retry.meta


def test_a_redirect_stays_on_its_proxy(
    mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware
) -> None:
    request = through(mw, httpproxy, scrape("datacenter"))
    mw.process_request(scrape("datacenter"))  # another scrape moves the rotation on
    redirect = RedirectMiddleware.from_crawler(get_crawler())
    response = Response(TARGET, status=302, headers={"Location": "/moved"}, request=request)
    assert mw.process_response(request, response) is response
    follow = redirect.process_response(request, response)
    assert isinstance(follow, Request)
    through(mw, httpproxy, follow)
    assert follow.meta[PROXY_IN_USE] == "datacenter/0"
    assert follow.headers[b"Proxy-Authorization"] == basic("alice", "s3cret")


def test_a_redirect_whose_proxy_was_benched_goes_direct_without_the_old_header(
    httpproxy: HttpProxyMiddleware,
) -> None:
    mw2 = build(Clock(), SCRAPESPY_PROXIES_DATACENTER=DC[:1])
    request = through(mw2, httpproxy, scrape("datacenter"))
    response = Response(TARGET, status=302, headers={"Location": "/moved"}, request=request)
    follow = RedirectMiddleware.from_crawler(get_crawler()).process_response(request, response)
    assert isinstance(follow, Request)
    assert follow.headers[b"Proxy-Authorization"] == basic("alice", "s3cret")  # copied along
    pool = mw2.pools["datacenter"]
    pool.bench(pool.proxies[0], "test")
    through(mw2, httpproxy, follow)
    assert follow.meta[TIER_USED] == "none"
    assert follow.meta["proxy"] is None
    # The target must not receive the proxy's credentials on the direct connection.
    assert b"Proxy-Authorization" not in follow.headers


# ---------------------------------------------------------------------------------------------
# Failures: bench, retry on another proxy, then direct


def test_refused_proxy_is_benched_and_the_scrape_retried_on_another(
    mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware
) -> None:
    request = through(mw, httpproxy, scrape("datacenter", cookiejar=7))
    retry = mw.process_exception(request, DownloadConnectionRefusedError("refused"))
    assert isinstance(retry, Request)
    assert retry is not request and retry.dont_filter
    assert retry.meta[PROXIES_FAILED] == ["datacenter/0"]
    assert retry.meta["cookiejar"] == 7
    through(mw, httpproxy, retry)
    assert retry.meta[PROXY_IN_USE] == "datacenter/1"
    assert retry.headers[b"Proxy-Authorization"] == basic("bob", "hunter2")
    assert mw.pools["datacenter"].proxies[0].benched_until == 1060.0
    assert stat(mw, "datacenter/benched") == 1
    assert stat(mw, "datacenter/retried") == 1


def test_second_failure_goes_direct_and_drops_the_proxy_header(
    mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware
) -> None:
    request = through(mw, httpproxy, scrape("datacenter"))
    retry = mw.process_exception(request, DownloadConnectionRefusedError())
    assert retry is not None
    through(mw, httpproxy, retry)
    assert retry.headers[b"Proxy-Authorization"] == basic("bob", "hunter2")
    last = mw.process_exception(retry, CannotResolveHostError("no such proxy host"))
    assert last is not None
    through(mw, httpproxy, last)
    assert last.meta[TIER_USED] == "none"
    assert last.meta["proxy"] is None
    assert b"Proxy-Authorization" not in last.headers
    assert last.meta[PROXIES_FAILED] == ["datacenter/0", "datacenter/1"]
    assert stat(mw, "datacenter/direct") == 1
    # The direct attempt's own failure is the scrape's failure: no further retry.
    assert mw.process_exception(last, DownloadConnectionRefusedError()) is None


def test_a_pool_of_one_retries_directly(clock: Clock, httpproxy: HttpProxyMiddleware) -> None:
    mw = build(clock)
    request = through(mw, httpproxy, scrape("residential"))
    retry = mw.process_exception(request, DownloadConnectionRefusedError())
    assert retry is not None
    through(mw, httpproxy, retry)
    assert retry.meta[TIER_USED] == "none"
    # Benched: the next scrape goes direct at once, without trying the dead proxy.
    nxt = through(mw, httpproxy, scrape("residential"))
    assert nxt.meta[TIER_USED] == "none"


def test_proxy_rejecting_credentials_is_a_proxy_failure(
    mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware
) -> None:
    request = through(mw, httpproxy, scrape("datacenter"))
    response = HtmlResponse(TARGET, status=407, body=b"auth", request=request)
    retry = mw.process_response(request, response)
    assert isinstance(retry, Request)
    assert retry.meta[PROXIES_FAILED] == ["datacenter/0"]
    assert mw.pools["datacenter"].proxies[0].benched_until > 1000.0
    ok = HtmlResponse(TARGET, status=200, body=b"fine", request=request)
    assert mw.process_response(request, ok) is ok


def test_mid_request_failures_retry_but_bench_only_after_strikes(
    mw: ProxyPoolMiddleware,
) -> None:
    pool = mw.pools["datacenter"]
    first = pool.proxies[0]
    failure = DownloadFailedError("lost")
    failure.__cause__ = ResponseNeverReceived([])
    for strike in (1, 2):
        request = scrape("datacenter", scrapespy_proxy="datacenter/0")
        mw.process_request(request)
        assert request.meta[PROXY_IN_USE] == "datacenter/0"
        retry = mw.process_exception(request, failure)
        assert isinstance(retry, Request) and retry.meta[PROXIES_FAILED] == ["datacenter/0"]
        assert first.strikes == strike and first.benched_until == 0.0
    # A success wipes the slate.
    request = scrape("datacenter", scrapespy_proxy="datacenter/0")
    mw.process_request(request)
    mw.process_response(request, HtmlResponse(TARGET, body=b"ok", request=request))
    assert first.strikes == 0
    for _ in range(3):
        request = scrape("datacenter", scrapespy_proxy="datacenter/0")
        mw.process_request(request)
        mw.process_exception(request, failure)
    assert first.benched_until == 1060.0
    assert stat(mw, "datacenter/benched") == 1


@pytest.mark.parametrize(
    "exception, kind",
    [
        (DownloadConnectionRefusedError(), "connect"),
        (CannotResolveHostError(), "connect"),
        (
            TunnelError("Could not open CONNECT tunnel with proxy h:1 [{'status': 407, 'r': 1}]"),
            "connect",
        ),
        (TunnelError("Could not open CONNECT tunnel with proxy h:1 [b'garbage']"), "connect"),
        (
            TunnelError("Could not open CONNECT tunnel with proxy h:1 [{'status': 502, 'r': 1}]"),
            "midway",
        ),
        (DownloadFailedError(), "midway"),
        (DownloadTimeoutError("Getting x took longer than 5 seconds."), "timeout"),
        (PlaywrightError("Page.goto: net::ERR_PROXY_CONNECTION_FAILED at x"), "connect"),
        (PlaywrightError("Page.goto: net::ERR_INVALID_AUTH_CREDENTIALS at x"), "connect"),
        (PlaywrightError("Page.goto: net::ERR_CONNECTION_RESET at x"), "midway"),
        (PlaywrightTimeout("Timeout 5000ms exceeded."), "timeout"),
        (PlaywrightError("Page.goto: net::ERR_NAME_NOT_RESOLVED at x"), None),
        (IgnoreRequest("forbidden by robots.txt"), None),
        (DNSLookupError("target"), None),  # the egress guard's, about the target
        (ValueError("something else"), None),
    ],
)
def test_classify(exception: Exception, kind: str | None) -> None:
    assert classify(exception) == kind


def test_connect_timeout_benches() -> None:
    timeout = DownloadTimeoutError("User timeout caused connection failure.")
    timeout.__cause__ = TxTimeoutError()
    assert classify(timeout) == "connect"


def test_no_retry_once_the_deadline_has_passed(mw: ProxyPoolMiddleware, clock: Clock) -> None:
    request = scrape("datacenter", scrapespy_deadline=clock.now + 0.01)
    mw.process_request(request)
    assert mw.process_exception(request, DownloadConnectionRefusedError()) is None
    # The proxy is benched all the same, and the failed scrape says a proxy was used.
    assert mw.pools["datacenter"].proxies[0].benched_until > clock.now
    assert request.meta[TIER_USED] == "datacenter"


def test_failures_unrelated_to_the_proxy_are_left_alone(mw: ProxyPoolMiddleware) -> None:
    request = scrape("datacenter")
    mw.process_request(request)
    assert mw.process_exception(request, IgnoreRequest("robots.txt")) is None
    assert mw.process_exception(request, DNSLookupError("target.example")) is None
    direct = scrape("none")
    mw.process_request(direct)
    assert mw.process_exception(direct, DownloadConnectionRefusedError()) is None
    assert all(p.benched_until == 0.0 for p in mw.pools["datacenter"].proxies)


def test_credentials_appear_in_no_log_and_no_stats_key(
    mw: ProxyPoolMiddleware, httpproxy: HttpProxyMiddleware, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    build(Clock())  # logs the pools
    for tier in ("datacenter", "residential"):
        for _ in range(3):
            request = through(mw, httpproxy, scrape(tier))
            retry = mw.process_exception(request, DownloadConnectionRefusedError())
            if retry is not None:
                through(mw, httpproxy, retry)
                mw.process_exception(retry, DownloadFailedError())
    assert "dc1.example:3128" in caplog.text  # proxies are named by host:port
    assert mw.stats is not None
    stats = mw.stats.get_stats()
    for secret in SECRETS:
        assert secret not in caplog.text
        assert not any(secret in key for key in stats)


# ---------------------------------------------------------------------------------------------
# Proxies by country (service.core.places)

PLACED = [
    "de=http://dora:de-pw@de1.example:3128",
    "FR=fr1.example:3128",
    "http://any.example:3128",
    "de=de2.example:3128",
]


def test_a_tag_gives_the_proxy_its_country_and_never_shows_in_the_url(clock: Clock) -> None:
    mw = build(clock, SCRAPESPY_PROXIES_DATACENTER=PLACED)
    pool = mw.pools["datacenter"]
    assert [(p.country, p.label) for p in pool.proxies] == [
        ("de", "de1.example:3128"),
        ("fr", "fr1.example:3128"),
        (None, "any.example:3128"),
        ("de", "de2.example:3128"),
    ]
    assert pool.proxies[0].url == "http://dora:de-pw@de1.example:3128"
    assert (pool.proxies[0].username, pool.proxies[0].password) == ("dora", "de-pw")


def test_a_country_rotates_over_its_own_proxies_only(clock: Clock) -> None:
    mw = build(clock, SCRAPESPY_PROXIES_DATACENTER=PLACED)
    used = []
    for _ in range(4):
        request = scrape("datacenter", scrapespy_country="de")
        mw.process_request(request)
        used.append(request.meta[PROXY_IN_USE])
    assert used == ["datacenter/0", "datacenter/3"] * 2
    anywhere = []
    for _ in range(4):
        request = scrape("datacenter")
        mw.process_request(request)
        anywhere.append(request.meta[PROXY_IN_USE])
    assert anywhere == ["datacenter/0", "datacenter/1", "datacenter/2", "datacenter/3"]


def test_a_countrys_failed_proxies_go_direct_not_to_another_country(
    clock: Clock, httpproxy: HttpProxyMiddleware
) -> None:
    mw = build(clock, SCRAPESPY_PROXIES_DATACENTER=PLACED, SCRAPESPY_PROXY_ATTEMPTS=5)
    request = through(mw, httpproxy, scrape("datacenter", scrapespy_country="fr"))
    assert request.meta[PROXY_IN_USE] == "datacenter/1"
    retry = mw.process_exception(request, DownloadConnectionRefusedError("refused"))
    assert isinstance(retry, Request)
    through(mw, httpproxy, retry)
    assert retry.meta["proxy"] is None and retry.meta[TIER_USED] == "none"
    # benched: the next French request goes direct at once
    again = through(mw, httpproxy, scrape("datacenter", scrapespy_country="fr"))
    assert again.meta[TIER_USED] == "none"


def test_an_unknown_tag_is_refused_naming_the_entry_not_its_credentials(clock: Clock) -> None:
    with pytest.raises(ValueError) as refused:
        build(clock, SCRAPESPY_PROXIES_DATACENTER=["zz=http://eve:pw-zz@h.example:1"])
    assert "datacenter proxy #1" in str(refused.value) and "'zz'" in str(refused.value)
    assert "pw-zz" not in str(refused.value)
