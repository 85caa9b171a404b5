"""The decompression middleware on its own: a body that grows past DOWNLOAD_MAXSIZE is a
ResponseTooLarge (``too_large``) that says so in words; a small one is decompressed."""

from __future__ import annotations

import gzip

import pytest
from scrapy import Request
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from middlewares.decompression import DecompressionMiddleware, ResponseTooLarge
from middlewares.failure_codes import failure_code

URL = "http://127.0.0.1:1/page"
LIMIT = 64 * 1024


def middleware() -> DecompressionMiddleware:
    return build_from_crawler(
        DecompressionMiddleware, get_crawler(settings_dict={"DOWNLOAD_MAXSIZE": LIMIT})
    )


def gzipped(body: bytes) -> Response:
    return Response(URL, body=gzip.compress(body), headers={"Content-Encoding": "gzip"})


def test_a_small_body_is_decompressed():
    response = middleware().process_response(Request(URL), gzipped(b"hello"))
    assert response.body == b"hello"


def test_a_bomb_is_too_large_in_words():
    mw = middleware()
    with pytest.raises(ResponseTooLarge) as info:
        mw.process_response(Request(URL), gzipped(b"\0" * (LIMIT * 8)))
    assert str(info.value) == (
        f"the page is larger than the download limit of {LIMIT} bytes once decompressed"
    )
    assert failure_code(info.value) == "too_large"
    assert mw.stats is not None
    assert mw.stats.get_value("scrapespy/decompression/too_large") == 1


def test_a_request_s_own_limit_is_the_one_named():
    with pytest.raises(ResponseTooLarge, match="limit of 1000 bytes"):
        middleware().process_response(
            Request(URL, meta={"download_maxsize": 1000}), gzipped(b"\0" * 5000)
        )
