"""An MCP server for AI agents: scrapespy's API as tools, over stdio.

Run it with ``scrapespy-mcp`` (or ``scrapespy mcp`` where the service is installed); it reads
``SCRAPESPY_API_KEY`` and ``SCRAPESPY_URL`` from the environment and calls the API through
:class:`scrapespy.AsyncScrapespy`. Needs the ``mcp`` extra: ``pip install "scrapespy-client[mcp]"``.

Each tool's description carries the service's own prices, read from ``GET /pricing`` when the
server starts. An error of the API reaches the agent as a tool error with the API's message and
code (its ``X-Error-Code`` header, the client exception's ``error_code``), never a traceback.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from scrapespy import AsyncScrapespy, ScrapespyError
from scrapespy.mcp_answers import (
    Prices,
    answered,
    api_call,
    dump,
    error_message,
    job_started,
    job_text,
    page_text,
    read_prices,
)
from scrapespy.mcp_monitors import add_monitor_tools
from scrapespy.mcp_search import add_search_tool

DEFAULT_URL = "http://127.0.0.1:8080"
TERMINAL = ("completed", "cancelled", "failed", "insufficient_credits")
# job_status's wait stays under the minute most agents give a tool call
MAX_WAIT_SECONDS = 50
# A tool that spends credits changes the account: not read-only, so that a host asks before it
PAID = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)
FREE = ToolAnnotations(read_only_hint=True, open_world_hint=False)

Engine = Literal["static", "js", "auto"]
Proxy = Literal["none", "datacenter", "residential", "auto"]
Format = Literal["markdown", "html", "raw_html"]

EngineArg = Annotated[
    Engine,
    Field(
        description="static: a plain HTTP fetch (cheapest); js: rendered in a headless browser, "
        "for pages built by JavaScript; auto: static, then js when the page is a JavaScript shell"
    ),
]
ProxyArg = Annotated[
    Proxy,
    Field(
        description="none: direct; datacenter or residential: the operator's proxy pools (dearer); "
        "auto: direct, then each pool while the site blocks"
    ),
]
FormatsArg = Annotated[
    list[Format],
    Field(description="outputs to add to each result: markdown, html (cleaned), raw_html"),
]
MainArg = Annotated[
    bool,
    Field(
        description="keep only the page's main content (no navigation, header, footer, sidebars, "
        "ads, cookie banners) in markdown, html and text"
    ),
]
SelectorsArg = Annotated[
    dict[str, str] | None,
    Field(
        description="name -> CSS selector; each match's text is returned under extracted[name] "
        "(::text and ::attr(name) work as in parsel)"
    ),
]
TimeoutArg = Annotated[
    float | None, Field(description="seconds for each page, more than 0 and at most 120", gt=0)
]
MaxCreditsArg = Annotated[
    int | None,
    Field(
        description="the most one page may be billed; a request that may cost more is refused "
        "before anything is fetched",
        ge=0,
    ),
]
PathsArg = Annotated[
    list[str] | None,
    Field(description="regular expressions searched in each found URL's path ('^/docs/')"),
]
SitemapArg = Annotated[
    Literal["include", "only", "skip"],
    Field(
        description="include: the sitemap's URLs and the links; only: the sitemap's; skip: links"
    ),
]


def _options(**given: Any) -> dict[str, Any]:
    """The request fields the agent set; the API's own defaults for the rest."""
    return {name: value for name, value in given.items() if value is not None}


def build_server(client: AsyncScrapespy, prices: Prices, base_url: str) -> MCPServer:
    server = MCPServer(
        "scrapespy",
        title="scrapespy web scraping",
        instructions=(
            "Scrape web pages to markdown with scrapespy. Start with `scrape` for one page; use "
            "`map` to list a site's URLs, `batch_scrape` or `crawl` for many pages (then "
            "`job_status`), `search` to find pages on the web (and scrape them), "
            "`create_monitor` to watch a page on a schedule (then `monitor_checks`), and "
            "`account` for the credit balance. The tools that scrape spend prepaid credits; "
            "reading, pausing and deleting are free."
        ),
    )
    _add_page_tools(server, client, prices, base_url)
    _add_site_tools(server, client, prices, base_url)
    _add_free_tools(server, client, prices, base_url)
    add_search_tool(server, client, prices, base_url)
    add_monitor_tools(server, client, prices, base_url)
    return server


