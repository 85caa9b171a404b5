"""End to end: ``@mendable/firecrawl-js`` (the pinned version of ``tests/js``) against the service.

A user's Node program changes only ``apiUrl`` and ``apiKey`` and keeps working: a scrape gives an
article's main content as markdown and its extra headers reach the site, a screenshot decodes as
a PNG, ``creditsUsed`` is what the native route charges and what the balance lost; a crawl holds
its limit and never requests an excluded path; a map lists URLs without scraping them; a batch
scrape bills each page once; ``getCreditUsage`` reads the balance; a bad key and an empty balance
(on a scrape, a crawl or a batch) are the SDK's own ``SdkError`` with the statuses 401 and 402,
and nothing is fetched.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite, echo_request
from tests.conftest import a_database_of_its_own
from tests.js_clients import node, run
from tests.test_e2e_formats import ARTICLE, BODY, BOILERPLATE

STATIC = 1  # the price of a static scrape without a proxy
JS = 5  # the price of a js scrape without a proxy
MAP = 1  # SCRAPESPY_MAP_CREDITS' default
PNG = b"\x89PNG\r\n\x1a\n"
CRAWLED = [f"/docs/{n}" for n in range(1, 7)]
EXCLUDED = ["/docs/skip/1", "/docs/skip/2"]


@pytest.fixture(scope="module", autouse=True)
def _node() -> None:
    node()


@pytest.fixture(scope="module")
def own_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("firecrawl-js-db"))


@pytest.fixture(scope="module")
def accounts(own_db: tuple[str, Accounts]) -> Accounts:
    return own_db[1]


@pytest.fixture(scope="module")
def service(
    own_db: tuple[str, Accounts], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(own_db[0], tmp_path_factory.mktemp("firecrawl-js")).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def article(site: TargetSite) -> str:
    site.page("/fcjs/blog/tidal", ARTICLE)
    site.routes["/fcjs/echo"] = echo_request
    return site.url("/fcjs/blog/tidal")


@pytest.fixture
def docs_site() -> Iterator[TargetSite]:
    """A site of its own (its hits are the test's): a start page linking to the excluded pages
    first, then to six pages, each linking back."""

    def page(title: str, *links: str) -> str:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        return (
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>The text of {title}.</p>{anchors}</body></html>"
        )

    site = TargetSite()
    site.page("/docs/", page("Docs", *EXCLUDED, *CRAWLED))
    for path in CRAWLED + EXCLUDED:
        site.page(path, page(path, "/docs/"))
    yield site.start()
    site.stop()


def firecrawl(service: ServiceProcess, key: str | None, method: str, *args: Any) -> Any:
    """What ``await firecrawl.<method>(...args)`` resolved to; a failure if it threw."""
    answer = run(
        "firecrawl_sdk.mjs", {"method": method, "args": list(args)}, base=service.base, key=key
    )
    assert "result" in answer, answer["error"]
    return answer["result"]


def thrown(service: ServiceProcess, key: str | None, method: str, *args: Any) -> dict[str, Any]:
    """What ``await firecrawl.<method>(...args)`` threw, as the program catching it sees it."""
    answer = run(
        "firecrawl_sdk.mjs", {"method": method, "args": list(args)}, base=service.base, key=key
    )
    assert "error" in answer, answer["result"]
    error: dict[str, Any] = answer["error"]
    return error


def site_untouched(site: TargetSite) -> bool:
    return not set(site.hits) - {"/robots.txt"}


def balance(accounts: Accounts, account_id: int) -> int:
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    return int(summary["balance"])


def test_scrape_gives_the_main_content_and_bills_the_native_price(
    service: ServiceProcess, accounts: Accounts, article: str
) -> None:
    account_id, key = accounts.create(credits=100)
    document = firecrawl(service, key, "scrape", article)
    markdown = document["markdown"]
    assert markdown.startswith("# Tidal power comes to the Severn estuary\n")
    for sentence in BODY:
        assert sentence in markdown, sentence
    for block, marker in BOILERPLATE.items():
        assert marker not in markdown, block
    metadata = document["metadata"]
    assert metadata["title"] == "Tidal power in the Severn"
    assert metadata["sourceURL"] == article
    assert metadata["statusCode"] == 200
    assert metadata["creditsUsed"] == STATIC
    assert balance(accounts, account_id) == 100 - STATIC

    native = service.scrape(
        key, {"url": article, "formats": ["markdown"], "only_main_content": True}
    )
    assert native.status == 200, native.body
    assert int(native.headers["X-Credits-Charged"]) == metadata["creditsUsed"]
    assert native.json["markdown"] == markdown


def test_scrape_sends_the_callers_headers_to_the_site(
    service: ServiceProcess, accounts: Accounts, article: str, site: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    document = firecrawl(
        service,
        key,
        "scrape",
        site.url("/fcjs/echo"),
        {"formats": ["markdown"], "headers": {"X-Greeting": "hello from firecrawl-js"}},
    )
    assert "hello from firecrawl-js" in document["markdown"]


@pytest.mark.browser
def test_a_screenshot_decodes_as_a_png_and_is_billed_at_the_js_price(
    service: ServiceProcess, accounts: Accounts, article: str
) -> None:
    account_id, key = accounts.create(credits=100)
    document = firecrawl(service, key, "scrape", article, {"formats": ["screenshot"]})
    shot = document["screenshot"]
    encoded = shot.split(",", 1)[1] if shot.startswith("data:") else shot
    assert base64.b64decode(encoded).startswith(PNG)
    assert document["metadata"]["creditsUsed"] == JS
    assert balance(accounts, account_id) == 100 - JS


def test_a_crawl_holds_its_limit_and_never_requests_an_excluded_path(
    service: ServiceProcess, accounts: Accounts, docs_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    job = firecrawl(
        service,
        key,
        "crawl",
        docs_site.url("/docs/"),
        {"limit": 4, "excludePaths": ["skip/.*"], "pollInterval": 1, "timeout": 90},
    )
    assert job["status"] == "completed"
    assert len(job["data"]) == 4
    for document in job["data"]:
        source = document["metadata"]["sourceURL"].removeprefix(docs_site.base)
        assert source in ["/docs/", *CRAWLED]
        assert f"The text of {document['metadata']['title']}." in document["markdown"]
    for path in EXCLUDED:
        assert docs_site.count(path) == 0, path
    assert sum(docs_site.count(path) for path in ["/docs/", *CRAWLED]) == 4
    assert job["creditsUsed"] == 4 * STATIC
    assert balance(accounts, account_id) == 100 - job["creditsUsed"]


def test_a_map_lists_the_sites_urls_without_scraping_them(
    service: ServiceProcess, accounts: Accounts, docs_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    start = docs_site.url("/docs/")
    found = firecrawl(service, key, "map", start)
    urls = {link["url"] for link in found["links"]}
    linked = {docs_site.url(path) for path in CRAWLED + EXCLUDED}
    assert linked <= urls <= linked | {start}
    assert all(docs_site.count(path) == 0 for path in CRAWLED + EXCLUDED)
    assert balance(accounts, account_id) == 10 - MAP


def test_a_batch_scrape_gives_each_page_and_bills_each_once(
    service: ServiceProcess, accounts: Accounts, docs_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = [docs_site.url(path) for path in CRAWLED[:3]]
    job = firecrawl(
        service,
        key,
        "batchScrape",
        urls,
        {"options": {"formats": ["markdown"]}, "pollInterval": 1, "timeout": 90},
    )
    assert job["status"] == "completed"
    assert (job["completed"], job["total"]) == (3, 3)
    by_url = {document["metadata"]["sourceURL"]: document for document in job["data"]}
    assert sorted(by_url) == sorted(urls)
    for path in CRAWLED[:3]:
        assert f"The text of {path}." in by_url[docs_site.url(path)]["markdown"]
        assert docs_site.count(path) == 1
    assert job["creditsUsed"] == 3 * STATIC
    assert balance(accounts, account_id) == 100 - 3 * STATIC


def test_a_bad_key_is_the_sdks_401_error(
    service: ServiceProcess, article: str, site: TargetSite
) -> None:
    before = site.count("/fcjs/blog/tidal")
    error = thrown(service, "spy_not-a-key", "scrape", article)
    assert (error["class"], error["isSdkError"], error["status"]) == ("SdkError", True, 401)
    assert "API key" in error["message"]
    assert site.count("/fcjs/blog/tidal") == before


def test_credit_usage_is_the_balance(
    service: ServiceProcess, accounts: Accounts, article: str
) -> None:
    account_id, key = accounts.create(credits=40)
    firecrawl(service, key, "scrape", article)
    usage = firecrawl(service, key, "getCreditUsage")
    assert usage["remainingCredits"] == balance(accounts, account_id) == 40 - STATIC


def test_an_empty_balance_is_the_sdks_402_error_and_nothing_is_fetched(
    service: ServiceProcess,
    accounts: Accounts,
    article: str,
    site: TargetSite,
    docs_site: TargetSite,
) -> None:
    account_id, key = accounts.create(credits=0)
    before = site.count("/fcjs/blog/tidal")
    start = docs_site.url("/docs/")
    for method, args in (
        ("scrape", [article]),
        ("crawl", [start, {"limit": 2, "pollInterval": 1, "timeout": 30}]),
        ("batchScrape", [[start], {"pollInterval": 1, "timeout": 30}]),
    ):
        error = thrown(service, key, method, *args)
        assert (error["class"], error["isSdkError"], error["status"]) == ("SdkError", True, 402)
        assert "credits" in error["message"].lower(), method
    assert site.count("/fcjs/blog/tidal") == before
    assert site_untouched(docs_site)
    assert balance(accounts, account_id) == 0


def test_a_404_page_is_a_document_alone_and_in_a_batch_unbilled(
    service: ServiceProcess, accounts: Accounts, docs_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    gone = docs_site.url("/docs/gone")  # not a page of the site: its 404 page
    document = firecrawl(service, key, "scrape", gone)
    assert document["metadata"]["statusCode"] == 404
    assert document["metadata"]["sourceURL"] == gone
    assert document["metadata"]["creditsUsed"] == 0
    assert balance(accounts, account_id) == 100

    urls = [docs_site.url(CRAWLED[0]), gone, docs_site.url(CRAWLED[1])]
    job = firecrawl(service, key, "batchScrape", urls, {"pollInterval": 1, "timeout": 90})
    assert job["status"] == "completed" and (job["completed"], job["total"]) == (3, 3)
    by_url = {document["metadata"]["sourceURL"]: document for document in job["data"]}
    assert sorted(by_url) == sorted(urls)
    assert [by_url[url]["metadata"]["statusCode"] for url in urls] == [200, 404, 200]
    assert by_url[gone]["metadata"]["creditsUsed"] == 0
    assert job["creditsUsed"] == 2 * STATIC
    assert balance(accounts, account_id) == 100 - 2 * STATIC
