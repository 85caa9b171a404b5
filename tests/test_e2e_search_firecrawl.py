"""End to end: Firecrawl's ``/v2/search`` and ``/v1/search`` with the real clients people use:
firecrawl-py 4.55 (v2's ``Firecrawl.search`` with and without ``scrape_options``, v1's
``search``), firecrawl-js's ``search`` and firecrawl-mcp's ``firecrawl_search`` tool, on a
SearXNG stand-in whose results point at the local target site. ``creditsUsed`` is what the
ledger took."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from firecrawl import Firecrawl, V1FirecrawlApp
from firecrawl.v1.client import V1ScrapeOptions
from firecrawl.v2.types import Document, ScrapeOptions, SearchResultNews, SearchResultWeb

from harness.search_backends import Hit, SearchStandIn
from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from tests.js_clients import node, run
from tests.test_e2e_search import assert_ledger_exact, page, query

SEARCH_PRICE, STATIC = 1, 1


@pytest.fixture(scope="module")
def standin(site: TargetSite) -> Iterator[SearchStandIn]:
    for n in range(6):
        site.page(f"/fcsearch/{n}", page(n))
    web = [
        Hit(site.url(f"/fcsearch/{n}"), f"Tide table {n}", f"Tides for day {n}") for n in range(6)
    ]
    news = [Hit(f"http://news.other.example/{n}", f"News {n}", f"item {n}") for n in range(3)]
    stand_in = SearchStandIn("searxng", {"web": web, "news": news}).start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def searching(
    standin: SearchStandIn, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        database_url, tmp_path_factory.mktemp("search-firecrawl"), env=standin.env()
    ).start()
    yield proc
    proc.stop()


def client(searching: ServiceProcess, key: str) -> Firecrawl:
    return Firecrawl(api_key=key, api_url=searching.url(""), max_retries=1)


def test_firecrawl_py_search_without_scraping(
    searching: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    found = client(searching, key).search(query(), limit=3, sources=["web", "news"])
    assert all(isinstance(item, SearchResultWeb) for item in found.web)
    assert [item.url for item in found.web] == [site.url(f"/fcsearch/{n}") for n in range(3)]
    assert found.web[0].title == "Tide table 0"
    assert found.web[0].description == "Tides for day 0"
    assert all(isinstance(item, SearchResultNews) for item in found.news)
    assert [item.title for item in found.news] == ["News 0", "News 1", "News 2"]
    assert found.news[0].snippet == "item 0"
    assert_ledger_exact(accounts, account_id, 10, SEARCH_PRICE)


def test_firecrawl_py_search_with_scrape_options_gives_documents(
    searching: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=20)
    found = client(searching, key).search(
        query(), limit=3, scrape_options=ScrapeOptions(formats=["markdown"])
    )
    assert len(found.web) == 3
    for n, doc in enumerate(found.web):
        assert isinstance(doc, Document)
        assert f"High water on day {n}" in doc.markdown
        assert doc.metadata.source_url == site.url(f"/fcsearch/{n}")
        assert doc.metadata.status_code == 200
    assert_ledger_exact(accounts, account_id, 20, SEARCH_PRICE + 3 * STATIC)


def test_the_v2_answer_says_credits_used_as_the_ledger_took(
    searching: ServiceProcess, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=20)
    body = {"query": query(), "limit": 2, "scrapeOptions": {"formats": ["markdown"]}}
    reply = call(
        "POST", searching.url("/v2/search"), body, headers={"Authorization": f"Bearer {key}"}
    )
    assert reply.status == 200, reply.body
    answer = reply.json
    assert answer["success"] is True
    assert set(answer["data"]) == {"web"}
    assert answer["creditsUsed"] == SEARCH_PRICE + 2 * STATIC
    web = answer["data"]["web"][0]
    assert {"url", "title", "description", "position", "markdown", "metadata"} <= set(web)
    assert_ledger_exact(accounts, account_id, 20, answer["creditsUsed"])


def test_firecrawl_py_v1_search(
    searching: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=20)
    app = V1FirecrawlApp(api_key=key, api_url=searching.url(""))
    plain = app.search(query(), limit=2)
    assert plain.success is True
    # v1's client answers its documents as dicts
    assert [doc["url"] for doc in plain.data] == [site.url("/fcsearch/0"), site.url("/fcsearch/1")]
    assert plain.data[0]["title"] == "Tide table 0"
    assert plain.data[0]["description"] == "Tides for day 0"
    scraped = app.search(query(), limit=2, scrape_options=V1ScrapeOptions(formats=["markdown"]))
    assert "High water on day 1" in scraped.data[1]["markdown"]
    assert_ledger_exact(accounts, account_id, 20, 2 * SEARCH_PRICE + 2 * STATIC)


def test_firecrawl_js_search(
    searching: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    node()
    account_id, key = accounts.create(credits=20)
    asked = {"limit": 2, "scrapeOptions": {"formats": ["markdown"]}}
    answer: dict[str, Any] = run(
        "firecrawl_sdk.mjs",
        {"method": "search", "args": [query(), asked]},
        base=searching.base,
        key=key,
    )
    assert "error" not in answer, answer
    web = answer["result"]["web"]
    assert [item["url"] for item in web] == [site.url("/fcsearch/0"), site.url("/fcsearch/1")]
    assert "High water on day 0" in web[0]["markdown"]
    assert_ledger_exact(accounts, account_id, 20, SEARCH_PRICE + 2 * STATIC)


def test_firecrawl_mcp_search_tool(
    searching: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    node()
    account_id, key = accounts.create(credits=20)
    calls = [{"name": "firecrawl_search", "arguments": {"query": query(), "limit": 2}}]
    answer: dict[str, Any] = run("firecrawl_mcp.mjs", calls, base=searching.base, key=key)
    assert "firecrawl_search" in answer["tools"]
    result = answer["calls"][0]
    assert result.get("isError") is False, result
    assert site.url("/fcsearch/0") in result["text"]
    assert site.url("/fcsearch/1") in result["text"]
    assert_ledger_exact(accounts, account_id, 20, SEARCH_PRICE)
