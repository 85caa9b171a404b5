"""End to end: scrapespy's own Python client (``Scrapespy.search``, ``AsyncScrapespy.search``)
and its MCP server's ``search`` tool, against a service searching a SearXNG stand-in whose
results point at the local target site."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from scrapespy import AsyncScrapespy, ScrapeResult, Scrapespy, SearchResult

from harness.search_backends import Hit, SearchStandIn
from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite
from tests.test_client_async import run
from tests.test_e2e_search import assert_ledger_exact, page, query
from tests.test_mcp import text_of, tool

SEARCH_PRICE, STATIC = 1, 1


@pytest.fixture(scope="module")
def standin(site: TargetSite) -> Iterator[SearchStandIn]:
    for n in range(4):
        site.page(f"/clientsearch/{n}", page(n))
    web = [Hit(site.url(f"/clientsearch/{n}"), f"Tide table {n}", f"day {n}") for n in range(4)]
    stand_in = SearchStandIn("searxng", {"web": web}).start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def searching(
    standin: SearchStandIn, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        database_url, tmp_path_factory.mktemp("search-clients"), env=standin.env()
    ).start()
    yield proc
    proc.stop()


def test_the_client_searches_and_scrapes(
    searching: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=20)
    with Scrapespy(api_key=key, base_url=searching.base) as client:
        found = client.search(query(), limit=2, scrape={"formats": ["markdown"]})
    assert isinstance(found, SearchResult)
    assert [item.url for item in found.web] == [site.url(f"/clientsearch/{n}") for n in range(2)]
    assert found.web[0].title == "Tide table 0" and found.web[0].position == 1
    assert isinstance(found.web[1].page, ScrapeResult)
    assert "High water on day 1" in (found.web[1].page.markdown or "")
    assert found.backend == "searxng"
    assert found.credits_charged == SEARCH_PRICE + 2 * STATIC
    assert_ledger_exact(accounts, account_id, 20, found.credits_charged)


def test_the_async_client_searches(searching: ServiceProcess, accounts: Accounts) -> None:
    account_id, key = accounts.create(credits=20)

    async def searched() -> SearchResult:
        async with AsyncScrapespy(api_key=key, base_url=searching.base) as client:
            return await client.search(query(), limit=3)

    found = run(searched)  # on a loop of its own, apart from the suite's reactor
    assert len(found.web) == 3 and all(item.page is None for item in found.web)
    assert_ledger_exact(accounts, account_id, 20, SEARCH_PRICE)


def test_the_mcp_search_tool_answers_the_pages(
    searching: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=20)
    answer = tool(searching, key, "search", {"query": query(), "limit": 2, "scrape": True})
    assert answer.is_error is False, text_of(answer)
    text = text_of(answer)
    assert site.url("/clientsearch/0") in text and "High water on day 1" in text
    structured = answer.structured_content or {}
    assert structured["credits_charged"] == SEARCH_PRICE + 2 * STATIC, json.dumps(structured)
    assert_ledger_exact(accounts, account_id, 20, SEARCH_PRICE + 2 * STATIC)
