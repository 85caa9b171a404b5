"""End to end: ``POST /search`` through the real service, on each backend (stand-ins on
127.0.0.1 answering as SearXNG, Brave and Serper do: harness/search_backends.py), with results
that point at the local target site, scraped through the scrape path. Every test checks the
ledger: what the answer says it charged is what the balance lost, nothing stays held."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from harness.search_backends import KEY, Hit, SearchStandIn
from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite

SEARCH_PRICE = 1  # SCRAPESPY_SEARCH_CREDITS's default
STATIC, JS = 1, 5
PAGES = 30
OTHER = "http://news.other.example"  # a domain of its own, for the filters


def page(n: int) -> str:
    return f"""<!doctype html><html lang="en"><head><title>Tide table {n}</title>
<meta name="description" content="Tides for day {n}"></head><body><main>
<h1>Tide table {n}</h1><p>High water on day {n} comes at {n % 12 + 1} o'clock, and the
harbour master posts it on the quay door every morning.</p></main></body></html>"""


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    for n in range(PAGES):
        site.page(f"/tides/{n}", page(n))
    return site


def hits(site: TargetSite) -> dict[str, list[Hit]]:
    web = [
        Hit(site.url(f"/tides/{n}"), f"Tide table {n}", f"Tides for day {n}") for n in range(PAGES)
    ]
    web.insert(3, Hit(site.url("/tides/0"), "Tide table 0 again", "a duplicate"))
    web.insert(4, Hit(f"{OTHER}/storm", "Storm on the coast", "elsewhere"))
    web.insert(5, Hit("ftp://files.example/tides.txt", "Not a web page", "not http"))
    news = [Hit(f"{OTHER}/news/{n}", f"News {n}", f"news item {n}") for n in range(12)]
    images = [Hit(site.url(f"/photos/{n}"), f"Photo {n}", "") for n in range(12)]
    return {"web": web, "news": news, "images": images}


@pytest.fixture(scope="module", params=["searxng", "brave", "serper"])
def backend(request: pytest.FixtureRequest, pages: TargetSite) -> Iterator[SearchStandIn]:
    stand_in = SearchStandIn(request.param, hits(pages)).start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def searching(
    backend: SearchStandIn, database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        database_url, tmp_path_factory.mktemp(f"search-{backend.kind}"), env=backend.env()
    ).start()
    yield proc
    proc.stop()


def search(proc: ServiceProcess, key: str, body: dict[str, Any], timeout: float = 120) -> Any:
    return call("POST", proc.url("/search"), body, key=key, timeout=timeout)


def query() -> str:
    """A query of the test's own: answers are kept per query, and a test counts its calls."""
    return f"harbour tides {uuid.uuid4().hex[:8]}"


def assert_ledger_exact(accounts: Accounts, account_id: int, start: int, charged: int) -> None:
    summary = accounts.summary(account_id)
    assert summary["balance"] == start - charged
    assert summary["held"] == 0
    assert accounts.entries_sum(account_id) == summary["balance"]


def calls_to(backend: SearchStandIn, text: str) -> list[Any]:
    def asked(c: Any) -> Any:
        return (c.body or {}).get("q") or c.params.get("q")

    return [c for c in backend.calls if asked(c) == text]


