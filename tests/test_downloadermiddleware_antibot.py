"""middlewares/antibot.py: detection quality over the fixture corpus, and the middleware."""

from __future__ import annotations

import inspect
import json
import timeit
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Headers, HtmlResponse, Response, TextResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from middlewares.antibot import AntiBotMiddleware
from service.antibot import VENDORS, detect_block
from service.antibot import detector as antibot
from service.scrape.meta import BLOCK_REASON
from service.scrape.scrapy_settings import default_settings

CORPUS = Path(__file__).parent / "antibot_corpus"
MANIFEST: dict[str, dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text())
URL = "https://www.example.com/page"


def load(path: str) -> tuple[int, dict[str, Any], bytes]:
    entry = MANIFEST[path]
    return entry["status"], entry["headers"], (CORPUS / path).read_bytes()


# --------------------------------------------------------------------------- corpus


def test_manifest_covers_every_fixture() -> None:
    on_disk = {
        f"{kind}/{p.name}" for kind in ("blocked", "clean") for p in (CORPUS / kind).iterdir()
    }
    assert on_disk == set(MANIFEST)
    for path, entry in MANIFEST.items():
        assert set(entry) == {"status", "headers", "expect"}, path
        assert isinstance(entry["status"], int), path
        assert "content-type" in {k.lower() for k in entry["headers"]}, path
        kind, name = path.split("/")
        if kind == "clean":
            assert entry["expect"] is None, path
        else:
            assert entry["expect"] == name.split("__")[0], path
            assert entry["expect"] in VENDORS, path


def test_corpus_size() -> None:
    per_vendor = Counter(e["expect"] for e in MANIFEST.values() if e["expect"] is not None)
    clean = sum(1 for e in MANIFEST.values() if e["expect"] is None)
    assert set(per_vendor) == set(VENDORS)
    assert min(per_vendor.values()) >= 2, per_vendor
    assert sum(per_vendor.values()) >= 25
    assert clean >= 15


def test_corpus_precision_and_recall() -> None:
    tp = fp = fn = tn = 0
    wrong_vendor: list[str] = []
    for path in sorted(MANIFEST):
        status, headers, body = load(path)
        expected = MANIFEST[path]["expect"]
        got = detect_block(status, headers, body)
        if expected is None:
            if got is None:
                tn += 1
            else:
                fp += 1
                wrong_vendor.append(f"{path}: expected clean, got {got}")
        elif got is None:
            fn += 1
            wrong_vendor.append(f"{path}: expected {expected}, got clean")
        else:
            tp += 1
            if got != expected:
                wrong_vendor.append(f"{path}: expected {expected}, got {got}")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    print(
        f"\nantibot corpus: {tp + fn} blocked, {tn + fp} clean; "
        f"TP={tp} FP={fp} FN={fn} TN={tn}; precision={precision:.3f} recall={recall:.3f}"
    )
    assert wrong_vendor == []
    assert precision == 1.0
    assert recall == 1.0


@pytest.mark.parametrize("path", sorted(MANIFEST))
def test_fixture_verdict(path: str) -> None:
    status, headers, body = load(path)
    assert detect_block(status, headers, body) == MANIFEST[path]["expect"]


@pytest.mark.parametrize("path", sorted(p for p in MANIFEST if p.startswith("clean/")))
def test_clean_fixture_stays_clean_on_a_challenge_status(path: str) -> None:
    # The status code alone never makes a block; the page must also look like one. (Only
    # the Content-Type is kept: x-kpsdk-* on a 429, say, is a decisive header signal.)
    _, headers, body = load(path)
    headers = {"Content-Type": headers["content-type"]}
    for status in (403, 429, 503):
        assert detect_block(status, headers, body) is None, status


# --------------------------------------------------------------------------- detect_block


def test_headers_any_case_and_shape() -> None:
    assert detect_block(403, {"CF-Mitigated": "challenge"}, b"") == "cloudflare"
    assert detect_block(403, Headers({"Cf-Mitigated": "challenge"}), b"") == "cloudflare"
    assert detect_block(405, {b"X-Amzn-Waf-Action": [b"captcha"]}, b"") == "aws_waf"
    assert detect_block(202, {"x-amzn-waf-action": ["challenge"]}, b"") == "aws_waf"
    assert detect_block(403, {"X-DD-B": "2"}, b"") == "datadome"
    assert detect_block(429, Headers({"X-Kpsdk-Ct": "abc"}), b"") == "kasada"
    assert detect_block(403, {"X-Sucuri-Block": "BNP005"}, b"") == "sucuri"


