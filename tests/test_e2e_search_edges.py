"""End to end: ``POST /search`` where it is off, where its results point at private addresses,
and where they are scraped with the js engine; ``GET /pricing``'s ``search``."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.search_backends import Hit, SearchStandIn
from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from tests.test_e2e_search import assert_ledger_exact, page, query, search

SEARCH_PRICE, JS = 1, 5


@pytest.fixture(scope="module")
def standin(site: TargetSite) -> Iterator[SearchStandIn]:
    for n in range(3):
        site.page(f"/edges/{n}", page(n))
    web = [Hit(site.url(f"/edges/{n}"), f"Tide table {n}") for n in range(3)]
    stand_in = SearchStandIn("searxng", {"web": web}).start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def guarded(
    standin: SearchStandIn, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    """The production default: the egress guard refuses private addresses (the backend, the
    operator's own endpoint, is still reached)."""
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("search-guarded"),
        env={**standin.env(), "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "0"},
    ).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def open_search(
    standin: SearchStandIn, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("search-js"),
        env={**standin.env(), "SCRAPESPY_SEARCH_CREDITS": "2"},
    ).start()
    yield proc
    proc.stop()


def test_without_a_backend_search_is_a_400_and_pricing_says_it_is_off(
    service: ServiceProcess, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    reply = search(service, key, {"query": "harbour tides"})
    answer, code = reply.error_answer
    assert (reply.status, code) == (400, "invalid_request")
    assert answer == {"error": "search is not configured on this server (SCRAPESPY_SEARCH_BACKEND)"}
    assert call("GET", service.url("/pricing")).json["search"] is None
    assert_ledger_exact(accounts, account_id, 10, 0)


def test_pricing_shows_the_search_price_and_backend(open_search: ServiceProcess) -> None:
    prices = call("GET", open_search.url("/pricing")).json
    assert prices["search"] == {"credits": 2, "backend": "searxng"}


def test_a_result_on_a_private_address_is_refused_by_the_guard_and_unbilled(
    guarded: ServiceProcess, standin: SearchStandIn, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    reply = search(
        guarded, key, {"query": query(), "limit": 3, "scrape": {"formats": ["markdown"]}}
    )
    assert reply.status == 200, reply.body
    pages = [item["page"] for item in reply.json["web"]]
    assert len(pages) == 3
    for scraped in pages:
        assert scraped["success"] is False
        assert scraped["error_code"] == "egress_blocked"
        assert scraped["credits_charged"] == 0
    assert reply.json["credits_charged"] == SEARCH_PRICE
    assert_ledger_exact(accounts, account_id, 10, SEARCH_PRICE)


def test_results_scraped_with_the_js_engine(
    open_search: ServiceProcess, standin: SearchStandIn, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=30)
    reply = search(
        open_search,
        key,
        {"query": query(), "limit": 2, "scrape": {"engine": "js", "formats": ["markdown"]}},
        timeout=180,
    )
    assert reply.status == 200, reply.body
    for n, item in enumerate(reply.json["web"]):
        assert item["page"]["engine"] == "js"
        assert item["page"]["success"] is True, item["page"]
        assert f"High water on day {n}" in item["page"]["markdown"]
    assert reply.json["credits_charged"] == 2 + 2 * JS
    assert_ledger_exact(accounts, account_id, 30, 2 + 2 * JS)


def test_a_search_without_a_valid_key_is_a_401_before_the_backend_is_asked(
    open_search: ServiceProcess, standin: SearchStandIn
) -> None:
    asked = query()
    for key in (None, "spy_" + "0" * 40):
        reply = call("POST", open_search.url("/search"), {"query": asked}, key=key)
        assert (reply.status, reply.error_answer[1]) == (401, "unauthorized")
    assert [c for c in standin.calls if c.params.get("q") == asked] == []


def test_concurrent_searches_hold_no_more_than_the_balance(
    open_search: ServiceProcess, standin: SearchStandIn, accounts: Accounts
) -> None:
    """Four searches at once, each holding its price (2) and three scrapes (1 each): a balance
    of 12 pays two whatever the order, the others are 402s, and the ledger took exactly what
    the two answers say (on PostgreSQL, the holds' conditional updates race for real)."""
    account_id, key = accounts.create(credits=12)
    body = {"query": query(), "limit": 3, "scrape": {"formats": ["markdown"]}}
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda _: search(open_search, key, body), range(4)))
    served = [reply for reply in replies if reply.status == 200]
    refused = [reply for reply in replies if reply.status != 200]
    assert len(served) == 2, [(reply.status, reply.body[:200]) for reply in replies]
    assert {(reply.status, reply.error_answer[1]) for reply in refused} == {
        (402, "insufficient_credits")
    }
    charged = [reply.json["credits_charged"] for reply in served]
    assert charged == [2 + 3, 2 + 3]  # this instance's search price is 2
    assert_ledger_exact(accounts, account_id, 12, sum(charged))