def test_web_news_and_images_in_one_call(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts, pages: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    asked = query()
    reply = search(
        searching, key, {"query": asked, "limit": 4, "sources": ["web", "news", "images"]}
    )
    assert reply.status == 200, reply.body
    found = reply.json
    assert found["backend"] == backend.kind
    web = found["web"]
    # the duplicate of /tides/0, the other domain's page is kept, the ftp URL is dropped
    assert [item["url"] for item in web] == [
        pages.url("/tides/0"),
        pages.url("/tides/1"),
        pages.url("/tides/2"),
        f"{OTHER}/storm",
    ]
    assert [item["position"] for item in web] == [1, 2, 3, 4]
    assert web[0]["title"] == "Tide table 0"
    assert web[0]["description"] == "Tides for day 0"  # Brave's <strong> marks taken out
    assert "page" not in web[0]
    assert [item["url"] for item in found["news"]] == [f"{OTHER}/news/{n}" for n in range(4)]
    assert found["news"][1]["title"] == "News 1"
    images = found["images"]
    assert [item["url"] for item in images] == [pages.url(f"/photos/{n}") for n in range(4)]
    assert images[0]["image_url"] == pages.url("/photos/0") + ".jpg"
    assert found["credits_charged"] == SEARCH_PRICE
    assert reply.headers["X-Credits-Charged"] == str(SEARCH_PRICE)
    assert reply.headers["X-Credits-Remaining"] == str(10 - SEARCH_PRICE)
    assert_ledger_exact(accounts, account_id, 10, SEARCH_PRICE)
    # the backend's key went to the backend, never to the caller
    assert KEY not in reply.body.decode()
    if backend.kind != "searxng":
        assert all(KEY in c.headers.values() for c in calls_to(backend, asked))


def test_a_repeated_query_asks_the_backend_once(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    asked = query()
    first = search(searching, key, {"query": asked, "limit": 3})
    calls = len(calls_to(backend, asked))
    again = search(searching, key, {"query": asked, "limit": 3})
    assert again.status == first.status == 200
    assert again.json["web"] == first.json["web"]
    assert len(calls_to(backend, asked)) == calls
    assert_ledger_exact(accounts, account_id, 10, 2 * SEARCH_PRICE)


def test_control_characters_in_a_query_reach_the_backend_as_spaces(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts
) -> None:
    # JSON allows "\u0000" in a string; PostgreSQL's usage rows cannot hold it
    account_id, key = accounts.create(credits=10)
    asked = query()
    reply = search(searching, key, {"query": asked.replace(" ", "\u0000", 1), "limit": 3})
    assert reply.status == 200, reply.body
    assert calls_to(backend, asked)  # the query the backend got is the text with a space
    assert_ledger_exact(accounts, account_id, 10, SEARCH_PRICE)


def test_a_limit_above_one_backend_page_takes_more_pages(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts, pages: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    asked = query()
    reply = search(searching, key, {"query": asked, "limit": 25})
    assert reply.status == 200, reply.body
    urls = [item["url"] for item in reply.json["web"]]
    assert len(urls) == len(set(urls)) == 25
    assert [item["position"] for item in reply.json["web"]] == list(range(1, 26))
    assert len(calls_to(backend, asked)) >= 2


def test_domain_filters(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts, pages: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    only = search(
        searching, key, {"query": query(), "limit": 5, "include_domains": ["other.example"]}
    )
    assert only.status == 200, only.body
    assert [item["url"] for item in only.json["web"]] == [f"{OTHER}/storm"]
    without = search(
        searching, key, {"query": query(), "limit": 5, "exclude_domains": ["127.0.0.1"]}
    )
    assert [item["url"] for item in without.json["web"]] == [f"{OTHER}/storm"]
    both = search(
        searching,
        key,
        {"query": query(), "include_domains": ["a.example"], "exclude_domains": ["b.example"]},
    )
    assert both.status == 400
    assert "not both" in both.json["error"]


TIME_RANGE_SENT = {
    "searxng": ("time_range", "week"),
    "brave": ("freshness", "pw"),
    "serper": ("tbs", "qdr:w"),
}


def test_tbs_reaches_the_backend(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=10)
    asked = query()
    reply = search(
        searching, key, {"query": asked, "tbs": "qdr:w", "lang": "fr", "country": "FR", "limit": 2}
    )
    assert reply.status == 200, reply.body
    name, value = TIME_RANGE_SENT[backend.kind]
    sent = calls_to(backend, asked)[0]
    assert (sent.body or sent.params)[name] == value
    if backend.kind == "searxng":
        assert sent.params["language"] == "fr-FR"
    elif backend.kind == "brave":
        assert (sent.params["country"], sent.params["search_lang"]) == ("fr", "fr")
    else:
        assert (sent.body["gl"], sent.body["hl"]) == ("fr", "fr")


def test_scraping_the_results_bills_each_page_and_the_search(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts, pages: TargetSite
) -> None:
    account_id, key = accounts.create(credits=50)
    reply = search(
        searching,
        key,
        {
            "query": query(),
            "limit": 5,
            "include_domains": ["127.0.0.1"],
            "scrape": {"formats": ["markdown"]},
        },
    )
    assert reply.status == 200, reply.body
    web = reply.json["web"]
    assert len(web) == 5
    for n, item in enumerate(web):
        assert item["page"]["success"] is True, item["page"]
        assert item["page"]["url"] == pages.url(f"/tides/{n}")
        assert f"High water on day {n}" in item["page"]["markdown"]
        assert item["page"]["credits_charged"] == STATIC
    assert reply.json["credits_charged"] == SEARCH_PRICE + 5 * STATIC
    assert_ledger_exact(accounts, account_id, 50, SEARCH_PRICE + 5 * STATIC)


def test_a_backend_that_fails_is_a_503_and_nothing_is_billed(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=20)
    try:
        for mode in ("down", "html", "garbage", "slow"):
            backend.mode, backend.delay = mode, 4
            body = {"query": query(), "timeout": 1, "limit": 3, "scrape": {"formats": ["markdown"]}}
            reply = search(searching, key, body)
            answer, code = reply.error_answer
            assert (reply.status, code) == (503, "search_unavailable"), (mode, reply.body)
            assert "nothing was charged" in answer["error"]
            assert KEY not in reply.body.decode()
    finally:
        backend.mode = "ok"
    assert_ledger_exact(accounts, account_id, 20, 0)
    assert KEY not in searching.log_text()


def test_a_search_that_finds_nothing_costs_nothing(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    reply = search(
        searching,
        key,
        {
            "query": query(),
            "include_domains": ["nowhere.example"],
            "scrape": {"formats": ["markdown"]},
        },
    )
    assert reply.status == 200, reply.body
    assert reply.json["web"] == [] and reply.json["credits_charged"] == 0
    assert_ledger_exact(accounts, account_id, 10, 0)


def test_the_hold_covers_the_worst_case_before_the_backend_is_asked(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=5)
    asked = query()
    body = {"query": asked, "limit": 5, "scrape": {"formats": ["markdown"]}}
    poor = search(searching, key, body)
    assert (poor.status, poor.error_answer[1]) == (402, "insufficient_credits")
    assert "costs 6 credits" in poor.json["error"]
    capped = search(searching, key, {**body, "scrape": {"formats": ["markdown"], "max_credits": 4}})
    assert (capped.status, capped.error_answer[1]) == (402, "max_credits_exceeded")
    assert calls_to(backend, asked) == []
    assert_ledger_exact(accounts, account_id, 5, 0)


def test_max_credits_bounds_the_whole_call(
    searching: ServiceProcess, backend: SearchStandIn, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=50)
    reply = search(
        searching,
        key,
        {
            "query": query(),
            "limit": 3,
            "include_domains": ["127.0.0.1"],
            "scrape": {"formats": ["markdown"], "max_credits": 4},
        },
    )
    assert reply.status == 200, reply.body
    assert reply.json["credits_charged"] == SEARCH_PRICE + 3 * STATIC <= 4
    assert_ledger_exact(accounts, account_id, 50, 4)
