"""End to end: ``POST /crawl`` and ``POST /map`` on the real service, against a local site.

The site has ~30 pages joined by links, a robots.txt that disallows ``/private/`` and names a
sitemap index, and sitemaps that list pages no link leads to. A crawl finds exactly the pages
its depth, include and exclude rules and the sitemap allow (a robots-disallowed one is never
fetched), each result is what ``POST /scrape`` answers, every successful page is billed once
and the ledger is exact; its pages in flight at the site stay within the politeness limit. A
map lists the URLs without scraping them (the site saw only the start page, robots.txt and the
sitemaps) and is charged its price. Bad input is a 400 naming the field, with nothing stored.
On PostgreSQL two instances share one crawl's frontier, each page scraped once, and the
per-site limit holds across both.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from service.db.tables import jobs, usage
from tests.test_e2e_batch import (
    InFlight,
    a_database_of_its_own,
    all_results,
    job,
    page_rows,
    start,
    wait_finished,
)

COST = 1  # a static scrape without a proxy
MAP_COST = 1  # SCRAPESPY_MAP_CREDITS' default
PER_SITE = 2  # SCRAPESPY_CRAWL_PAGES_PER_SITE's default
WIDE = 10


def html(title: str, *links: str) -> str:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{anchors}</body></html>"


def urlset(site: TargetSite, *paths: str) -> str:
    entries = "".join(f"<url><loc>{site.url(path)}</loc></url>" for path in paths)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    )


def build_site(in_flight: InFlight) -> TargetSite:
    site = TargetSite()
    other_host = f"http://localhost:{site.port}/docs/elsewhere"
    site.page(
        "/",
        html(
            "Home",
            "/docs/1",
            "/docs/a#top",
            "/docs/a",
            "/docs/old/1",
            "/blog/1",
            "/private/secret",
            other_host,
            "mailto:someone@example.com",
        ),
    )
    for n in range(1, 6):  # a chain deeper than the crawl goes
        site.page(f"/docs/{n}", html(f"Doc {n}", f"/docs/{n + 1}", "/"))
    wide = [f"/docs/wide/{n}" for n in range(WIDE)]
    site.page("/docs/a", html("Doc A", "/docs/1", *wide))
    for path in wide:
        body = html(path, "/", "/docs/a").encode()

        def slow(_h: Any, body: bytes = body) -> tuple[int, dict[str, str], bytes]:
            with in_flight:
                time.sleep(0.15)
            return 200, {"Content-Type": "text/html; charset=utf-8"}, body

        site.routes[path] = slow
    site.page("/docs/old/1", html("Old", "/docs/old/2"))
    site.page("/blog/1", html("Blog"))
    site.page("/blog/hidden", html("Blog hidden"))
    site.page("/private/secret", html("Secret"))
    site.page("/docs/hidden-1", html("Hidden 1", "/docs/hidden-1/child"))
    site.page("/docs/hidden-1/child", html("Child", "/docs/hidden-1/child/grand"))
    site.page("/docs/hidden-1/child/grand", html("Grand", "/docs/hidden-1/child/grand/great"))
    site.page("/docs/hidden-1/child/grand/great", html("Great"))
    site.page("/docs/hidden-2", html("Hidden 2"))
    xml = {"Content-Type": "application/xml"}
    site.page(
        "/robots.txt",
        f"User-agent: *\nDisallow: /private/\nSitemap: {site.url('/sitemap-index.xml')}\n",
        **{"Content-Type": "text/plain"},
    )
    site.page("/sitemap.xml", urlset(site, "/docs/hidden-1", "/blog/hidden"), **xml)
    site.page(
        "/sitemap-index.xml",
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.url('/sitemap-more.xml')}</loc></sitemap></sitemapindex>",
        **xml,
    )
    site.page("/sitemap-more.xml", urlset(site, "/docs/hidden-2"), **xml)
    return site.start()


# the pages the main crawl scrapes successfully: depth 2 from the start page and from each
# sitemap URL, under /docs/ but not /docs/old/, on the start page's host
CRAWLED = {
    "/",
    "/docs/1",
    "/docs/a",
    "/docs/2",
    *(f"/docs/wide/{n}" for n in range(WIDE)),
    "/docs/hidden-1",
    "/docs/hidden-1/child",
    "/docs/hidden-1/child/grand",
    "/docs/hidden-2",
}
RULES = {
    "max_depth": 2,
    "include_paths": ["^/docs/", "^/private/"],
    "exclude_paths": ["^/docs/old/"],
    "sitemap": "include",
}
SITEMAP_FILES = {"/robots.txt", "/sitemap.xml", "/sitemap-index.xml", "/sitemap-more.xml"}


@pytest.fixture(scope="module")
def crawl_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("crawl-db"))


@pytest.fixture(scope="module")
def accounts(crawl_db: tuple[str, Accounts]) -> Accounts:
    return crawl_db[1]


@pytest.fixture(scope="module")
def crawl_service(
    crawl_db: tuple[str, Accounts], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = start(crawl_db[0], tmp_path_factory.mktemp("crawl"))
    yield proc
    proc.stop()


@pytest.fixture
def in_flight() -> InFlight:
    return InFlight()


@pytest.fixture
def crawl_site(in_flight: InFlight) -> Iterator[TargetSite]:
    site = build_site(in_flight)
    yield site
    site.stop()


def post(service: ServiceProcess, path: str, key: str, body: Any) -> Reply:
    return call("POST", service.url(path), body, key=key)


def paths(site: TargetSite, urls: list[str]) -> list[str]:
    return [url.removeprefix(site.base) for url in urls]


def test_crawl_follows_depth_rules_and_sitemap_and_bills_each_page(
    crawl_service: ServiceProcess,
    accounts: Accounts,
    crawl_site: TargetSite,
    in_flight: InFlight,
) -> None:
    account_id, key = accounts.create(credits=100)
    reply = post(
        crawl_service, "/crawl", key, {"url": crawl_site.url("/"), **RULES, "formats": ["markdown"]}
    )
    assert reply.status == 202, reply.body
    assert set(reply.json) == {"id", "status_url"}
    found = wait_finished(crawl_service, key, reply.json["id"])
    assert (found["kind"], found["status"]) == ("crawl", "completed")
    results = all_results(crawl_service, key, reply.json["id"])
    by_path = {entry["url"].removeprefix(crawl_site.base): entry for entry in results}
    assert len(by_path) == len(results)  # each URL once (the fragment did not make a second)
    done = {path for path, entry in by_path.items() if entry["status"] == "done"}
    assert done == CRAWLED
    # the one page robots.txt disallows is listed as failed, unbilled, and was never fetched
    assert set(by_path) - done == {"/private/secret"}
    secret = by_path["/private/secret"]
    assert (secret["status"], secret["credits"]) == ("failed", 0)
    assert secret["result"]["error_code"] == "robots_disallowed"
    assert crawl_site.count("/private/secret") == 0
    for outside in ("/docs/3", "/docs/old/1", "/blog/1", "/blog/hidden", "/docs/elsewhere"):
        assert crawl_site.count(outside) == 0, outside
    assert crawl_site.count("/docs/hidden-1/child/grand/great") == 0
    assert found["total"] == len(CRAWLED) + 1
    assert found["counts"] == {
        "done": len(CRAWLED),
        "failed": 1,
        "blocked": 0,
        "pending": 0,
        "skipped": 0,
    }
    # polite: never more of the crawl's pages at the site at once than the per-site limit
    assert 1 <= in_flight.most <= PER_SITE

    # billed per successful page, exactly; each result is what POST /scrape answers
    assert found["credits_charged"] == len(CRAWLED) * COST
    assert all(by_path[path]["credits"] == COST for path in CRAWLED)
    single = crawl_service.scrape(key, {"url": crawl_site.url("/docs/a"), "formats": ["markdown"]})
    crawled = by_path["/docs/a"]["result"]
    assert list(crawled) == list(single.json)
    timed = ("elapsed_ms", "timings")
    assert {k: v for k, v in crawled.items() if k not in timed} == {
        k: v for k, v in single.json.items() if k not in timed
    }
    summary = accounts.summary(account_id)
    assert summary["balance"] == 100 - (len(CRAWLED) + 1) * COST
    assert summary["held"] == 0
    assert accounts.entries_sum(account_id) == summary["balance"]


def test_a_sitemap_only_crawl_scrapes_the_sitemap_urls(
    crawl_service: ServiceProcess, accounts: Accounts, crawl_site: TargetSite
) -> None:
    _, key = accounts.create(credits=100)
    body = {"url": crawl_site.url("/"), "sitemap": "only", "max_depth": 5}
    reply = post(crawl_service, "/crawl", key, body)
    assert reply.status == 202, reply.body
    found = wait_finished(crawl_service, key, reply.json["id"])
    results = all_results(crawl_service, key, reply.json["id"])
    assert sorted(paths(crawl_site, [entry["url"] for entry in results])) == [
        "/blog/hidden",
        "/docs/hidden-1",
        "/docs/hidden-2",
    ]
    assert found["credits_charged"] == 3 * COST
    assert crawl_site.count("/") == 0  # neither the start page nor a link was followed
    assert crawl_site.count("/docs/hidden-1/child") == 0


def test_max_pages_bounds_the_crawl(
    crawl_service: ServiceProcess, accounts: Accounts, crawl_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    body = {"url": crawl_site.url("/"), "max_pages": 5, "sitemap": "skip", "max_depth": 10}
    reply = post(crawl_service, "/crawl", key, body)
    assert reply.status == 202, reply.body
    found = wait_finished(crawl_service, key, reply.json["id"])
    assert found["total"] == 5
    assert sum(found["counts"].values()) == 5
    assert found["credits_charged"] == found["counts"]["done"] * COST
    assert accounts.summary(account_id)["balance"] == 100 - found["credits_charged"]
    for name in SITEMAP_FILES - {"/robots.txt"}:
        assert crawl_site.count(name) == 0  # "skip": no sitemap was read


def test_map_lists_urls_without_scraping_them_and_is_billed_its_price(
    crawl_service: ServiceProcess, accounts: Accounts, crawl_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    body = {
        "url": crawl_site.url("/"),
        "include_paths": ["^/docs/"],
        "exclude_paths": ["^/docs/old/"],
    }
    reply = post(crawl_service, "/map", key, body)
    assert reply.status == 200, reply.body
    assert set(reply.json) == {"url", "urls", "count", "error", "error_code"}
    assert reply.json["error"] is reply.json["error_code"] is None
    assert reply.json["url"] == crawl_site.url("/")
    assert sorted(paths(crawl_site, reply.json["urls"])) == [
        "/docs/1",
        "/docs/a",
        "/docs/hidden-1",
        "/docs/hidden-2",
    ]
    assert reply.json["count"] == 4
    # only the start page, robots.txt and the sitemaps were fetched
    assert set(crawl_site.hits) == {"/", *SITEMAP_FILES}
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (10 - MAP_COST, 0)
    assert accounts.entries_sum(account_id) == summary["balance"]

    limited = post(crawl_service, "/map", key, {**body, "max_urls": 2})
    assert limited.status == 200, limited.body
    assert limited.json["count"] == 2 and len(limited.json["urls"]) == 2


def test_a_map_that_finds_nothing_is_free_and_one_without_credits_is_refused(
    crawl_service: ServiceProcess, accounts: Accounts, crawl_site: TargetSite, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=5)
    # the shared site has no sitemap, and this page fails
    failed = post(crawl_service, "/map", key, {"url": site.url("/status/500")})
    assert failed.status == 200, failed.body
    assert (failed.json["urls"], failed.json["count"]) == ([], 0)
    assert failed.json["error_code"] == "map_failed"
    assert "HTTP 500" in failed.json["error"]
    assert accounts.summary(account_id)["balance"] == 5

    _, broke = accounts.create(credits=0)
    refused = post(crawl_service, "/map", broke, {"url": crawl_site.url("/")})
    assert refused.status == 402, refused.body
    assert refused.headers["X-Error-Code"] == "insufficient_credits"
    unauthorized = post(crawl_service, "/map", "sk_nope", {"url": crawl_site.url("/")})
    assert unauthorized.status == 401


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/crawl", {"max_pages": 10_001}, "max_pages"),
        ("/crawl", {"max_pages": 0}, "max_pages"),
        ("/crawl", {"sitemap": "sometimes"}, "sitemap"),
        ("/crawl", {"include_paths": ["docs/("]}, "include_paths"),
        ("/crawl", {"exclude_paths": "^/docs"}, "exclude_paths"),
        ("/crawl", {"max_depth": -1}, "max_depth"),
        ("/crawl", {"allow_subdomains": "yes"}, "allow_subdomains"),
        ("/crawl", {"formats": ["pdf"]}, "formats"),
        ("/crawl", {"url": "ftp://example.com/"}, "url"),
        ("/map", {"max_urls": 5001}, "max_urls"),
        ("/map", {"include_paths": ["("]}, "include_paths"),
        ("/map", {"formats": ["markdown"]}, "formats"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(
    crawl_service: ServiceProcess,
    accounts: Accounts,
    crawl_site: TargetSite,
    path: str,
    body: dict[str, Any],
    field: str,
) -> None:
    account_id, key = accounts.create(credits=10)
    reply = post(crawl_service, path, key, {"url": crawl_site.url("/"), **body})
    assert reply.status == 400, reply.body
    assert reply.headers["X-Error-Code"] == "invalid_request"
    assert f"'{field}" in reply.json["error"], reply.json["error"]
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (10, 0)
    database = accounts.database
    stored = database.run_sync(
        lambda conn: conn.execute(
            select(func.count()).select_from(jobs).where(jobs.c.account_id == account_id)
        ).scalar_one()
    )
    used = database.run_sync(
        lambda conn: conn.execute(
            select(func.count()).select_from(usage).where(usage.c.account_id == account_id)
        ).scalar_one()
    )
    assert (stored, used) == (0, 0)
    assert not crawl_site.hits


def test_a_crawl_that_runs_out_of_credits_stops_at_zero(
    crawl_service: ServiceProcess, accounts: Accounts, crawl_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=3)
    body = {"url": crawl_site.url("/"), "sitemap": "skip", "max_pages": 30}
    reply = post(crawl_service, "/crawl", key, body)
    assert reply.status == 202, reply.body
    found = wait_finished(crawl_service, key, reply.json["id"])
    assert found["status"] == "insufficient_credits"
    # the three credits were held by three pages before a fourth was refused; each was settled
    # and only a success billed. All three succeed, and the balance is 0, unless one failed (a
    # timeout on a busy machine) after the refusal had stopped the crawl: its hold came back
    counts = found["counts"]
    assert counts["done"] + counts["failed"] + counts["blocked"] >= 3, counts
    assert found["credits_charged"] == counts["done"] * COST
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (3 - found["credits_charged"], 0)
    # the ledger's entries add up to that balance (0 when all three succeeded)
    assert accounts.entries_sum(account_id) == summary["balance"]


def test_a_page_in_its_crawl_delay_when_the_crawl_is_cancelled_is_never_fetched(
    crawl_site: TargetSite, database_url: str, tmp_path: Path
) -> None:
    # each page of a crawl waits SCRAPESPY_CRAWL_DELAY_SECONDS, claimed and held, before its
    # fetch: the start page is waiting when the crawl is cancelled. A database of its own: on
    # PostgreSQL the module's service, without the delay, would take the page from the queue.
    delay = 8.0
    databases = a_database_of_its_own(database_url, tmp_path / "db")
    url, accounts = next(databases)
    proc = start(url, tmp_path / "delayed", SCRAPESPY_CRAWL_DELAY_SECONDS=str(delay))
    try:
        account_id, key = accounts.create(credits=10)
        posted = time.monotonic()
        body = {"url": crawl_site.url("/"), "sitemap": "skip", "max_pages": 5}
        job_id = post(proc, "/crawl", key, body).json["id"]
        deadline = time.monotonic() + 60
        while job(proc, key, job_id).json["status"] != "running":  # its page is claimed
            assert time.monotonic() < deadline
            time.sleep(0.05)
        cancelled = call("DELETE", proc.url(f"/jobs/{job_id}"), key=key)
        assert cancelled.status == 200 and cancelled.json["status"] == "cancelled"
        assert time.monotonic() < posted + delay  # the page was still in its delay
        # once its delay is over the page reads its job, gives its hold back and is skipped
        counts = wait_finished(proc, key, job_id)["counts"]
        assert (counts["done"], counts["skipped"], crawl_site.count("/")) == (0, 1, 0)
        summary = accounts.summary(account_id)
        assert (summary["balance"], summary["held"]) == (10, 0)
    finally:
        proc.stop()
        databases.close()


def test_a_crawl_is_idempotent_and_a_sitemap_only_crawl_of_no_sitemap_is_empty(
    crawl_service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, key = accounts.create(credits=10)
    body = {"url": site.url("/article"), "sitemap": "only"}
    headers = {"Idempotency-Key": "crawl-once"}
    first = call("POST", crawl_service.url("/crawl"), body, key=key, headers=headers)
    again = call("POST", crawl_service.url("/crawl"), body, key=key, headers=headers)
    assert first.status == again.status == 202, first.body
    assert again.json == first.json
    assert again.headers.get("Idempotent-Replayed") == "true"
    found = wait_finished(crawl_service, key, first.json["id"])
    assert (found["status"], found["total"], found["credits_charged"]) == ("completed", 0, 0)
    listed = call("GET", crawl_service.url("/jobs"), key=key).json["items"]
    assert [item["id"] for item in listed] == [first.json["id"]]


@pytest.mark.postgres
def test_two_instances_share_a_crawls_frontier_and_stay_polite(
    database_url: str, crawl_site: TargetSite, in_flight: InFlight, tmp_path: Path
) -> None:
    made = a_database_of_its_own(database_url, tmp_path)
    url, accounts = next(made)
    account_id, key = accounts.create(credits=100)
    one = start(url, tmp_path / "one")
    two = start(url, tmp_path / "two")
    try:
        reply = post(one, "/crawl", key, {"url": crawl_site.url("/"), **RULES})
        assert reply.status == 202, reply.body
        found = wait_finished(two, key, reply.json["id"])
        results = all_results(two, key, reply.json["id"])
    finally:
        one.stop()
        two.stop()
    try:
        done = [entry["url"] for entry in results if entry["status"] == "done"]
        assert sorted(paths(crawl_site, done)) == sorted(CRAWLED)  # each page once
        assert 1 <= in_flight.most <= PER_SITE  # the limit holds across the instances
        instances = {row.instance for row in page_rows(accounts, reply.json["id"])}
        assert len(instances) == 2, instances  # both took pages of the one frontier
        assert found["credits_charged"] == len(CRAWLED) * COST
        summary = accounts.summary(account_id)
        assert (summary["balance"], summary["held"]) == (100 - len(CRAWLED) * COST, 0)
        assert accounts.entries_sum(account_id) == summary["balance"]
    finally:
        next(made, None)
