"""The scrape's deadline on its own: the download gets only the time that is left."""

from __future__ import annotations

import time

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from middlewares.deadline import DeadlineExceeded, DeadlineMiddleware
from service.scrape import scrapy_settings

URL = "http://127.0.0.1:1/page"


def middleware() -> DeadlineMiddleware:
    return build_from_crawler(DeadlineMiddleware, get_crawler())


def test_a_request_without_a_deadline_is_untouched():
    request = Request(URL, meta={"playwright": True})
    assert middleware().process_request(request) is None
    assert "download_timeout" not in request.meta
    assert "playwright_page_goto_kwargs" not in request.meta


def test_the_download_gets_only_the_time_that_is_left():
    request = Request(URL, meta={"scrapespy_deadline": time.monotonic() + 5})
    middleware().process_request(request)
    assert 4 < request.meta["download_timeout"] <= 5


def test_the_browser_navigation_gets_the_time_left_in_milliseconds_and_keeps_its_options():
    goto = {"wait_until": "load", "timeout": 999_999}
    request = Request(
        URL,
        meta={
            "scrapespy_deadline": time.monotonic() + 3,
            "playwright": True,
            "playwright_page_goto_kwargs": goto,
        },
    )
    middleware().process_request(request)
    kwargs = request.meta["playwright_page_goto_kwargs"]
    assert kwargs["wait_until"] == "load"
    assert 2000 < kwargs["timeout"] <= 3000
    assert goto["timeout"] == 999_999  # the caller's dict is not changed under it


def test_a_request_whose_time_is_up_is_refused_and_counted():
    mw = middleware()
    request = Request(URL, meta={"scrapespy_deadline": time.monotonic() - 0.5})
    with pytest.raises(DeadlineExceeded) as refused:
        mw.process_request(request)
    assert isinstance(refused.value, IgnoreRequest)  # the spider's errback, not a retry
    assert "download_timeout" not in request.meta
    assert mw.stats.get_value("scrapespy/deadline/exceeded") == 1


def test_the_wait_for_robots_txt_counts_against_the_deadline():
    order = scrapy_settings.DOWNLOADER_MIDDLEWARES
    robots = order["middlewares.robots.ExpiringRobotsTxtMiddleware"]
    assert robots < order["middlewares.deadline.DeadlineMiddleware"]
