"""End to end: the MCP server (``scrapespy mcp``) driven by the MCP SDK's own client over stdio,
against the real service scraping the local site.

An agent sees its tools (the seven of pages and jobs, and the monitors') whose descriptions say
what they cost (this service's prices), gets a page's markdown from ``scrape`` (billed as a
scrape is), a site's URLs from ``map``, a batch's pages through ``job_status``, its balance from
``account``, and the API's errors (a 402, a 400,
a failed scrape) as tool errors carrying the API's message and error_code.

The SDK's client is anyio code: each session runs in an event loop of its own, in a thread,
apart from the suite's asyncio reactor.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from harness.service import SCRAPESPY, Accounts, ServiceProcess, call
from harness.site import TargetSite

TOOLS = {
    "scrape",
    "batch_scrape",
    "crawl",
    "map",
    "search",
    "job_status",
    "account",
    "create_monitor",
    "list_monitors",
    "get_monitor",
    "pause_monitor",
    "resume_monitor",
    "delete_monitor",
    "monitor_checks",
}
T = TypeVar("T")


def in_session(base: str, key: str, steps: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Spawn ``scrapespy mcp`` as an agent would (its own env: the key and the service's URL,
    ``base``), initialise a session and run ``steps`` in it."""

    async def session() -> T:
        server = StdioServerParameters(
            command=SCRAPESPY,
            args=["mcp"],
            env={"SCRAPESPY_API_KEY": key, "SCRAPESPY_URL": base},
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await steps(client)

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, session).result(timeout=180)


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def tool(service: ServiceProcess, key: str, name: str, arguments: dict[str, Any]) -> CallToolResult:
    async def steps(client: ClientSession) -> CallToolResult:
        return await client.call_tool(name, arguments)

    return in_session(service.base, key, steps)


@pytest.fixture(scope="module")
def key(accounts: Accounts) -> str:
    return accounts.create(credits=1_000)[1]


def test_the_tools_each_say_what_they_cost(service: ServiceProcess, key: str) -> None:
    async def steps(client: ClientSession) -> Any:
        return (await client.list_tools()).tools

    tools = {listed.name: listed for listed in in_session(service.base, key, steps)}
    assert set(tools) == TOOLS
    costs = call("GET", service.url("/pricing")).json["costs"]
    for name in ("scrape", "batch_scrape", "crawl"):
        description = tools[name].description or ""
        # the service's own prices, for every engine and tier
        assert f"static: none {costs['static']['none']}, " in description, description
        assert f"js: none {costs['js']['none']}, " in description, description
        assert f"residential {costs['js']['residential']}" in description, description
        assert "not an anti-bot page" in description
    assert "Cost: 1 credit a call, charged only" in (tools["map"].description or "")
    # this service has no search backend: the tool says so (tests/test_e2e_search_clients.py)
    assert "Search is off on this service" in (tools["search"].description or "")
    for name in ("job_status", "account", "list_monitors", "pause_monitor", "delete_monitor"):
        assert "Free" in (tools[name].description or "")
    # every parameter is typed and described
    for listed in tools.values():
        for name, schema in listed.input_schema.get("properties", {}).items():
            assert schema.get("description"), (listed.name, name)
    # what spends credits is not read-only (a host asks before it); the reads are
    reads = ("job_status", "account", "list_monitors", "get_monitor", "monitor_checks")
    for name in TOOLS:
        assert tools[name].annotations is not None
        assert tools[name].annotations.read_only_hint is (name in reads)
    assert tools["delete_monitor"].annotations.destructive_hint is True
    assert "Free" not in (tools["create_monitor"].description or "")
    assert f"static: none {costs['static']['none']}, " in (
        tools["create_monitor"].description or ""
    )
    scrape = tools["scrape"].input_schema["properties"]
    assert scrape["engine"]["enum"] == ["static", "js", "auto"]
    assert scrape["formats"]["default"] == ["markdown"]
    assert scrape["only_main_content"]["default"] is True


def test_the_descriptions_are_this_services_prices(
    database_url: str, key: str, tmp_path: Path
) -> None:
    priced = ServiceProcess(
        database_url,
        tmp_path,
        env={"SCRAPESPY_COST_STATIC_NONE": "2", "SCRAPESPY_MAP_CREDITS": "2"},
    ).start()
    try:

        async def steps(client: ClientSession) -> Any:
            return (await client.list_tools()).tools

        tools = {listed.name: listed for listed in in_session(priced.base, key, steps)}
    finally:
        priced.stop()
    assert "(this service's prices): static: none 2, datacenter 2, residential 10; " in (
        tools["scrape"].description or ""
    )
    assert "Cost: 2 credits a call, charged only when it found at least one URL." in (
        tools["map"].description or ""
    )


