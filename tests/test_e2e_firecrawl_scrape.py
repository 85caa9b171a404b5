"""End to end: Firecrawl's scrape (``/v2/scrape``, ``/v1/scrape``) through the real service, with
the real clients people use: firecrawl-py's v2 and v1 clients and LangChain's loader, in this
process, against real local target pages."""

from __future__ import annotations

import base64
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import requests
from firecrawl import Firecrawl, V1FirecrawlApp
from firecrawl.v2.utils.error_handler import (
    BadRequestError,
    FirecrawlError,
    PaymentRequiredError,
    UnauthorizedError,
)
from langchain_community.document_loaders import FireCrawlLoader

from harness.service import Accounts
from harness.site import TargetSite
from tests.test_e2e_formats import ARTICLE, BODY, BOILERPLATE

STATIC_PRICE, JS_PRICE = 1, 5
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

META_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Harbour tides</title>
<meta name="description" content="When the harbour floods">
<meta name="keywords" content="tides, harbour">
<meta name="robots" content="index, follow">
<meta property="og:title" content="Harbour tides (OG)">
<meta property="og:site_name" content="Harbour Gazette">
<meta name="twitter:card" content="summary">
</head><body><main><h1>Harbour tides</h1>
<p>The harbour floods twice a year when the spring tides meet a westerly gale.</p>
<a href="/tides/next">Next tides</a> <a href="https://example.org/almanac">Almanac</a>
</main></body></html>"""

MISSING_PAGE = """<!doctype html><html lang="en"><head><title>Page not found</title></head>
<body><main><h1>Page not found</h1><p>The tide tables moved to the harbour office.</p></main>
</body></html>"""

FORM_PAGE = """<!doctype html><html><head><title>Form</title></head><body>
<input id="name" placeholder="your name">
<button id="greet" onclick="document.getElementById('out').textContent =
  'Hello, ' + document.getElementById('name').value">Greet</button>
<p id="out">nobody greeted</p>
</body></html>"""


def not_found(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    return 404, {"Content-Type": "text/html; charset=utf-8"}, MISSING_PAGE.encode()


def shows_headers(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """Prints the request's X-Greeting and Accept-Language headers."""
    sent = handler.headers
    body = (
        "<html><head><title>Headers</title></head><body><main>"
        f"<p>greeting: {sent.get('X-Greeting', 'none')}</p>"
        f"<p>languages: {sent.get('Accept-Language', 'none')}</p></main></body></html>"
    )
    return 200, {"Content-Type": "text/html; charset=utf-8"}, body.encode()


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.page("/fc/article", ARTICLE)
    site.page("/fc/meta", META_PAGE)
    site.page("/fc/form", FORM_PAGE)
    site.page("/fc/paid", META_PAGE)
    site.page("/fc/cached", META_PAGE)
    site.routes["/fc/headers"] = shows_headers
    site.routes["/fc/missing"] = not_found
    return site


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


def firecrawl(service: Any, key: str) -> Firecrawl:
    return Firecrawl(api_key=key, api_url=service.url(""), max_retries=1)


def balance(accounts: Accounts, account_id: int) -> int:
    return int(accounts.summary(account_id)["balance"])


def unreachable_url() -> str:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    return f"http://127.0.0.1:{port}/gone"


def test_v2_scrape_gives_the_article_as_markdown_without_boilerplate_billed_as_native(
    service, pages, accounts, paying
):
    account_id, key = paying
    doc = firecrawl(service, key).scrape(pages.url("/fc/article"))
    for sentence in BODY:
        assert sentence in doc.markdown
    for marker in BOILERPLATE.values():
        assert marker not in doc.markdown
    assert doc.html is None and doc.links is None  # only markdown by default
    assert doc.metadata.source_url == pages.url("/fc/article")
    assert doc.metadata.status_code == 200
    assert doc.metadata.credits_used == STATIC_PRICE
    assert doc.metadata.cache_state == "miss"
    assert doc.metadata.proxy_used == "basic"
    assert balance(accounts, account_id) == 100 - STATIC_PRICE
    assert accounts.entries_sum(account_id) == 100 - STATIC_PRICE


def test_v2_formats_links_html_raw_html_and_the_metadata_firecrawl_names(service, pages, paying):
    _, key = paying
    doc = firecrawl(service, key).scrape(
        pages.url("/fc/meta"), formats=["markdown", "html", "rawHtml", "links"]
    )
    assert "spring tides meet a westerly gale" in doc.markdown
    assert doc.html.startswith("<h1>Harbour tides</h1>")
    assert '<meta name="robots" content="index, follow">' in doc.raw_html
    assert doc.links == [pages.url("/tides/next"), "https://example.org/almanac"]
    metadata = doc.metadata
    assert metadata.title == "Harbour tides"
    assert metadata.description == "When the harbour floods"
    assert metadata.keywords == "tides, harbour"
    assert metadata.robots == "index, follow"
    assert metadata.og_title == "Harbour tides (OG)"
    assert metadata.og_site_name == "Harbour Gazette"
    assert metadata.extras["twitter:card"] == "summary"
    assert metadata.url == pages.url("/fc/meta")
    assert metadata.language == "en"  # <html lang>, as Firecrawl's extractMetadata reads it
    assert metadata.error is None


