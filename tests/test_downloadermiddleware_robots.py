"""The expiring robots.txt cache on its own: a stand-in engine serves each site's robots.txt."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import TextResponse
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater

from middlewares.robots import ExpiringRobotsTxtMiddleware
from service.scrape.scrapy_settings import default_settings

NO_PRIVATE = b"User-agent: *\nDisallow: /private\n"
ALL_ALLOWED = b"User-agent: *\nDisallow:\n"


class Engine:
    """Answers robots.txt downloads from ``robots`` (by host); a host in ``slow`` gets its answer
    only when the test fires that host's Deferred."""

    def __init__(self, robots: dict[str, bytes] | None = None) -> None:
        self.robots = robots or {}
        self.slow: dict[str, Deferred[None]] = {}
        self.downloads: list[str] = []

    async def download_async(self, request: Request) -> TextResponse:
        self.downloads.append(request.url)
        host = urlsplit(request.url).netloc
        if host in self.slow:
            await maybe_deferred_to_future(self.slow[host])
        return TextResponse(request.url, body=self.robots.get(host, NO_PRIVATE), request=request)


def middleware(engine: Engine, **settings: Any) -> ExpiringRobotsTxtMiddleware:
    crawler = get_crawler(settings_dict={**default_settings(), "ROBOTSTXT_OBEY": True, **settings})
    crawler.engine = engine  # type: ignore[assignment]
    return build_from_crawler(ExpiringRobotsTxtMiddleware, crawler)


def check(mw: ExpiringRobotsTxtMiddleware, url: str, **meta: Any) -> Deferred[None]:
    return deferred_from_coro(mw.process_request(Request(url, meta=meta)))


async def refused(mw: ExpiringRobotsTxtMiddleware, url: str, **meta: Any) -> bool:
    try:
        await check(mw, url, **meta)
    except IgnoreRequest:
        return True
    return False


def sleep(seconds: float) -> Deferred[None]:
    return deferLater(reactor, seconds, lambda: None)


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Fail with TimeoutError rather than hang: the reactor thread may be spinning."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_not_configured_when_robots_txt_is_not_obeyed():
    with pytest.raises(NotConfigured):
        build_from_crawler(
            ExpiringRobotsTxtMiddleware,
            get_crawler(settings_dict={**default_settings(), "ROBOTSTXT_OBEY": False}),
        )


@pytest_twisted.ensureDeferred
async def test_a_site_robots_txt_is_fetched_once_and_obeyed():
    engine = Engine()
    mw = middleware(engine)
    assert await refused(mw, "http://a.example/private/1")
    assert not await refused(mw, "http://a.example/public")
    assert await refused(mw, "http://a.example/private/2")
    assert engine.downloads == ["http://a.example/robots.txt"]
    assert mw.crawler.stats.get_value("robotstxt/forbidden") == 2


@pytest_twisted.ensureDeferred
async def test_a_request_that_opts_out_is_not_checked():
    engine = Engine()
    mw = middleware(engine)
    assert not await refused(mw, "http://a.example/private/1", dont_obey_robotstxt=True)
    assert engine.downloads == []


@pytest_twisted.ensureDeferred
async def test_a_site_robots_txt_is_fetched_again_once_its_ttl_is_over():
    engine = Engine()
    mw = middleware(engine, SCRAPESPY_ROBOTS_TTL_SECONDS=0.3)
    assert await refused(mw, "http://a.example/private/1")
    engine.robots["a.example"] = ALL_ALLOWED  # the site changes its rules
    assert await refused(mw, "http://a.example/private/2")  # remembered within the TTL
    assert len(engine.downloads) == 1
    await sleep(0.4)
    assert not await refused(mw, "http://a.example/private/3")
    assert len(engine.downloads) == 2
    assert mw.crawler.stats.get_value("scrapespy/robots/expired") == 1


@pytest_twisted.ensureDeferred
async def test_the_cache_keeps_at_most_max_sites_forgetting_the_oldest():
    engine = Engine()
    mw = middleware(engine, SCRAPESPY_ROBOTS_MAX_SITES=2)
    for host in ("a", "b", "c"):
        await check(mw, f"http://{host}.example/")
    assert len(mw._parsers) == 2
    await check(mw, "http://c.example/again")  # remembered
    await check(mw, "http://a.example/again")  # forgotten: fetched again, b goes
    await check(mw, "http://c.example/again")
    assert [urlsplit(url).netloc for url in engine.downloads] == [
        "a.example",
        "b.example",
        "c.example",
        "a.example",
    ]
    assert set(mw._parsers) == {"a.example", "c.example"}


@pytest_twisted.ensureDeferred
async def test_sites_still_fetching_robots_txt_do_not_spin_the_reactor_and_get_answers():
    engine = Engine({"b.example": ALL_ALLOWED})
    engine.slow = {"a.example": Deferred(), "b.example": Deferred()}
    mw = middleware(engine, SCRAPESPY_ROBOTS_MAX_SITES=1)
    with bounded(5):
        first = check(mw, "http://a.example/private/1")
        waiting = check(mw, "http://a.example/private/2")
        await sleep(0.05)  # a's robots.txt is on its way and fills the cache
        second = check(mw, "http://b.example/private/1")
        await sleep(0.05)  # with the cache full of sites still fetching, b needs room too
    assert engine.downloads == ["http://a.example/robots.txt", "http://b.example/robots.txt"]
    engine.slow["b.example"].callback(None)
    assert await second is None
    engine.slow["a.example"].callback(None)
    for answer in (first, waiting):
        with pytest.raises(IgnoreRequest):
            await answer
    # once the fetches are in, the cache is back within its cap
    await check(mw, "http://c.example/")
    assert set(mw._parsers) == {"c.example"}