def test_scrape_answers_the_main_content_as_markdown(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    result = tool(service, key, "scrape", {"url": site.url("/article")})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert "# Main heading" in text
    assert "Lead paragraph with **bold** text." in text
    assert "script text must not appear" not in text
    assert f'url: "{site.url("/article")}"' in text
    assert "status_code: 200" in text
    assert "credits_charged: 1" in text
    found = result.structured_content
    assert found is not None
    assert found["title"] == "The Article"
    assert found["credits_charged"] == 1
    assert found["error"] is None
    assert accounts.summary(account_id)["balance"] == 9


def test_scrape_with_selectors_and_options(
    service: ServiceProcess, key: str, site: TargetSite
) -> None:
    result = tool(
        service,
        key,
        "scrape",
        {
            "url": site.url("/article"),
            "selectors": {"items": "#items li::text"},
            "formats": ["html"],
            "only_main_content": False,
        },
    )
    assert not result.is_error, text_of(result)
    found = result.structured_content
    assert found is not None
    assert found["extracted"] == {"items": ["One", "Two"]}
    assert "markdown" not in found and "<h1>Main heading</h1>" in found["html"]
    assert 'extracted: {\n "items": [' in text_of(result)


def test_map_lists_the_site_urls(service: ServiceProcess, key: str, site: TargetSite) -> None:
    result = tool(service, key, "map", {"url": site.url("/article")})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    for path in ("/article", "/docs/page2.html", "/root"):
        assert site.url(path) in text.splitlines()
    assert "https://example.org/x" not in text
    assert result.structured_content is not None
    assert result.structured_content["count"] == 3


def test_batch_scrape_then_job_status(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=10)
    urls = [site.url("/article"), site.url("/status/404")]

    async def steps(client: ClientSession) -> tuple[CallToolResult, CallToolResult]:
        started = await client.call_tool("batch_scrape", {"urls": urls})
        assert not started.is_error, text_of(started)
        assert started.structured_content is not None
        job_id = started.structured_content["id"]
        assert "job_status" in text_of(started)
        status = await client.call_tool("job_status", {"job_id": job_id, "wait_seconds": 45})
        return started, status

    _, status = in_session(service.base, key, steps)
    assert not status.is_error, text_of(status)
    found = status.structured_content
    assert found is not None
    assert found["status"] == "completed", found
    assert found["counts"]["done"] == 1 and found["counts"]["failed"] == 1
    assert found["credits_charged"] == 1
    text = text_of(status)
    assert f"=== page 0: {urls[0]} (done, 1 credits) ===" in text
    assert "# Main heading" in text
    assert f"=== page 1: {urls[1]} (failed, 0 credits) ===" in text
    assert "the target answered HTTP 404" in text
    assert accounts.summary(account_id)["balance"] == 9


def test_crawl_is_a_job_of_its_pages(service: ServiceProcess, key: str, site: TargetSite) -> None:
    async def steps(client: ClientSession) -> CallToolResult:
        started = await client.call_tool(
            "crawl", {"url": site.url("/article"), "max_pages": 2, "sitemap": "skip"}
        )
        assert not started.is_error, text_of(started)
        assert started.structured_content is not None
        job_id = started.structured_content["id"]
        return await client.call_tool("job_status", {"job_id": job_id, "wait_seconds": 45})

    status = in_session(service.base, key, steps)
    found = status.structured_content
    assert found is not None and found["kind"] == "crawl"
    assert found["status"] == "completed", found
    assert found["total"] == 2
    assert found["results"][0]["url"] == site.url("/article")


def test_account_tells_the_balance(service: ServiceProcess, accounts: Accounts) -> None:
    account_id, key = accounts.create(credits=42)
    result = tool(service, key, "account", {})
    assert not result.is_error, text_of(result)
    found = result.structured_content
    assert found is not None
    assert found["balance"] == 42 == accounts.summary(account_id)["balance"]
    assert found["available"] == 42
    assert found["prices"]["page"] == call("GET", service.url("/pricing")).json["costs"]
    assert '"balance": 42' in text_of(result)


def test_errors_are_tool_errors_with_the_api_message(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    _, broke = accounts.create(credits=0)
    refused = tool(service, broke, "scrape", {"url": site.url("/article")})
    assert refused.is_error
    text = text_of(refused)
    assert "insufficient credits: this request costs 1 credits" in text
    assert "insufficient_credits" in text and "HTTP 402" in text
    assert "Traceback" not in text

    _, key = accounts.create(credits=10)
    invalid = tool(service, key, "scrape", {"url": "not a url"})
    assert invalid.is_error
    assert "invalid_request" in text_of(invalid) and "'url'" in text_of(invalid)

    failed = tool(service, key, "scrape", {"url": site.url("/status/404")})
    assert failed.is_error
    assert "scrape failed: the target answered HTTP 404 (error_code: http_error)" in text_of(failed)

    missing = tool(service, key, "job_status", {"job_id": "no-such-job"})
    assert missing.is_error
    assert "not_found" in text_of(missing)

    wrong_key = tool(service, "spy_" + "x" * 40, "account", {})
    assert wrong_key.is_error
    assert "API key (X-API-Key header) is missing or invalid" in text_of(wrong_key)


def test_without_a_key_it_says_so_and_exits_2() -> None:
    env = {name: value for name, value in os.environ.items() if name != "SCRAPESPY_API_KEY"}
    done = subprocess.run(
        [SCRAPESPY, "mcp"],
        env={**env, "SCRAPESPY_URL": "http://127.0.0.1:1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "SCRAPESPY_API_KEY is not set" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_without_the_service_it_says_so_and_keeps_the_default_prices() -> None:
    async def steps(client: ClientSession) -> tuple[Any, CallToolResult]:
        return (await client.list_tools()).tools, await client.call_tool("account", {})

    tools, result = in_session("http://127.0.0.1:1", "spy_" + "x" * 40, steps)
    scrape = next(listed for listed in tools if listed.name == "scrape")
    assert "(the default prices): static: none 1, datacenter 2, residential 10" in (
        scrape.description or ""
    )
    assert result.is_error
    assert "could not reach the scrapespy service at http://127.0.0.1:1 (SCRAPESPY_URL)" in (
        text_of(result)
    )
    assert "Traceback" not in text_of(result)
