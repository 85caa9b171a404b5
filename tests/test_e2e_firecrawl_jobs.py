"""End to end: Firecrawl's crawl, batch scrape, map and credit usage, through the clients people
use (firecrawl-py's v2 and v1 clients, LangChain's loader) against the real service and a local
site of linked pages.

A crawl's waiter returns the pages' markdown, within its limit and its rules (an excluded path is
never requested); its status pages follow ``next`` across pages of documents; a cancel, the
errors list and the running crawls say what the native job says. A batch scrape and a map answer
in Firecrawl's shapes, ``creditsUsed`` and the balance's drop are the ledger's charges, the
credit usage is the balance, and a crawl without credits is a 402 before anything is fetched.
Bad fields are a 400 naming them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from firecrawl import Firecrawl, PaymentRequiredError, RequestTimeoutError, V1FirecrawlApp
from firecrawl.v2.types import PaginationConfig, ScrapeOptions
from langchain_community.document_loaders import FireCrawlLoader
from sqlalchemy import func, select

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from service.db.tables import usage
from tests.test_e2e_batch import a_database_of_its_own, start

COST = 1  # a static scrape without a proxy
MAP_COST = 1  # SCRAPESPY_MAP_CREDITS' default
PAGE_DOCUMENTS = 2  # documents on one status page: the SDKs follow `next` to the others
RETENTION_DAYS = 7  # SCRAPESPY_JOB_RETENTION_DAYS' default
DOCS = 8
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
BLOGS = 4


def html(title: str, *links: str) -> str:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    return (
        f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
        f"<p>The text of {title}.</p>{anchors}</main></body></html>"
    )


def build_site(slow: float = 0.0) -> TargetSite:
    """A home page linking 8 docs (a ring), 4 blog posts and a robots-disallowed page."""
    site = TargetSite()
    docs = [f"/docs/{n}" for n in range(DOCS)]
    blogs = [f"/blog/{n}" for n in range(BLOGS)]
    site.page("/", html("Home", *docs, *blogs, "/private/secret"))
    site.page("/docs/", html("Docs", *docs))  # a start page no other page links to
    for n, path in enumerate(docs):
        body = html(f"Doc {n}", "/", docs[(n + 1) % DOCS]).encode()

        def route(_h: Any, body: bytes = body) -> tuple[int, dict[str, str], bytes]:
            time.sleep(slow)
            return 200, {"Content-Type": "text/html; charset=utf-8"}, body

        site.routes[path] = route
    for n, path in enumerate(blogs):
        site.page(path, html(f"Blog {n}", "/"))
    return site.start()


@pytest.fixture(scope="module")
def fc_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("firecrawl-jobs-db"))


@pytest.fixture(scope="module")
def accounts(fc_db: tuple[str, Accounts]) -> Accounts:
    return fc_db[1]


@pytest.fixture(scope="module")
def fc_service(
    fc_db: tuple[str, Accounts], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = start(
        fc_db[0],
        tmp_path_factory.mktemp("firecrawl-jobs"),
        SCRAPESPY_FIRECRAWL_PAGE_DOCUMENTS=str(PAGE_DOCUMENTS),
        SCRAPESPY_MAX_JOBS_PER_ACCOUNT="4",
    )
    yield proc
    proc.stop()


@pytest.fixture
def fc_site() -> Iterator[TargetSite]:
    site = build_site()
    yield site
    site.stop()


def charged(accounts: Accounts, account_id: int) -> int:
    """What the ledger's usage rows charged the account."""
    found = accounts.database.run_sync(
        lambda conn: conn.execute(
            select(func.coalesce(func.sum(usage.c.credits), 0)).where(
                usage.c.account_id == account_id
            )
        ).scalar_one()
    )
    return int(found)


def balance(accounts: Accounts, account_id: int) -> int:
    return int(accounts.summary(account_id)["balance"])


def page_hits(site: TargetSite, prefix: str) -> int:
    return sum(count for path, count in site.hits.items() if path.startswith(prefix))


def firecrawl(service: ServiceProcess, key: str) -> Firecrawl:
    return Firecrawl(api_key=key, api_url=service.base)


