"""Tests for middlewares.egress_guard: the middleware alone and real downloads through it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import CrawlerRunner
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler
from twisted.internet import reactor as _reactor
from twisted.internet.error import ConnectionRefusedError, DNSLookupError, TimeoutError
from twisted.internet.interfaces import IHostnameResolver
from twisted.web import resource, server
from zope.interface import implementer

from middlewares import egress_guard
from middlewares.egress_guard import STATS_KEY_BLOCKED, EgressGuardMiddleware
from service.egress import resolver
from service.egress.addresses import (
    BLOCKED_MESSAGE,
    UNSUPPORTED_SCHEME_MESSAGE,
    EgressBlocked,
    UnsupportedScheme,
)
from service.egress.resolver import (
    GuardedResolver,
    HostAllowList,
    find_guarded_resolver,
    install_guarded_resolver,
    uninstall_guarded_resolver,
)
from service.scrape.scrapy_settings import default_settings
from tests.resolvers import (
    TABLE,
    FakeReactor,
    FakeResolver,
    FakeStats,
    RecordingReceiver,
    Resolution,
)

reactor: Any = _reactor
MW_PATH = "middlewares.egress_guard.EgressGuardMiddleware"

# ---------------------------------------------------------------------------------------------
# EgressGuardMiddleware, unit level


def make_mw(
    table: dict[str, list[Any]] | None = None, allow_hosts: tuple[str, ...] = ()
) -> tuple[EgressGuardMiddleware, FakeStats, FakeResolver]:
    wrapped = FakeResolver(TABLE if table is None else table)
    guard = GuardedResolver(wrapped, allow_host=HostAllowList(allow_hosts))
    stats = FakeStats()
    return EgressGuardMiddleware(guard, allow_hosts=allow_hosts, stats=stats), stats, wrapped


async def run_request(mw: EgressGuardMiddleware, request: Request) -> Any:
    # The middleware awaits asyncio futures (asyncio reactor), so drive it as Scrapy does.
    return await deferred_from_coro(mw.process_request(request))


BLOCKED_URLS = [
    "http://127.0.0.1/",
    "http://127.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://017700000001/",
    "http://0x7f.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::1]:8080/",
    "http://[::]/",
    "http://0.0.0.0/",
    "http://0/",
    "https://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1:6379/",
    "http://100.64.1.1/",
    "http://[fd00::1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://127.0.0.1./",
    "http://user:pass@127.0.0.1:80/",
]


@pytest.mark.parametrize("url", BLOCKED_URLS)
@pytest_twisted.ensureDeferred
async def test_middleware_blocks_private_literals(url: str) -> None:
    mw, stats, wrapped = make_mw()
    with pytest.raises(EgressBlocked) as info:
        await run_request(mw, Request(url))
    assert str(info.value) == BLOCKED_MESSAGE
    assert isinstance(info.value, IgnoreRequest)
    assert stats.values == {STATS_KEY_BLOCKED: 1}
    assert wrapped.calls == []


@pytest.mark.parametrize(
    "url",
    ["http://8.8.8.8/", "https://[2606:4700::1]/", "http://localhost/", "https://example.com/"],
)
@pytest_twisted.ensureDeferred
async def test_middleware_lets_names_and_public_literals_through(url: str) -> None:
    # Names are left to the guarded resolver, which sees the address really connected to.
    mw, stats, wrapped = make_mw()
    assert await run_request(mw, Request(url)) is None
    assert stats.values == {}
    assert wrapped.calls == []


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/", "s3://bucket/key"])
@pytest_twisted.ensureDeferred
async def test_middleware_refuses_other_schemes(url: str) -> None:
    mw, _, _ = make_mw()
    with pytest.raises(UnsupportedScheme) as info:
        await run_request(mw, Request(url))
    assert str(info.value) == UNSUPPORTED_SCHEME_MESSAGE
    assert isinstance(info.value, IgnoreRequest)


@pytest_twisted.ensureDeferred
async def test_middleware_refuses_its_own_proxy_hosts_as_targets() -> None:
    mw, _, _ = make_mw(allow_hosts=("localhost", "proxy.internal"))
    for url in ("http://localhost:3128/", "http://PROXY.internal/"):
        with pytest.raises(EgressBlocked):
            await run_request(mw, Request(url))


@pytest.mark.parametrize(
    ("target", "blocked"),
    [
        ("http://public.example/", False),
        ("http://private.example/", True),
        ("http://mixed.example/", True),
        ("http://rebind.example:8080/", True),
        ("https://unix.example/", True),
        ("http://8.8.8.8/", False),
        ("http://2130706433/", True),
    ],
)
@pytest_twisted.ensureDeferred
async def test_middleware_resolves_proxied_targets(target: str, blocked: bool) -> None:
    mw, stats, wrapped = make_mw(allow_hosts=("127.0.0.1",))
    request = Request(target, meta={"proxy": "http://127.0.0.1:3128"})
    if blocked:
        with pytest.raises(EgressBlocked):
            await run_request(mw, request)
        assert stats.values == {STATS_KEY_BLOCKED: 1}
    else:
        assert await run_request(mw, request) is None
        assert stats.values == {}
    # The target is looked up with the unguarded resolver, so private answers are seen.
    assert mw.guard.dropped_count == 0


@pytest_twisted.ensureDeferred
async def test_middleware_proxied_target_without_addresses_fails_closed() -> None:
    mw, _, _ = make_mw(allow_hosts=("127.0.0.1",))
    request = Request("http://nxdomain.example/", meta={"proxy": "127.0.0.1:3128"})
    with pytest.raises(DNSLookupError):
        await run_request(mw, request)


@pytest.mark.parametrize(
    ("proxy", "blocked"),
    [
        ("http://127.0.0.1:3128", True),
        ("http://10.0.0.5:3128", True),
        ("http://user:pw@[::1]:3128", True),
        ("http://8.8.8.8:3128", False),
        ("http://proxy.example:3128", False),  # a name: the resolver checks it on connect
    ],
)
@pytest_twisted.ensureDeferred
async def test_middleware_checks_proxy_literals(proxy: str, blocked: bool) -> None:
    mw, _, _ = make_mw()
    request = Request("http://public.example/", meta={"proxy": proxy})
    if blocked:
        with pytest.raises(EgressBlocked):
            await run_request(mw, request)
    else:
        assert await run_request(mw, request) is None


def test_process_exception_turns_resolver_blocks_into_egress_blocked() -> None:
    mw, stats, _ = make_mw()
    mw.guard.resolveHostName(RecordingReceiver(), "rebind.example", 80)
    request = Request("http://rebind.example/")
    error = DNSLookupError("no results for hostname lookup: rebind.example")
    with pytest.raises(EgressBlocked) as info:
        mw.process_exception(request, error)
    assert str(info.value) == BLOCKED_MESSAGE
    assert info.value.__cause__ is error
    assert stats.values == {STATS_KEY_BLOCKED: 1}

    # Only DNS-lookup failures are converted, and only for hosts the resolver refused.
    with pytest.raises(EgressBlocked):
        mw.process_exception(request, CannotResolveHostError("DNS lookup failed"))
    assert mw.process_exception(request, TimeoutError()) is None
    assert mw.process_exception(request, ValueError("x")) is None
    assert mw.process_exception(Request("http://public.example/"), error) is None
    assert mw.process_exception(Request("http://public.example/"), ConnectionRefusedError()) is None


def test_process_exception_for_a_refused_proxy_name() -> None:
    mw, _, _ = make_mw()
    mw.guard.resolveHostName(RecordingReceiver(), "proxy.internal", 3128)
    request = Request("http://public.example/", meta={"proxy": "http://proxy.internal:3128"})
    with pytest.raises(EgressBlocked):
        mw.process_exception(request, DNSLookupError("no results"))


# ---------------------------------------------------------------------------------------------
# Real downloads through the reactor


@pytest.fixture
def restore_reactor_resolver() -> Iterator[None]:
    name_resolver, simple_resolver = reactor.nameResolver, reactor.resolver
    yield
    reactor.installNameResolver(name_resolver)
    reactor.resolver = simple_resolver


class CountingResource(resource.Resource):
    isLeaf = True

    def __init__(self, body: bytes = b"hello", redirect_to: str | None = None) -> None:
        super().__init__()
        self.hits = 0
        self.body = body
        self.redirect_to = redirect_to

    def render_GET(self, request: Any) -> bytes:
        self.hits += 1
        if self.redirect_to is not None:
            request.setResponseCode(302)
            request.setHeader(b"Location", self.redirect_to.encode())
            return b""
        return self.body


@pytest.fixture
def http_server() -> Iterator[Any]:
    """Start twisted.web servers: ``http_server(interface)`` returns (resource, port)."""
    ports: list[Any] = []

    def start(interface: str = "127.0.0.1", **kwargs: Any) -> tuple[CountingResource, int]:
        res = CountingResource(**kwargs)
        port = reactor.listenTCP(0, server.Site(res), interface=interface)
        ports.append(port)
        return res, port.getHost().port

    yield start
    for port in ports:
        port.stopListening()


class RecordingSpider(scrapy.Spider):
    name = "egress_guard_test"

    def __init__(self, urls: list[str], meta: dict[str, Any] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.urls = urls
        self.request_meta = meta or {}
        self.responses: dict[str, tuple[int, bytes]] = {}
        self.failures: dict[str, BaseException] = {}

    async def start(self) -> Any:
        for url in self.urls:
            yield scrapy.Request(
                url,
                callback=self.parse,
                errback=self.failed,
                dont_filter=True,
                meta={**self.request_meta, "original_url": url},
            )

    def parse(self, response: Any) -> None:
        self.responses[response.meta["original_url"]] = (response.status, response.body)

    def failed(self, failure: Any) -> None:
        self.failures[failure.request.meta["original_url"]] = failure.value


def crawl_settings(**extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        **default_settings(),
        "DOWNLOADER_MIDDLEWARES": {MW_PATH: 760},
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "DOWNLOAD_TIMEOUT": 10,
        "DNS_TIMEOUT": 10,
    }
    settings.update(extra)
    return settings


async def crawl(settings: dict[str, Any], urls: list[str], **kwargs: Any) -> Any:
    runner = CrawlerRunner(settings)
    crawler = runner.create_crawler(RecordingSpider)
    await runner.crawl(crawler, urls=urls, **kwargs)
    return crawler


def assert_blocked(spider: RecordingSpider, urls: list[str]) -> None:
    assert spider.responses == {}
    assert set(spider.failures) == set(urls)
    for url in urls:
        error = spider.failures[url]
        assert isinstance(error, EgressBlocked), (url, error)
        assert str(error) == BLOCKED_MESSAGE


@pytest_twisted.ensureDeferred
async def test_crawl_refuses_loopback_at_the_resolver(
    restore_reactor_resolver: None, http_server: Any
) -> None:
    res, port = http_server()
    by_name = f"http://localhost:{port}/"
    literals = [f"http://127.1:{port}/", f"http://2130706433:{port}/", f"http://0.0.0.0:{port}/"]
    crawler = await crawl(crawl_settings(), [by_name, *literals])

    assert_blocked(crawler.spider, [by_name, *literals])
    assert res.hits == 0
    guard = find_guarded_resolver(reactor)
    assert guard is not None
    # "localhost" passed the middleware (it is a name) and was refused by the resolver.
    assert guard.was_blocked("localhost")
    assert crawler.stats.get_value(STATS_KEY_BLOCKED) == 4
    assert not crawler.stats.get_value("retry/count")


@pytest_twisted.ensureDeferred
async def test_crawl_resolver_alone_refuses_every_spelling(
    restore_reactor_resolver: None, http_server: Any
) -> None:
    # Without the middleware's literal check, the resolver still refuses each connection.
    res, port = http_server()
    guard = install_guarded_resolver(reactor, allow_private=False)
    assert guard is not None
    urls = [
        f"http://localhost:{port}/",
        f"http://127.0.0.1:{port}/",
        f"http://127.1:{port}/",
        f"http://2130706433:{port}/",
        f"http://0x7f000001:{port}/",
        f"http://[::1]:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
    ]
    crawler = await crawl(crawl_settings(DOWNLOADER_MIDDLEWARES={}, RETRY_ENABLED=False), urls)
    spider = crawler.spider
    assert spider.responses == {}
    assert set(spider.failures) == set(urls)
    for error in spider.failures.values():
        # Scrapy 2.19 wraps Twisted's DNSLookupError in its own CannotResolveHostError.
        assert isinstance(error, DNSLookupError | CannotResolveHostError), error
        assert "no results for hostname lookup" in str(error)
    # Every spelling, IP literals included, reached the resolver and had all addresses dropped.
    for url in urls:
        assert guard.was_blocked(urlsplit(url).hostname or ""), url
    assert guard.blocked_count == len(urls)
    assert res.hits == 0


@pytest_twisted.ensureDeferred
async def test_crawl_allowed_when_private_targets_are_allowed(
    restore_reactor_resolver: None, http_server: Any
) -> None:
    res, port = http_server()
    url = f"http://localhost:{port}/"
    settings = crawl_settings(SCRAPESPY_ALLOW_PRIVATE_TARGETS=True)
    crawler = await crawl(settings, [url])
    assert crawler.spider.failures == {}
    assert crawler.spider.responses == {url: (200, b"hello")}
    assert res.hits == 1
    assert find_guarded_resolver(reactor) is None


def test_from_crawler_not_configured_when_private_allowed() -> None:
    crawler = get_crawler(settings_dict={"SCRAPESPY_ALLOW_PRIVATE_TARGETS": True})
    with pytest.raises(NotConfigured):
        EgressGuardMiddleware.from_crawler(crawler)


@pytest.fixture
def second_loopback_is_public(monkeypatch: pytest.MonkeyPatch) -> str:
    """Pretend 127.0.0.2 is a public address so a local server can play the public site."""
    original = egress_guard.is_public_address

    def patched(ip: Any) -> bool:
        return str(ip).strip("[]") == "127.0.0.2" or original(ip)

    monkeypatch.setattr(egress_guard, "is_public_address", patched)
    monkeypatch.setattr(resolver, "is_public_address", patched)
    return "127.0.0.2"


@pytest_twisted.ensureDeferred
async def test_crawl_redirects_to_private_targets_are_refused(
    restore_reactor_resolver: None, http_server: Any, second_loopback_is_public: str
) -> None:
    internal, internal_port = http_server("127.0.0.1")
    targets = {
        "name": f"http://localhost:{internal_port}/admin",
        "literal": f"http://127.0.0.1:{internal_port}/admin",
        "mapped": f"http://[::ffff:127.0.0.1]:{internal_port}/admin",
        "decimal": f"http://2130706433:{internal_port}/admin",
    }
    urls = []
    publics = []
    for target in targets.values():
        public, public_port = http_server(second_loopback_is_public, redirect_to=target)
        publics.append(public)
        urls.append(f"http://{second_loopback_is_public}:{public_port}/")
    ok, ok_port = http_server(second_loopback_is_public)
    ok_url = f"http://{second_loopback_is_public}:{ok_port}/"

    crawler = await crawl(crawl_settings(), [*urls, ok_url])
    spider = crawler.spider
    assert spider.responses == {ok_url: (200, b"hello")}
    assert set(spider.failures) == set(urls)
    for url in urls:
        assert str(spider.failures[url]) == BLOCKED_MESSAGE
    assert [p.hits for p in publics] == [1, 1, 1, 1]
    assert internal.hits == 0
    assert ok.hits == 1


@pytest_twisted.ensureDeferred
async def test_crawl_through_proxy_checks_the_target(
    restore_reactor_resolver: None, http_server: Any, second_loopback_is_public: str
) -> None:
    proxy, proxy_port = http_server("127.0.0.1", body=b"via proxy")
    settings = crawl_settings(SCRAPESPY_EGRESS_ALLOW_HOSTS=["127.0.0.1"])

    # The proxy may sit on loopback; a target resolving to loopback may not.
    blocked = ["http://localhost:8080/", "http://2130706433:8080/"]
    fine = f"http://{second_loopback_is_public}:9/"
    crawler = await crawl(
        settings, [*blocked, fine], meta={"proxy": f"http://127.0.0.1:{proxy_port}"}
    )
    spider = crawler.spider
    assert_blocked_subset = {url: spider.failures.get(url) for url in blocked}
    for url, error in assert_blocked_subset.items():
        assert isinstance(error, EgressBlocked), (url, error)
    assert spider.responses == {fine: (200, b"via proxy")}
    assert proxy.hits == 1


@pytest_twisted.ensureDeferred
async def test_crawl_through_unlisted_proxies_is_refused(
    restore_reactor_resolver: None, http_server: Any, second_loopback_is_public: str
) -> None:
    proxy, proxy_port = http_server("127.0.0.1", body=b"via proxy")
    target = f"http://{second_loopback_is_public}:9/"
    # A literal proxy address is refused by the middleware ...
    crawler = await crawl(crawl_settings(), [target], meta={"proxy": f"127.0.0.1:{proxy_port}"})
    assert_blocked(crawler.spider, [target])
    # ... a proxy name by the resolver, when the connection to it is attempted.
    settings = crawl_settings(SCRAPESPY_EGRESS_ALLOW_HOSTS=["127.0.0.1"], RETRY_ENABLED=True)
    crawler = await crawl(settings, [target], meta={"proxy": f"http://localhost:{proxy_port}"})
    assert_blocked(crawler.spider, [target])
    assert proxy.hits == 0
    assert not crawler.stats.get_value("retry/count")


@implementer(IHostnameResolver)
class SilentResolver:
    """Never answers, like a DNS server that has gone away."""

    def resolveHostName(self, resolutionReceiver: Any, hostName: str, *args: Any) -> Any:
        resolution = Resolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)
        return resolution


@pytest_twisted.ensureDeferred
async def test_proxied_target_lookup_times_out(restore_reactor_resolver: None) -> None:
    guard = GuardedResolver(SilentResolver())
    reactor.installNameResolver(guard)
    mw = EgressGuardMiddleware(guard, allow_hosts=["127.0.0.1"], reactor=reactor, dns_timeout=0.05)
    request = Request("http://slow.example/", meta={"proxy": "http://127.0.0.1:3128"})
    with pytest.raises(DNSLookupError, match="timed out"):
        await run_request(mw, request)


@pytest_twisted.ensureDeferred
async def test_middleware_reinstalls_a_replaced_guard() -> None:
    fake = FakeReactor()
    guard = install_guarded_resolver(fake, allow_private=False, allow_hosts=["proxy.internal"])
    assert guard is not None
    mw = EgressGuardMiddleware(guard, allow_hosts=["proxy.internal"], reactor=fake)
    fake.installNameResolver(FakeResolver(TABLE))  # something replaced the guard
    await run_request(mw, Request("http://public.example/"))
    assert isinstance(fake.nameResolver, GuardedResolver)
    assert mw.guard is fake.nameResolver
    assert mw.guard.allow_host is not None and mw.guard.allow_host("proxy.internal")


def test_from_crawler_installs_one_guard_per_reactor(restore_reactor_resolver: None) -> None:
    original = reactor.nameResolver
    first = EgressGuardMiddleware.from_crawler(
        get_crawler(settings_dict={"SCRAPESPY_EGRESS_ALLOW_HOSTS": ["proxy-a.internal"]})
    )
    second = EgressGuardMiddleware.from_crawler(
        get_crawler(settings_dict={"SCRAPESPY_EGRESS_ALLOW_HOSTS": "proxy-b.internal"})
    )
    assert first.guard is second.guard is reactor.nameResolver
    assert first.guard.wrapped is original
    allow = first.guard.allow_host
    assert allow is not None and allow("proxy-a.internal") and allow("proxy-b.internal")
    assert uninstall_guarded_resolver(reactor)
    assert reactor.nameResolver is original
