"""End to end: the ``firecrawl-mcp`` server (the pinned version of ``tests/js``) on the service.

An MCP host starts the server over stdio with its self-hosted settings, ``FIRECRAWL_API_URL``
(the service) and ``FIRECRAWL_API_KEY`` (a scrapespy key), and drives it with the MCP SDK's
client: the tools are listed, the scrape tool returns an article's main content as markdown and
bills the native price, the crawl tool runs a crawl to its end and the status tool reads it
later, and an empty balance is a tool error (the scrape tool's says credits) with nothing
fetched. Without a key the server still starts (the URL alone makes it "self-hosted"); each
call is then scrapespy's 401, as a tool error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.service import Accounts, ServiceProcess
from harness.site import TargetSite
from tests.conftest import a_database_of_its_own
from tests.js_clients import node, run
from tests.test_e2e_formats import ARTICLE, BODY, BOILERPLATE

STATIC = 1  # the price of a static scrape without a proxy
PAGES = [f"/guide/{n}" for n in range(1, 5)]
TOOLS = {"firecrawl_scrape", "firecrawl_map", "firecrawl_crawl", "firecrawl_check_crawl_status"}


@pytest.fixture(scope="module", autouse=True)
def _node() -> None:
    node()


@pytest.fixture(scope="module")
def own_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("firecrawl-mcp-db"))


@pytest.fixture(scope="module")
def accounts(own_db: tuple[str, Accounts]) -> Accounts:
    return own_db[1]


@pytest.fixture(scope="module")
def service(
    own_db: tuple[str, Accounts], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(own_db[0], tmp_path_factory.mktemp("firecrawl-mcp")).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def article(site: TargetSite) -> str:
    site.page("/fcmcp/blog/tidal", ARTICLE)
    return site.url("/fcmcp/blog/tidal")


@pytest.fixture(scope="module")
def guide() -> Iterator[TargetSite]:
    """A site of its own: a start page linking to four pages, each linking back."""

    def page(title: str, *links: str) -> str:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        return (
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>The text of {title}.</p>{anchors}</body></html>"
        )

    site = TargetSite()
    site.page("/guide/", page("Guide", *PAGES))
    for path in PAGES:
        site.page(path, page(path, "/guide/"))
    yield site.start()
    site.stop()


def session(service: ServiceProcess, key: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    """One MCP session: the server started, its tools listed, ``calls`` made in order."""
    answer: dict[str, Any] = run("firecrawl_mcp.mjs", list(calls), base=service.base, key=key)
    return answer


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def balance(accounts: Accounts, account_id: int) -> int:
    summary = accounts.summary(account_id)
    assert summary["held"] == 0
    return int(summary["balance"])


def test_the_scrape_tool_returns_the_articles_markdown_at_the_native_price(
    service: ServiceProcess, accounts: Accounts, article: str
) -> None:
    account_id, key = accounts.create(credits=100)
    answer = session(service, key, tool("firecrawl_scrape", url=article, formats=["markdown"]))
    assert TOOLS <= set(answer["tools"])
    (scraped,) = answer["calls"]
    assert scraped.get("isError") is False, scraped
    document = scraped["structured"]
    markdown = document["markdown"]
    assert markdown.startswith("# Tidal power comes to the Severn estuary\n")
    for sentence in BODY:
        assert sentence in markdown, sentence
    for block, marker in BOILERPLATE.items():
        assert marker not in markdown, block
    assert sentence in scraped["text"]  # what a model reads
    assert document["metadata"]["creditsUsed"] == STATIC
    assert balance(accounts, account_id) == 100 - STATIC


def test_the_crawl_tool_runs_a_crawl_and_the_status_tool_reads_it(
    service: ServiceProcess, accounts: Accounts, guide: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    answer = session(service, key, tool("firecrawl_crawl", url=guide.url("/guide/"), limit=3))
    (crawled,) = answer["calls"]
    assert crawled.get("isError") is False, crawled
    job = crawled["structured"]
    assert job["status"] == "completed"
    assert len(job["data"]) == 3
    for document in job["data"]:
        title = document["metadata"]["title"]
        assert f"The text of {title}." in document["markdown"]
    assert sum(guide.count(path) for path in ["/guide/", *PAGES]) == 3
    assert job["creditsUsed"] == 3 * STATIC
    assert balance(accounts, account_id) == 100 - 3 * STATIC

    later = session(service, key, tool("firecrawl_check_crawl_status", id=job["id"]))
    (status,) = later["calls"]
    assert status.get("isError") is False, status
    read = status["structured"]
    assert (read["id"], read["status"], read["completed"]) == (job["id"], "completed", 3)
    assert read["creditsUsed"] == job["creditsUsed"]
    assert sorted(d["metadata"]["sourceURL"] for d in read["data"]) == sorted(
        d["metadata"]["sourceURL"] for d in job["data"]
    )


def test_an_empty_balance_is_a_tool_error_and_nothing_is_fetched(
    service: ServiceProcess,
    accounts: Accounts,
    article: str,
    site: TargetSite,
    guide: TargetSite,
) -> None:
    account_id, key = accounts.create(credits=0)
    before = site.count("/fcmcp/blog/tidal"), sum(guide.hits.values())
    answer = session(
        service,
        key,
        tool("firecrawl_scrape", url=article),
        tool("firecrawl_crawl", url=guide.url("/guide/"), limit=2),
    )
    scraped, crawled = answer["calls"]
    assert scraped.get("isError") is True, scraped
    assert "credits" in scraped["text"].lower()
    # the crawl tool posts with the SDK's bare HTTP client, whose error names the status only
    assert crawled.get("isError") is True, crawled
    assert "402" in crawled["text"]
    assert (site.count("/fcmcp/blog/tidal"), sum(guide.hits.values())) == before
    assert balance(accounts, account_id) == 0


def test_without_a_key_the_server_starts_and_each_call_is_a_401_tool_error(
    service: ServiceProcess, article: str, site: TargetSite
) -> None:
    before = site.count("/fcmcp/blog/tidal")
    answer = session(service, None, tool("firecrawl_scrape", url=article))
    assert TOOLS <= set(answer["tools"])
    (refused,) = answer["calls"]
    assert refused.get("isError") is True, refused
    assert "API key" in refused["text"]
    assert site.count("/fcmcp/blog/tidal") == before


def test_the_scrape_tool_gives_a_404_page_with_its_status_unbilled(
    service: ServiceProcess, accounts: Accounts, guide: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    gone = guide.url("/guide/gone")  # not a page of the site: its 404 page
    answer = session(service, key, tool("firecrawl_scrape", url=gone, formats=["markdown"]))
    (scraped,) = answer["calls"]
    assert scraped.get("isError") is False, scraped
    metadata = scraped["structured"]["metadata"]
    assert metadata["statusCode"] == 404 and metadata["sourceURL"] == gone
    assert metadata["creditsUsed"] == 0
    assert balance(accounts, account_id) == 100