def test_header_markers_of_ordinary_responses_are_not_blocks() -> None:
    body = (CORPUS / "clean/cloudflare_served_news.html").read_bytes()
    for headers in (
        {"server": "cloudflare", "cf-ray": "8d0b5e2f4c6a1937-FRA"},
        {"x-datadome": "protected"},
        {"x-kpsdk-ct": "0a1B2c3D", "x-kpsdk-r": "1-AAAA"},
        {"x-iinfo": "13-55554444-55554445 NNNN", "set-cookie": "visid_incap_1=abc; path=/"},
        {"x-sucuri-id": "16010", "server": "Sucuri/Cloudproxy"},
        {"server": "AkamaiGHost"},
    ):
        assert detect_block(200, headers, body) is None, headers
        assert detect_block(200, headers, b"") is None, headers


def test_widget_inside_a_real_form_is_not_a_wall_but_alone_it_is() -> None:
    widget = b'<div class="g-recaptcha" data-sitekey="6Lc-test"></div>'
    script = b'<script src="https://www.google.com/recaptcha/api.js" async defer></script>'
    wall = b"<html><head>" + script + b"</head><body><h1>Security check</h1><form>" + widget
    wall += b"</form></body></html>"
    assert detect_block(200, {"content-type": "text/html"}, wall) == "recaptcha"
    login = wall.replace(b"<form>", b'<form><input type="password" name="pw">')
    assert detect_block(200, {"content-type": "text/html"}, login) is None
    invisible = wall.replace(b"data-sitekey", b'data-size="invisible" data-sitekey')
    assert detect_block(200, {"content-type": "text/html"}, invisible) is None


def test_widget_named_only_in_an_inline_script_is_not_a_wall() -> None:
    spa = (
        b'<!doctype html><html><head><script>window.__CONFIG__={"captchaClass":"g-recaptcha",'
        b'"turnstileClass":"cf-turnstile"}</script></head><body><div id="root"></div>'
        b"</body></html>"
    )
    assert detect_block(200, {"content-type": "text/html"}, spa) is None


def test_challenge_source_served_as_text_is_not_a_block() -> None:
    _, _, challenge = load("blocked/cloudflare__managed_challenge.html")
    for content_type in ("text/plain", "application/javascript", "text/xml"):
        assert detect_block(403, {"content-type": content_type}, challenge) is None
    assert detect_block(403, {"content-type": "text/html"}, challenge) == "cloudflare"
    assert detect_block(403, {}, challenge) == "cloudflare"  # untyped: judged as HTML


def test_binary_content_type_skips_the_body_but_not_the_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, _, challenge = load("blocked/cloudflare__managed_challenge.html")

    def must_not_scan(*args: Any) -> None:
        raise AssertionError("a binary body was scanned")

    monkeypatch.setattr(antibot, "_many_links", must_not_scan)
    monkeypatch.setattr(antibot, "_detect_from_body", must_not_scan)
    for content_type in ("image/png", "application/pdf", "video/mp4", "application/zip"):
        assert detect_block(403, {"Content-Type": content_type}, challenge) is None
        headers = {"Content-Type": content_type, "cf-mitigated": "challenge"}
        assert detect_block(403, headers, challenge) == "cloudflare"
    # no Content-Type, but a PNG signature
    assert detect_block(403, {}, b"\x89PNG\r\n\x1a\n" + challenge) is None


def test_empty_body() -> None:
    assert detect_block(403, {"content-type": "text/html"}, b"") is None


# --------------------------------------------------------------------------- middleware


@pytest.fixture
def crawler() -> Crawler:
    return get_crawler(settings_dict={**default_settings(), "SCRAPESPY_ANTIBOT_ENABLED": True})


@pytest.fixture
def mw(crawler: Crawler) -> AntiBotMiddleware:
    return build_from_crawler(AntiBotMiddleware, crawler)


def stat(crawler: Crawler, key: str) -> Any:
    assert crawler.stats is not None
    return crawler.stats.get_value(key)


def html_response(path: str, request: Request) -> HtmlResponse:
    status, headers, body = load(path)
    return HtmlResponse(url=request.url, status=status, headers=headers, body=body, request=request)


def test_blocked_response_is_annotated_and_counted(crawler: Crawler, mw: AntiBotMiddleware) -> None:
    request = Request(URL)
    response = html_response("blocked/datadome__captcha_interstitial.html", request)
    body, status = response.body, response.status
    result = mw.process_response(request, response)
    assert result is response
    assert result.body == body
    assert result.status == status
    assert request.meta[BLOCK_REASON] == "datadome"
    assert response.meta is request.meta
    assert response.meta["scrapespy_block_reason"] == "datadome"
    assert stat(crawler, "scrapespy/antibot/blocked") == 1
    assert stat(crawler, "scrapespy/antibot/blocked/datadome") == 1

    request2 = Request(URL + "?2")
    mw.process_response(request2, html_response("blocked/akamai__access_denied.html", request2))
    assert request2.meta[BLOCK_REASON] == "akamai"
    assert stat(crawler, "scrapespy/antibot/blocked") == 2
    assert stat(crawler, "scrapespy/antibot/blocked/akamai") == 1