def _add_page_tools(
    server: MCPServer, client: AsyncScrapespy, prices: Prices, base_url: str
) -> None:
    """``scrape`` and ``batch_scrape``: pages the agent names, billed per page."""
    page_cost = prices.page_cost()

    @server.tool(
        description="Scrape one web page and return its main content as markdown, with its url, "
        "status_code, title, credits_charged and error. " + page_cost,
        annotations=PAID,
    )
    async def scrape(
        url: Annotated[str, Field(description="the page's http or https URL")],
        engine: EngineArg = "static",
        proxy_type: ProxyArg = "none",
        formats: FormatsArg = ["markdown"],  # noqa: B006 (pydantic copies the default)
        only_main_content: MainArg = True,
        selectors: SelectorsArg = None,
        timeout: TimeoutArg = None,
        max_credits: MaxCreditsArg = None,
        max_age: Annotated[
            int | None,
            Field(
                description="seconds: answer free from your own identical scrape made at most "
                "this long ago, if there is one",
                ge=0,
            ),
        ] = None,
    ) -> CallToolResult:
        options = _options(
            engine=engine,
            proxy_type=proxy_type,
            formats=list(formats),
            only_main_content=only_main_content,
            selectors=selectors,
            timeout=timeout,
            max_credits=max_credits,
            max_age=max_age,
        )
        answer = await api_call(lambda: client.scrape(url, **options), base_url)
        result = dump(answer)
        text = page_text(result)
        if not result.get("success", False) or result.get("error_code"):
            # the page was not scraped (or only an anti-bot page was): not billed, and an error
            # for the agent, with what came back
            why = result.get("error") or "the scrape did not succeed"
            text = f"scrape failed: {why} (error_code: {result.get('error_code')})\n" + text
            return answered(text, error=True)
        return answered(text, result)

    @server.tool(
        description="Scrape up to 1000 URLs in the background with the same options; answers a "
        "job id at once: read the pages with job_status. Billed per page as `scrape` is. "
        + page_cost,
        annotations=PAID,
    )
    async def batch_scrape(
        urls: Annotated[list[str], Field(description="1 to 1000 http(s) URLs", min_length=1)],
        engine: EngineArg = "static",
        proxy_type: ProxyArg = "none",
        formats: FormatsArg = ["markdown"],  # noqa: B006
        only_main_content: MainArg = True,
        selectors: SelectorsArg = None,
        timeout: TimeoutArg = None,
        max_credits: MaxCreditsArg = None,
    ) -> dict[str, Any]:
        options = _options(
            engine=engine,
            proxy_type=proxy_type,
            formats=list(formats),
            only_main_content=only_main_content,
            selectors=selectors,
            timeout=timeout,
            max_credits=max_credits,
        )
        job = await api_call(lambda: client.batch(list(urls), **options), base_url)
        return job_started(dump(job), len(urls))


def _add_site_tools(
    server: MCPServer, client: AsyncScrapespy, prices: Prices, base_url: str
) -> None:
    """``crawl`` and ``map``: the pages of a site the service finds."""
    page_cost = prices.page_cost()

    @server.tool(
        description="Crawl a site from one URL, following its links (and its sitemap) on the same "
        "site, scraping each page in the background; answers a job id at once: read the pages "
        "with job_status. Billed per page scraped (at most max_pages pages). " + page_cost,
        annotations=PAID,
    )
    async def crawl(
        url: Annotated[str, Field(description="the start page's http or https URL")],
        max_pages: Annotated[
            int, Field(description="the most pages scraped (and billed)", ge=1, le=10_000)
        ] = 10,
        max_depth: Annotated[
            int | None, Field(description="link hops from the start page, 0 to 100", ge=0, le=100)
        ] = None,
        include_paths: PathsArg = None,
        exclude_paths: PathsArg = None,
        allow_subdomains: Annotated[
            bool, Field(description="also follow the site's other subdomains")
        ] = False,
        sitemap: SitemapArg = "include",
        engine: EngineArg = "static",
        proxy_type: ProxyArg = "none",
        formats: FormatsArg = ["markdown"],  # noqa: B006
        only_main_content: MainArg = True,
    ) -> dict[str, Any]:
        options = _options(
            max_pages=max_pages,
            max_depth=max_depth,
            include_paths=include_paths,
            exclude_paths=exclude_paths,
            allow_subdomains=allow_subdomains,
            sitemap=sitemap,
            engine=engine,
            proxy_type=proxy_type,
            formats=list(formats),
            only_main_content=only_main_content,
        )
        job = await api_call(lambda: client.crawl(url, **options), base_url)
        return job_started(dump(job), None)

    @server.tool(
        description="List a site's URLs from its sitemaps and its start page's links, at once, "
        "without scraping them. " + prices.map_cost(),
        annotations=PAID,
    )
    async def map(
        url: Annotated[str, Field(description="the site's start page, http or https")],
        max_urls: Annotated[
            int | None, Field(description="the most URLs answered, 1 to 5000", ge=1, le=5000)
        ] = None,
        include_paths: PathsArg = None,
        exclude_paths: PathsArg = None,
        allow_subdomains: Annotated[
            bool, Field(description="also list the site's other subdomains")
        ] = False,
        sitemap: SitemapArg = "include",
    ) -> CallToolResult:
        options = _options(
            max_urls=max_urls,
            include_paths=include_paths,
            exclude_paths=exclude_paths,
            allow_subdomains=allow_subdomains,
            sitemap=sitemap,
        )
        answer = dump(await api_call(lambda: client.map(url, **options), base_url))
        urls = answer.get("urls") or []
        if not urls:
            why = answer.get("error") or "no URL found"
            text = f"map found no URL: {why} (error_code: {answer.get('error_code')}); not charged"
            return answered(text, error=True)
        text = f"{len(urls)} URLs:\n" + "\n".join(urls)
        return answered(text, answer)