def test_the_sdks_default_max_age_answers_a_repeat_from_the_cache_marked_and_free(
    service, pages, accounts, paying
):
    account_id, key = paying
    app = firecrawl(service, key)
    first = app.scrape(pages.url("/fc/cached"), formats=["markdown"])  # the SDK sends maxAge
    again = app.scrape(pages.url("/fc/cached"), formats=["markdown"])
    assert pages.count("/fc/cached") == 1
    assert again.markdown == first.markdown
    assert (first.metadata.cache_state, first.metadata.credits_used) == ("miss", STATIC_PRICE)
    assert (again.metadata.cache_state, again.metadata.credits_used) == ("hit", 0)
    fresh = app.scrape(pages.url("/fc/cached"), formats=["markdown"], max_age=0)
    assert pages.count("/fc/cached") == 2 and fresh.metadata.cache_state == "miss"
    assert balance(accounts, account_id) == 100 - 2 * STATIC_PRICE


def test_headers_and_location_languages_reach_the_site(service, pages, paying):
    _, key = paying
    doc = firecrawl(service, key).scrape(
        pages.url("/fc/headers"),
        headers={"X-Greeting": "ahoy"},
        location={"languages": ["fr-FR", "en"]},
    )
    assert "greeting: ahoy" in doc.markdown
    assert "languages: fr-FR, en;q=0.9" in doc.markdown


def test_a_bad_key_is_unauthorized_and_a_key_without_credits_payment_required(
    service, pages, accounts
):
    with pytest.raises(UnauthorizedError) as bad:
        firecrawl(service, "spy_" + "x" * 40).scrape(pages.url("/fc/meta"))
    assert bad.value.status_code == 401 and "API key" in str(bad.value)
    _, broke = accounts.create(credits=0)
    with pytest.raises(PaymentRequiredError) as poor:
        firecrawl(service, broke).scrape(pages.url("/fc/paid"))
    assert poor.value.status_code == 402 and "credits" in str(poor.value)
    assert pages.count("/fc/paid") == 0


def test_a_format_that_needs_a_language_model_is_a_bad_request_naming_it(
    service, pages, accounts, paying
):
    """Without the operator's model (SCRAPESPY_LLM_BASE_URL); with one: tests/test_e2e_llm.py."""
    account_id, key = paying
    with pytest.raises(BadRequestError) as refused:
        firecrawl(service, key).scrape(
            pages.url("/fc/meta"), formats=[{"type": "json", "prompt": "the tides"}]
        )
    assert "json.prompt needs a language model endpoint" in str(refused.value)
    with pytest.raises(BadRequestError) as refused:
        firecrawl(service, key).scrape(pages.url("/fc/meta"), formats=["summary"])
    assert '"summary" needs a language model endpoint' in str(refused.value)
    with pytest.raises(BadRequestError) as refused:
        firecrawl(service, key).scrape(pages.url("/fc/meta"), formats=[{"type": "branding"}])
    assert "'branding' format" in str(refused.value)
    assert balance(accounts, account_id) == 100


def test_an_unknown_field_is_a_400_naming_it_and_x_api_key_authenticates(service, pages, paying):
    _, key = paying
    url = service.url("/v2/scrape")
    reply = requests.post(url, json={"url": pages.url("/fc/meta"), "sparkle": 1}, timeout=30)
    assert reply.status_code == 400
    assert reply.json() == {"error": "unknown field 'sparkle'"}
    too_long = {"url": pages.url("/fc/meta"), "timeout": 180_000}
    reply = requests.post(url, json=too_long, headers={"X-API-Key": key}, timeout=30)
    assert reply.status_code == 400 and "'timeout'" in reply.json()["error"]
    reply = requests.post(url, json={"url": "ftp://x"}, headers={"X-API-Key": key}, timeout=30)
    assert reply.status_code == 400 and "'url'" in reply.json()["error"]
    reply = requests.post(url, json={"url": pages.url("/fc/meta")}, headers={"X-API-Key": key})
    assert reply.headers["X-Credits-Charged"] == str(STATIC_PRICE)
    assert reply.status_code == 200 and reply.json()["success"] is True


