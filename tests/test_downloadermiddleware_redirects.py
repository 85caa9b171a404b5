"""The redirect middleware on its own: what Scrapy follows still follows; a redirect the service
does not follow, or too many, is a RedirectFailed (``redirect_failed``)."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from middlewares.failure_codes import failure_code
from middlewares.redirects import (
    CREDENTIALS,
    MetaRefreshMiddleware,
    RedirectFailed,
    RedirectMiddleware,
)
from service.scrape import scrapy_settings

URL = "http://127.0.0.1:1/start"


def middleware(cls: type[RedirectMiddleware] | type[MetaRefreshMiddleware] = RedirectMiddleware):
    crawler = get_crawler(Spider, {"REDIRECT_MAX_TIMES": scrapy_settings.REDIRECT_MAX_TIMES})
    crawler.spider = crawler._create_spider("redirects")
    return build_from_crawler(cls, crawler)


def redirect(location: str, status: int = 302) -> Response:
    return Response(URL, status=status, headers={"Location": location})


def test_an_http_redirect_is_followed():
    followed = middleware().process_response(Request(URL), redirect("/next"))
    assert isinstance(followed, Request)
    assert followed.url == "http://127.0.0.1:1/next"


@pytest.mark.parametrize(
    ("location", "scheme"),
    [
        ("file:///etc/passwd", "file"),
        ("gopher://127.0.0.1:70/_x", "gopher"),
        ("data:text/html,<title>x</title>", "data"),
        ("javascript:alert(1)", "javascript"),
        ("FTP://example.com/", "ftp"),
    ],
)
def test_a_redirect_to_another_scheme_fails_naming_the_scheme_alone(location, scheme):
    mw = middleware()
    with pytest.raises(RedirectFailed) as info:
        mw.process_response(Request(URL), redirect(location, 307))
    assert str(info.value) == (
        f"the target redirected to a {scheme}: URL, which the service does not follow"
    )
    assert failure_code(info.value) == "redirect_failed"
    assert mw.crawler.stats.get_value("scrapespy/redirects/unfollowable") == 1


def test_a_chain_past_the_limit_fails():
    limit = scrapy_settings.REDIRECT_MAX_TIMES
    mw = middleware()
    request = Request(URL)
    for _ in range(limit):
        followed = mw.process_response(request, redirect(request.url))
        assert isinstance(followed, Request)
        request = followed
    with pytest.raises(RedirectFailed, match=f"more than {limit} times"):
        mw.process_response(request, redirect(URL))


def test_a_request_that_opted_out_keeps_its_3xx():
    response = redirect("file:///etc/passwd")
    for meta in ({"dont_redirect": True}, {"handle_httpstatus_list": [302]}):
        assert middleware().process_response(Request(URL, meta=meta), response) is response


def test_a_3xx_without_location_is_a_page():
    response = Response(URL, status=302)
    assert middleware().process_response(Request(URL), response) is response


def test_a_redirect_to_a_url_with_credentials_fails_without_them():
    with pytest.raises(RedirectFailed) as info:
        middleware().process_response(Request(URL), redirect("http://u:secret@example.com/"))
    assert str(info.value) == CREDENTIALS
    assert "secret" not in str(info.value)


def refresh(target: str, url: str = URL) -> HtmlResponse:
    body = f'<html><head><meta http-equiv="refresh" content="0;url={target}"></head></html>'
    return HtmlResponse(url, body=body.encode())


@pytest.mark.parametrize("target", ["javascript:alert(1)", "http://u:secret@example.com/"])
def test_a_meta_refresh_not_followed_leaves_the_page(target):
    page = refresh(target)
    assert middleware(MetaRefreshMiddleware).process_response(Request(URL), page) is page


def test_a_meta_refresh_loop_fails():
    mw = middleware(MetaRefreshMiddleware)
    request = Request(URL)
    with pytest.raises(RedirectFailed, match="more than"):
        for _ in range(scrapy_settings.REDIRECT_MAX_TIMES + 1):
            request = mw.process_response(request, refresh(URL, request.url))


# A redirect keeps the Referer as a browser does (strict-origin-when-cross-origin by default).
PAGE = "https://shop.example/list?page=2"


def followed_with_referer(location: str, referer: str | None = PAGE, **headers: str) -> Request:
    sent = Request("https://shop.example/go", headers={"Referer": referer} if referer else {})
    response = Response(sent.url, status=302, headers={"Location": location, **headers})
    followed = middleware().process_response(sent, response)
    assert isinstance(followed, Request)
    return followed


def test_a_same_origin_redirect_keeps_the_whole_referer():
    assert followed_with_referer("/next").headers.get("Referer") == PAGE.encode()


def test_a_cross_origin_redirect_keeps_the_referers_origin_alone():
    followed = followed_with_referer("https://other.example/x")
    assert followed.headers.get("Referer") == b"https://shop.example/"


def test_a_redirect_to_plain_http_sends_no_referer():
    assert "Referer" not in followed_with_referer("http://shop.example/next").headers


def test_the_redirects_referrer_policy_is_followed():
    followed = followed_with_referer("/next", **{"Referrer-Policy": "bogus, no-referrer"})
    assert "Referer" not in followed.headers


def test_a_request_without_a_referer_gets_none_on_its_redirect():
    assert "Referer" not in followed_with_referer("/next", referer=None).headers


def test_the_first_referer_is_kept_through_the_chain():
    mw = middleware()
    request = Request("https://shop.example/a", headers={"Referer": PAGE})
    for location in ("https://other.example/b", "https://shop.example/c"):
        response = Response(request.url, status=302, headers={"Location": location})
        request = mw.process_response(request, response)
    # back on the first origin: the whole referrer again, not the origin the middle hop saw
    assert request.headers.get("Referer") == PAGE.encode()


def test_a_meta_refresh_sends_its_page_as_the_referer():
    page = HtmlResponse(
        "https://shop.example/wait?id=7",
        body=b'<meta http-equiv="refresh" content="0; url=/done">',
        headers={"Content-Type": "text/html"},
    )
    followed = middleware(MetaRefreshMiddleware).process_response(Request(page.url), page)
    assert isinstance(followed, Request)
    assert followed.headers.get("Referer") == b"https://shop.example/wait?id=7"