def _add_free_tools(
    server: MCPServer, client: AsyncScrapespy, prices: Prices, base_url: str
) -> None:
    """``job_status`` and ``account``: reading what the account has, free."""

    @server.tool(
        description="A batch_scrape or crawl job's status, counts, credits charged so far and one "
        "page of its results (each page's markdown); follow next_cursor for more. Free.",
        annotations=FREE,
    )
    async def job_status(
        job_id: Annotated[str, Field(description="the id batch_scrape or crawl answered")],
        cursor: Annotated[
            str | None, Field(description="next_cursor of the previous answer, for more results")
        ] = None,
        limit: Annotated[
            int, Field(description="results in this answer, 1 to 100", ge=1, le=100)
        ] = 10,
        wait_seconds: Annotated[
            float,
            Field(
                description=f"wait up to this long (at most {MAX_WAIT_SECONDS} s) for the job to "
                "finish before answering",
                ge=0,
                le=MAX_WAIT_SECONDS,
            ),
        ] = 0,
    ) -> CallToolResult:
        deadline = time.monotonic() + wait_seconds
        while True:
            status = dump(
                await api_call(lambda: client.job(job_id, cursor=cursor, limit=limit), base_url)
            )
            left = deadline - time.monotonic()
            if status.get("status") in TERMINAL or left <= 0:
                break
            await anyio.sleep(min(2.0, left))
        return answered(job_text(status), status)

    @server.tool(
        description="The account of the API key: balance, held, available credits, residential "
        "trials left, rate limits, and the price list. Free.",
        annotations=FREE,
    )
    async def account() -> dict[str, Any]:
        answer: dict[str, Any] = dump(await api_call(client.account, base_url))
        answer["prices"] = {"page": prices.costs, "map": prices.map_credits}
        return answer


async def serve(base_url: str) -> None:
    # the SDK logs to stderr, which agents keep; one line per API call is noise there
    logging.getLogger("httpx").setLevel(logging.WARNING)
    prices = await anyio.to_thread.run_sync(read_prices, base_url)
    async with AsyncScrapespy(base_url=base_url) as client:
        await build_server(client, prices, base_url).run_stdio_async()


def main(argv: Sequence[str] | None = None) -> int:
    """``scrapespy-mcp``: serve the tools over stdio until the agent closes it."""
    del argv  # no options: the environment configures it, as agents' configurations expect
    base_url = os.environ.get("SCRAPESPY_URL") or DEFAULT_URL
    if not os.environ.get("SCRAPESPY_API_KEY"):
        print(
            "scrapespy-mcp: SCRAPESPY_API_KEY is not set: put an API key of your account "
            "(spy_...) in the agent's configuration (env), and SCRAPESPY_URL if the service is "
            f"not at {DEFAULT_URL}",
            file=sys.stderr,
        )
        return 2
    try:
        anyio.run(serve, base_url)
    except ScrapespyError as exc:
        print(f"scrapespy-mcp: {error_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