def test_clean_response_is_left_alone(crawler: Crawler, mw: AntiBotMiddleware) -> None:
    request = Request(URL)
    response = html_response("clean/contact_form_recaptcha.html", request)
    assert mw.process_response(request, response) is response
    assert BLOCK_REASON not in response.meta
    assert stat(crawler, "scrapespy/antibot/blocked") is None


def test_stale_reason_from_an_earlier_attempt_is_cleared(mw: AntiBotMiddleware) -> None:
    request = Request(URL, meta={BLOCK_REASON: "cloudflare"})  # e.g. a retry copied the meta
    response = html_response("clean/cloudflare_served_news.html", request)
    assert mw.process_response(request, response) is response
    assert BLOCK_REASON not in request.meta


def test_binary_response_is_not_body_scanned(
    crawler: Crawler, mw: AntiBotMiddleware, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, challenge = load("blocked/cloudflare__managed_challenge.html")
    calls: list[object] = []
    monkeypatch.setattr(antibot, "_many_links", lambda *a: calls.append(a))
    monkeypatch.setattr(antibot, "_detect_from_body", lambda *a: calls.append(a))
    request = Request(URL + "/logo.png")
    response = Response(
        request.url,
        status=403,
        headers={"Content-Type": "image/png"},
        body=challenge,
        request=request,
    )
    assert mw.process_response(request, response) is response
    assert calls == []
    assert BLOCK_REASON not in request.meta

    request = Request(URL + "/report.pdf")
    response = Response(
        request.url,
        status=403,
        request=request,
        body=b"%PDF-1.7 ...",
        headers={"Content-Type": "application/pdf", "cf-mitigated": "challenge"},
    )
    assert mw.process_response(request, response) is response
    assert request.meta[BLOCK_REASON] == "cloudflare"
    assert calls == []
    assert stat(crawler, "scrapespy/antibot/blocked/cloudflare") == 1


def test_text_response_that_is_not_html(mw: AntiBotMiddleware) -> None:
    request = Request(URL + "/api")
    status, headers, body = load("blocked/perimeterx__json_xhr.html")
    response = TextResponse(request.url, status=status, headers=headers, body=body, request=request)
    assert mw.process_response(request, response) is response
    assert request.meta[BLOCK_REASON] == "perimeterx"


def test_not_configured_when_disabled() -> None:
    crawler = get_crawler(settings_dict={**default_settings(), "SCRAPESPY_ANTIBOT_ENABLED": False})
    with pytest.raises(NotConfigured):
        build_from_crawler(AntiBotMiddleware, crawler)


def test_enabled_by_default() -> None:
    assert isinstance(
        build_from_crawler(AntiBotMiddleware, get_crawler(settings_dict=default_settings())),
        AntiBotMiddleware,
    )


def test_spider_argument_is_optional(mw: AntiBotMiddleware) -> None:
    parameter = inspect.signature(mw.process_response).parameters["spider"]
    assert parameter.default is None  # Scrapy 2.13+ calls it without one, and won't warn
    request = Request(URL)
    response = html_response("blocked/kasada__ips_429.html", request)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mw.process_response(request, response, None) is response
    assert request.meta[BLOCK_REASON] == "kasada"


# --------------------------------------------------------------------------- cost


def _article_33kb(max_links: int | None = None) -> bytes:
    """The Cloudflare-served news fixture, its paragraphs repeated up to 33 KB."""
    page = (CORPUS / "clean/cloudflare_served_news.html").read_bytes()
    start, end = page.index(b"<p>The city council"), page.index(b"<p>Residents can")
    paragraphs = page[start:end]
    chunks = [page[:end]]
    while sum(map(len, chunks)) + len(paragraphs) + len(page) - end <= 33 * 1024:
        chunks.append(paragraphs)
    body = b"".join(chunks) + page[end:]
    if max_links is not None:  # the same article with few links: no early exit on links
        head, *rest = body.split(b"<a ")
        body = head + b"".join(
            (b"<a " if i < max_links else b"<span ") + part for i, part in enumerate(rest)
        )
    return body


@pytest.mark.parametrize("max_links", [None, 10])
def test_cost_per_call_is_reported(max_links: int | None) -> None:
    body = _article_33kb(max_links)
    headers = Headers(MANIFEST["clean/cloudflare_served_news.html"]["headers"])
    assert detect_block(200, headers, body) is None
    runs = 2000
    seconds = min(timeit.repeat(lambda: detect_block(200, headers, body), number=runs, repeat=3))
    links = "all links" if max_links is None else f"{max_links} links"
    print(
        f"\ndetect_block on a {len(body) / 1024:.1f} KB article ({links}): "
        f"{seconds / runs * 1e6:.1f} µs/call"
    )