def test_the_crawl_waiter_returns_the_pages_markdown_within_limit_and_rules(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    job = firecrawl(fc_service, key).crawl(
        fc_site.url("/"),
        limit=5,
        exclude_paths=["^/blog/"],
        sitemap="skip",
        scrape_options=ScrapeOptions(formats=["markdown"]),
        poll_interval=1,
        timeout=60,
    )
    assert job.status == "completed"
    assert len(job.data) == 5
    titles = {doc.metadata.title for doc in job.data if doc.metadata}
    assert "Home" in titles and titles <= {"Home", *(f"Doc {n}" for n in range(DOCS))}
    for doc in job.data:
        assert doc.markdown and f"The text of {doc.metadata.title}" in doc.markdown
    assert page_hits(fc_site, "/blog/") == 0
    assert fc_site.count("/") + page_hits(fc_site, "/docs/") == 5
    assert job.credits_used == 5 * COST == charged(accounts, account_id)
    assert balance(accounts, account_id) == 100 - job.credits_used


def test_status_pages_follow_next_and_the_errors_name_robots_blocked_pages(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    app = firecrawl(fc_service, key)
    started = app.start_crawl(fc_site.url("/"), limit=30, sitemap="skip")
    assert started.url.endswith(f"/v2/crawl/{started.id}")
    deadline = time.monotonic() + 60
    while (job := app.get_crawl_status(started.id)).status == "scraping":
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job.status == "completed"
    pages = 1 + DOCS + BLOGS  # the robots-disallowed page is not a document
    assert len(job.data) == pages
    assert len({doc.metadata.source_url for doc in job.data if doc.metadata}) == pages
    assert job.total == pages + 1 and job.completed == job.total
    assert job.expires_at is not None  # when the results are deleted: 7 days after the start
    days = (job.expires_at - datetime.now(UTC)).total_seconds() / 86400
    assert RETENTION_DAYS - 0.01 < days <= RETENTION_DAYS

    # one page at a time: PAGE_DOCUMENTS documents and the next page's URL, none after the last
    first = app.get_crawl_status(started.id, PaginationConfig(auto_paginate=False))
    assert len(first.data) == PAGE_DOCUMENTS and first.next
    seen, page = list(first.data), first
    while page.next:
        page = app.get_crawl_status_page(page.next)
        seen += page.data
    assert [doc.metadata.source_url for doc in seen if doc.metadata] == [
        doc.metadata.source_url for doc in job.data if doc.metadata
    ]

    errors = app.get_crawl_errors(started.id)
    assert errors.robots_blocked == [fc_site.url("/private/secret")]
    assert errors.errors == []
    assert fc_site.count("/private/secret") == 0
    assert job.credits_used == pages * COST == charged(accounts, account_id)


def test_a_cancelled_crawl_says_so_and_is_not_running_any_more(
    fc_service: ServiceProcess, accounts: Accounts
) -> None:
    site = build_site(slow=0.5)
    try:
        _, key = accounts.create(credits=100)
        app = firecrawl(fc_service, key)
        started = app.start_crawl(site.url("/"), limit=30, sitemap="skip")
        assert [crawl.id for crawl in app.get_active_crawls().crawls] == [started.id]
        assert app.get_active_crawls().crawls[0].url == site.url("/")
        assert app.cancel_crawl(started.id) is True
        assert app.get_crawl_status(started.id).status == "cancelled"
        assert app.get_active_crawls().crawls == []
        assert app.cancel_crawl(started.id) is True  # cancelled still
        done = app.crawl(site.url("/"), limit=1, sitemap="skip", poll_interval=1, timeout=60)
        assert done.status == "completed" and done.id
        assert app.cancel_crawl(done.id) is False  # 409: it is over
    finally:
        site.stop()


def test_a_batch_scrape_answers_each_pages_document_and_its_charge(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = [fc_site.url(f"/docs/{n}") for n in range(3)]
    # wait_timeout: the SDK's own wait; its `timeout` is each page's, in milliseconds
    job = firecrawl(fc_service, key).batch_scrape(urls, poll_interval=1, wait_timeout=60)
    assert job.status == "completed" and (job.completed, job.total) == (3, 3)
    assert sorted(doc.metadata.title for doc in job.data if doc.metadata) == [
        "Doc 0",
        "Doc 1",
        "Doc 2",
    ]
    assert all(doc.markdown and "The text of Doc" in doc.markdown for doc in job.data)
    assert job.credits_used == 3 * COST == charged(accounts, account_id)
    assert balance(accounts, account_id) == 100 - 3 * COST

    # v2 leaves invalid URLs out and names them; the SDK's idempotency key makes one job
    headers = {"Authorization": f"Bearer {key}", "x-idempotency-key": "batch-1"}
    body = {"urls": [urls[0], "not a url"]}
    first = call("POST", fc_service.url("/v2/batch/scrape"), body, headers=headers)
    assert first.status == 200, first.body
    assert first.json["invalidURLs"] == ["not a url"]
    again = call("POST", fc_service.url("/v2/batch/scrape"), body, headers=headers)
    assert again.json == first.json and again.headers.get("Idempotent-Replayed") == "true"


def test_a_map_lists_the_sites_urls_and_is_billed_as_a_native_map(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    found = firecrawl(fc_service, key).map(fc_site.url("/"))
    urls = [link.url for link in found.links]
    assert fc_site.url("/") in urls and fc_site.url("/docs/3") in urls
    assert fc_site.url("/blog/2") in urls
    searched = firecrawl(fc_service, key).map(fc_site.url("/"), search="blog", limit=2)
    assert [link.url for link in searched.links] == [fc_site.url("/blog/0"), fc_site.url("/blog/1")]

    v1 = V1FirecrawlApp(api_key=key, api_url=fc_service.base).map_url(fc_site.url("/"))
    assert v1.links == urls and all(isinstance(link, str) for link in v1.links)
    assert page_hits(fc_site, "/docs/") == 0  # a map scrapes the start page alone
    assert charged(accounts, account_id) == 3 * MAP_COST
    assert balance(accounts, account_id) == 10 - 3 * MAP_COST


def test_a_map_past_its_timeout_is_a_408_and_unbilled(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    with pytest.raises(RequestTimeoutError):
        firecrawl(fc_service, key).map(fc_site.url("/slow"), sitemap="skip", timeout=1000)
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (10, 0)
    assert charged(accounts, account_id) == 0


def test_a_crawl_stays_under_its_start_path_unless_asked_for_the_whole_domain(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    _, key = accounts.create(credits=100)
    app = firecrawl(fc_service, key)
    start = fc_site.url("/docs/")
    under = app.crawl(start, limit=30, sitemap="skip", poll_interval=1, timeout=60)
    assert sorted(doc.metadata.title for doc in under.data if doc.metadata) == [
        *(f"Doc {n}" for n in range(DOCS)),
        "Docs",
    ]
    assert fc_site.count("/") == 0 and page_hits(fc_site, "/blog/") == 0
    whole = app.crawl(
        start, limit=30, sitemap="skip", crawl_entire_domain=True, poll_interval=1, timeout=60
    )
    assert len(whole.data) == 2 + DOCS + BLOGS
    assert fc_site.count("/") == 1


def test_the_credit_usage_is_the_balance(fc_service: ServiceProcess, accounts: Accounts) -> None:
    _, key = accounts.create(credits=1234)
    assert firecrawl(fc_service, key).get_credit_usage().remaining_credits == 1234
    v1 = V1FirecrawlApp(api_key=key, api_url=fc_service.base).get_credit_usage()
    assert v1.data.remaining_credits == 1234
    assert firecrawl(fc_service, key).get_token_usage().remaining_tokens == 0


def test_a_crawl_without_credits_is_refused_before_anything_is_fetched(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=0)
    with pytest.raises(PaymentRequiredError):
        firecrawl(fc_service, key).start_crawl(fc_site.url("/"), limit=3)
    with pytest.raises(PaymentRequiredError):
        firecrawl(fc_service, key).start_batch_scrape([fc_site.url("/docs/0")])
    assert not fc_site.hits
    assert balance(accounts, account_id) == 0


def test_the_v1_client_crawls_and_batch_scrapes(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    app = V1FirecrawlApp(api_key=key, api_url=fc_service.base)
    crawled = app.crawl_url(
        fc_site.url("/"), limit=4, ignore_sitemap=True, exclude_paths=["^/blog/"], poll_interval=1
    )
    assert crawled.status == "completed" and len(crawled.data) == 4
    assert all(doc.markdown for doc in crawled.data)
    batch = app.batch_scrape_urls([fc_site.url("/blog/0"), fc_site.url("/blog/1")], poll_interval=1)
    assert batch.status == "completed"
    assert sorted(doc.metadata["title"] for doc in batch.data) == ["Blog 0", "Blog 1"]
    assert crawled.creditsUsed + batch.creditsUsed == 6 * COST == charged(accounts, account_id)


def test_the_langchain_loader_crawls_one_document_per_page(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    _, key = accounts.create(credits=100)
    loader = FireCrawlLoader(
        url=fc_site.url("/"),
        api_key=key,
        api_url=fc_service.base,
        mode="crawl",
        params={"limit": 5, "poll_interval": 1},
    )
    documents = loader.load()
    assert len(documents) == 5
    assert len({doc.metadata["source_url"] for doc in documents}) == 5
    assert all("The text of" in doc.page_content for doc in documents)


def test_bad_fields_are_a_400_naming_them_and_unknown_jobs_a_404(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    _, key = accounts.create(credits=100)
    auth = {"Authorization": f"Bearer {key}"}
    url = fc_site.url("/")
    for body, named in (
        ({"url": url, "allowExternalLinks": True}, "allowExternalLinks"),
        ({"url": url, "prompt": "the docs"}, "prompt"),
        ({"url": url, "limit": 0}, "limit"),
        ({"url": url, "includePaths": ["("]}, "includePaths"),
        ({"url": url, "maxDepth": 2}, "maxDepth"),  # v1's
        ({"url": url, "delay": 5}, "delay"),
        ({"url": url, "crawlerOptions": {}}, "crawlerOptions"),
        ({"url": url, "scrapeOptions": {"formats": ["json"]}}, "json"),
    ):
        reply = call("POST", fc_service.url("/v2/crawl"), body, headers=auth)
        assert reply.status == 400, (body, reply.body)
        assert named in reply.json["error"] and set(reply.json) == {"error"}
    assert not fc_site.hits

    other_key = accounts.create(credits=100)[1]
    started = firecrawl(fc_service, key).start_crawl(url, limit=1, sitemap="skip")
    for path in (f"/v2/crawl/{started.id}", "/v2/crawl/nope", f"/v1/batch/scrape/{started.id}"):
        reply = call("GET", fc_service.url(path), headers={"Authorization": f"Bearer {other_key}"})
        assert reply.status == 404, reply.body
    assert call("GET", fc_service.url(f"/v1/crawl/{started.id}"), headers=auth).status == 200
    unauthorized = call("GET", fc_service.url(f"/v2/crawl/{started.id}"))
    assert unauthorized.status == 401
    # a crawl is cancelled neither through a batch's path nor with another account's key
    for path, who in (
        (f"/v2/batch/scrape/{started.id}", key),
        (f"/v2/crawl/{started.id}", other_key),
    ):
        reply = call("DELETE", fc_service.url(path), headers={"Authorization": f"Bearer {who}"})
        assert (reply.status, reply.json) == (404, {"error": "Job not found"}), (path, reply.body)
    assert call("GET", fc_service.url(f"/v2/crawl/{started.id}"), headers=auth).json["status"] in (
        "scraping",
        "completed",
    )


@pytest.fixture
def gone_site() -> Iterator[TargetSite]:
    """A home page linking two pages and one the site answers 404 for, with its own page."""
    site = TargetSite()
    site.page("/", html("Home", "/docs/0", "/gone", "/docs/1"))
    for n in range(2):
        site.page(f"/docs/{n}", html(f"Doc {n}", "/"))
    # a NUL in the page: its result's JSON holds \u0000, which PostgreSQL's JSON types refuse
    missing = html("Not here").replace("<main>", "<main>\x00").encode()
    site.routes["/gone"] = lambda _h: (404, {"Content-Type": "text/html"}, missing)
    yield site.start()
    site.stop()


def test_a_batch_with_a_404_page_lists_it_as_a_document_unbilled(
    fc_service: ServiceProcess, accounts: Accounts, gone_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = [gone_site.url("/docs/0"), gone_site.url("/gone"), gone_site.url("/docs/1")]
    app = firecrawl(fc_service, key)
    started = app.start_batch_scrape(urls, formats=["markdown", "rawHtml"])
    deadline = time.monotonic() + 60
    while (job := app.get_batch_scrape_status(started.id)).status == "scraping":
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job.status == "completed" and (job.completed, job.total) == (3, 3)
    by_url = {doc.metadata.source_url: doc.metadata for doc in job.data if doc.metadata}
    assert sorted(by_url) == sorted(urls)
    assert by_url[gone_site.url("/gone")].status_code == 404
    assert by_url[gone_site.url("/gone")].credits_used == 0
    assert by_url[gone_site.url("/gone")].title == "Not here"
    gone = next(doc for doc in job.data if doc.metadata and doc.metadata.status_code == 404)
    assert "\x00" in gone.raw_html and "The text of Not here." in gone.markdown
    assert [by_url[url].status_code for url in urls] == [200, 404, 200]
    assert job.credits_used == 2 * COST == charged(accounts, account_id)
    assert balance(accounts, account_id) == 100 - 2 * COST
    assert app.get_batch_scrape_errors(started.id).errors == []


def test_a_crawl_that_meets_a_404_lists_it_and_ids_are_uuids(
    fc_service: ServiceProcess, accounts: Accounts, gone_site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    app = firecrawl(fc_service, key)
    started = app.start_crawl(gone_site.url("/"), limit=10, sitemap="skip")
    deadline = time.monotonic() + 60
    while (job := app.get_crawl_status(started.id)).status == "scraping":
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job.status == "completed" and job.total == 4
    by_url = {doc.metadata.source_url: doc.metadata for doc in job.data if doc.metadata}
    assert by_url[gone_site.url("/gone")].status_code == 404
    assert by_url[gone_site.url("/gone")].credits_used == 0
    assert len(by_url) == 4
    assert job.credits_used == 3 * COST == charged(accounts, account_id)
    assert app.get_crawl_errors(started.id).errors == []
    assert UUID.match(started.id), started.id
    assert started.url.endswith(f"/v2/crawl/{started.id}")
    # the id without its dashes names the same job
    auth = {"Authorization": f"Bearer {key}"}
    plain = call("GET", fc_service.url(f"/v1/crawl/{started.id.replace('-', '')}"), headers=auth)
    assert plain.status == 200 and plain.json["total"] == 4, plain.body


def test_active_crawls_say_when_they_began_and_with_what_options(
    fc_service: ServiceProcess, accounts: Accounts
) -> None:
    site = build_site(slow=0.5)
    try:
        _, key = accounts.create(credits=100)
        before = datetime.now(UTC)
        app = firecrawl(fc_service, key)
        started = app.start_crawl(
            site.url("/"),
            limit=30,
            sitemap="skip",
            exclude_paths=["^/blog/"],
            scrape_options=ScrapeOptions(formats=["markdown", "links"], only_main_content=False),
        )
        auth = {"Authorization": f"Bearer {key}"}
        for version in ("v1", "v2"):
            reply = call("GET", fc_service.url(f"/{version}/crawl/active"), headers=auth)
            (crawl,) = reply.json["crawls"]
            assert crawl["id"] == started.id and crawl["url"] == site.url("/")
            made = datetime.fromisoformat(crawl["created_at"].replace("Z", "+00:00"))
            assert before - timedelta(seconds=5) <= made <= datetime.now(UTC)
            assert crawl["options"]["limit"] == 30
            assert crawl["options"]["excludePaths"] == ["^/blog/"]
            assert crawl["options"]["sitemap"] == "skip"
            assert crawl["options"]["scrapeOptions"]["formats"] == ["markdown", "links"]
            assert crawl["options"]["scrapeOptions"]["onlyMainContent"] is False
        (listed,) = app.get_active_crawls().crawls
        assert listed.id == started.id and listed.options and listed.options["limit"] == 30
        assert app.cancel_crawl(started.id) is True
    finally:
        site.stop()


def test_a_v2_batch_names_no_invalid_urls_as_an_empty_list(
    fc_service: ServiceProcess, accounts: Accounts, fc_site: TargetSite
) -> None:
    _, key = accounts.create(credits=100)
    auth = {"Authorization": f"Bearer {key}"}
    urls = [fc_site.url("/docs/0")]
    for path, body in (
        ("/v2/batch/scrape", {"urls": urls}),  # v2's default: ignoreInvalidURLs true
        ("/v1/batch/scrape", {"urls": urls, "ignoreInvalidURLs": True}),
    ):
        reply = call("POST", fc_service.url(path), body, headers=auth)
        assert reply.status == 200, reply.body
        assert reply.json["invalidURLs"] == [] and UUID.match(reply.json["id"])
    v1 = call("POST", fc_service.url("/v1/batch/scrape"), {"urls": urls}, headers=auth)
    assert "invalidURLs" not in v1.json