def test_a_scrape_that_fails_at_the_target_is_success_false_and_unbilled(service, accounts, paying):
    account_id, key = paying
    gone = unreachable_url()
    reply = requests.post(
        service.url("/v2/scrape"),
        json={"url": gone},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    body = reply.json()
    assert reply.status_code == 200 and body["success"] is False
    assert body["error"] and body["data"]["metadata"]["error"] == body["error"]
    assert body["data"]["metadata"]["sourceURL"] == gone
    assert body["data"]["metadata"]["creditsUsed"] == 0
    with pytest.raises(FirecrawlError):
        firecrawl(service, key).scrape(gone)
    assert balance(accounts, account_id) == 100


def test_a_target_answering_404_is_a_document_with_its_status_and_unbilled(
    service, pages, accounts, paying
):
    """Firecrawl's scrapeURL takes a 4xx or 5xx page as its result: the clients get the page's
    document, its status in metadata.statusCode; scrapespy bills it nothing."""
    account_id, key = paying
    missing = pages.url("/fc/missing")
    doc = firecrawl(service, key).scrape(missing, formats=["markdown", "html"])
    assert doc.metadata.status_code == 404
    assert doc.metadata.source_url == missing
    assert doc.metadata.title == "Page not found"
    assert "The tide tables moved to the harbour office." in doc.markdown
    assert "<h1>Page not found</h1>" in doc.html
    assert doc.metadata.credits_used == 0
    assert doc.metadata.error == "the target answered HTTP 404"

    answer = V1FirecrawlApp(api_key=key, api_url=service.url("")).scrape_url(missing)
    assert answer.success is True and answer.metadata["statusCode"] == 404
    assert "The tide tables moved" in answer.markdown
    reply = requests.post(
        service.url("/v1/scrape"),
        json={"url": missing},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert reply.status_code == 200 and reply.json()["success"] is True
    assert reply.json()["data"]["metadata"]["statusCode"] == 404
    assert reply.headers["X-Credits-Charged"] == "0"

    native = requests.post(
        service.url("/scrape"), json={"url": missing}, headers={"X-API-Key": key}, timeout=60
    )
    assert native.status_code == 200 and native.json()["success"] is False
    assert native.json()["error_code"] == "http_error"
    assert balance(accounts, account_id) == 100
    assert accounts.entries_sum(account_id) == 100


def test_refused_endpoints_name_themselves(service, paying):
    _, key = paying
    with pytest.raises(BadRequestError) as search:  # no search backend on this instance
        firecrawl(service, key).search("tides")
    assert "search is not configured on this server" in str(search.value)
    refused = (("POST", "/v1/extract"), ("GET", "/v2/extract/abc"), ("POST", "/v2/agent"))
    for method, path in refused:
        reply = requests.request(method, service.url(path), json={}, timeout=30)
        assert reply.status_code == 400, path
        assert "is not offered by this server" in reply.json()["error"]


def test_v1_client_scrape_url_gives_markdown_and_metadata(service, pages, accounts, paying):
    account_id, key = paying
    app = V1FirecrawlApp(api_key=key, api_url=service.url(""))
    answer = app.scrape_url(pages.url("/fc/meta"), formats=["markdown", "links"])
    assert "spring tides meet a westerly gale" in answer.markdown
    assert pages.url("/tides/next") in answer.links
    assert answer.metadata["title"] == "Harbour tides"
    assert answer.metadata["sourceURL"] == pages.url("/fc/meta")
    assert answer.metadata["creditsUsed"] == STATIC_PRICE
    assert balance(accounts, account_id) == 100 - STATIC_PRICE


def test_langchain_loader_in_scrape_mode_gives_the_article(service, pages, paying):
    _, key = paying
    loader = FireCrawlLoader(
        url=pages.url("/fc/article"), api_key=key, api_url=service.url(""), mode="scrape"
    )
    (page,) = loader.load()
    for sentence in BODY:
        assert sentence in page.page_content
    assert "Footer copyright" not in page.page_content
    assert page.metadata["source_url"] == pages.url("/fc/article")
    assert page.metadata["title"] == "Tidal power in the Severn"


@pytest.mark.browser
def test_screenshot_is_a_png_data_url_billed_at_the_js_price(service, pages, accounts, paying):
    account_id, key = paying
    doc = firecrawl(service, key).scrape(
        pages.url("/fc/meta"), formats=["markdown", {"type": "screenshot", "fullPage": True}]
    )
    prefix = "data:image/png;base64,"
    assert doc.screenshot.startswith(prefix)
    assert base64.b64decode(doc.screenshot[len(prefix) :]).startswith(PNG_SIGNATURE)
    assert doc.metadata.credits_used == JS_PRICE
    assert balance(accounts, account_id) == 100 - JS_PRICE


@pytest.mark.browser
def test_actions_click_write_screenshot_and_javascript_act_on_the_page(service, pages, paying):
    _, key = paying
    doc = firecrawl(service, key).scrape(
        pages.url("/fc/form"),
        formats=["markdown"],
        actions=[
            {"type": "click", "selector": "#name"},
            {"type": "write", "text": "Ada"},
            {"type": "click", "selector": "#greet"},
            {"type": "wait", "milliseconds": 100},
            {"type": "screenshot"},
            {"type": "executeJavascript", "script": "document.getElementById('out').textContent"},
            {"type": "executeJavascript", "script": "const n = 2; return n * 21;"},
            {"type": "scrape"},
        ],
    )
    assert "Hello, Ada" in doc.markdown
    actions = doc.actions
    (shot,) = actions["screenshots"]
    assert base64.b64decode(shot.split(",", 1)[1]).startswith(PNG_SIGNATURE)
    assert actions["javascriptReturns"] == [
        {"type": "string", "value": "Hello, Ada"},
        {"type": "number", "value": 42},
    ]
    (scraped,) = actions["scrapes"]
    assert scraped["url"] == pages.url("/fc/form") and "Hello, Ada" in scraped["html"]
