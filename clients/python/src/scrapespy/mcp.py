"""An MCP server for AI agents: scrapespy's API as tools, over stdio.

Run it with ``scrapespy-mcp`` (or ``scrapespy mcp`` where the service is installed); it reads
``SCRAPESPY_API_KEY`` and ``SCRAPESPY_URL`` from the environment and calls the API through
:class:`scrapespy.AsyncScrapespy`. Needs the ``mcp`` extra: ``pip install "scrapespy-client[mcp]"``.

Each tool's description carries the service's own prices, read from ``GET /pricing`` when the
server starts. An error of the API reaches the agent as a tool error with the API's message and
``error_code``, never a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar

import anyio
import httpx
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from scrapespy import AsyncScrapespy, ScrapespyError

DEFAULT_URL = "http://127.0.0.1:8080"
# The service's defaults (service/config.py), for when GET /pricing cannot be read at start-up
DEFAULT_COSTS = {
    "static": {"none": 1, "datacenter": 2, "residential": 10},
    "js": {"none": 5, "datacenter": 6, "residential": 25},
}
DEFAULT_MAP_CREDITS = 1
TERMINAL = ("completed", "cancelled", "failed", "insufficient_credits")
# job_status's wait stays under the minute most agents give a tool call
MAX_WAIT_SECONDS = 50
# the page fields that tell what happened; outputs and the page's content are added as asked
SUMMARY_FIELDS = (
    "url",
    "final_url",
    "status_code",
    "success",
    "title",
    "engine",
    "tier_used",
    "credits_charged",
    "cached",
    "error",
    "error_code",
)

Engine = Literal["static", "js", "auto"]
Proxy = Literal["none", "datacenter", "residential", "auto"]
Format = Literal["markdown", "html", "raw_html"]
T = TypeVar("T")

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


class Prices(BaseModel):
    costs: dict[str, dict[str, int]] = DEFAULT_COSTS
    map_credits: int = DEFAULT_MAP_CREDITS
    read_from_service: bool = False

    def table(self) -> str:
        rows = [
            f"{engine}: " + ", ".join(f"{tier} {credits}" for tier, credits in tiers.items())
            for engine, tiers in self.costs.items()
        ]
        where = "this service's prices" if self.read_from_service else "the default prices"
        return f"credits per page by engine and proxy tier ({where}): " + "; ".join(rows)

    def page_cost(self) -> str:
        return (
            f"Cost: {self.table()}. Billed only for a page that succeeded and was not an anti-bot "
            "page, at the engine and tier actually used; failures, blocked pages and kept answers "
            "cost nothing. auto holds the dearest step it may take and bills the one that answered."
        )


def read_prices(base_url: str, timeout: float = 5.0) -> Prices:
    """The price list of ``GET /pricing`` (no key needed); the defaults when it cannot be read."""
    try:
        reply = httpx.get(base_url.rstrip("/") + "/pricing", timeout=timeout)
        reply.raise_for_status()
        listed = reply.json()
        costs = {
            str(engine): {str(tier): int(credits) for tier, credits in tiers.items()}
            for engine, tiers in listed["costs"].items()
        }
        map_credits = int(listed.get("map_credits", DEFAULT_MAP_CREDITS))
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
        return Prices()
    return Prices(costs=costs, map_credits=map_credits, read_from_service=True)


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        # what the API answered, not the fields it left out (outputs that were not asked for)
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, list | tuple):
        return [_dump(item) for item in value]
    return value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {name: result[name] for name in SUMMARY_FIELDS if name in result}


def page_text(result: dict[str, Any]) -> str:
    """One result for a model to read: the fields that say what happened, then the page."""
    lines = [f"{name}: {_json(value)}" for name, value in _summary(result).items()]
    if result.get("extracted"):
        lines.append("extracted: " + _json(result["extracted"]))
    for output in ("markdown", "html", "raw_html"):
        if result.get(output):
            lines += ["", f"--- {output} ---", str(result[output])]
    return "\n".join(lines)


async def api_call(call: Callable[[], Awaitable[T]], base_url: str) -> T:
    """Run one call of the client; what goes wrong becomes a ToolError that says what the API
    said (its message and error_code), never a traceback."""
    try:
        return await call()
    except ScrapespyError as exc:
        raise ToolError(error_message(exc)) from None
    except httpx.HTTPError as exc:
        raise ToolError(f"could not reach the scrapespy service at {base_url}: {exc}") from None


def error_message(exc: ScrapespyError) -> str:
    message = getattr(exc, "message", None) or str(exc)
    parts = [str(message)]
    code = getattr(exc, "error_code", None)
    status = getattr(exc, "status_code", None)
    if code:
        parts.append(f"error_code: {code}")
    if status:
        parts.append(f"HTTP {status}")
    return parts[0] + (f" ({', '.join(parts[1:])})" if len(parts) > 1 else "")


def answered(
    text: str, structured: dict[str, Any] | None = None, *, error: bool = False
) -> CallToolResult:
    """A tool's answer: ``text`` for the model to read, ``structured`` for programs. An error
    (a scrape that failed, a map that found nothing) is the agent's to handle: not billed."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


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
            "`job_status`), and `account` for the credit balance. Every tool but `account` and "
            "`job_status` spends prepaid credits."
        ),
    )
    page_cost = prices.page_cost()

    @server.tool(
        description="Scrape one web page and return its main content as markdown, with its url, "
        "status_code, title, credits_charged and error. " + page_cost,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
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
        result = _dump(answer)
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
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
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
        return _job_started(_dump(job), len(urls))

    @server.tool(
        description="Crawl a site from one URL, following its links (and its sitemap) on the same "
        "site, scraping each page in the background; answers a job id at once: read the pages "
        "with job_status. Billed per page scraped (at most max_pages pages). " + page_cost,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
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
        return _job_started(_dump(job), None)

    @server.tool(
        description="List a site's URLs from its sitemaps and its start page's links, at once, "
        f"without scraping them. Cost: {prices.map_credits} credit(s) a call"
        + ("" if prices.read_from_service else " by default (the operator sets it)")
        + ", charged only when it found at least one URL.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
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
        answer = _dump(await api_call(lambda: client.map(url, **options), base_url))
        urls = answer.get("urls") or []
        if not urls:
            why = answer.get("error") or "no URL found"
            text = f"map found no URL: {why} (error_code: {answer.get('error_code')}); not charged"
            return answered(text, error=True)
        text = f"{len(urls)} URLs:\n" + "\n".join(urls)
        return answered(text, answer)

    @server.tool(
        description="A batch_scrape or crawl job's status, counts, credits charged so far and one "
        "page of its results (each page's markdown); follow next_cursor for more. Free.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
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
            status = _dump(
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
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def account() -> dict[str, Any]:
        answer: dict[str, Any] = _dump(await api_call(client.account, base_url))
        answer["prices"] = {"page": prices.costs, "map": prices.map_credits}
        return answer

    return server


def _job_started(job: dict[str, Any], pages: int | None) -> dict[str, Any]:
    what = f"{pages} pages are" if pages is not None else "the crawl is"
    return {
        "id": job.get("id"),
        "status_url": job.get("status_url"),
        "next_step": f"{what} being scraped in the background: call job_status with job_id "
        f"{job.get('id')!r} (wait_seconds to wait for the end)",
    }


def job_text(status: dict[str, Any]) -> str:
    head = {
        name: status.get(name)
        for name in ("id", "kind", "status", "total", "counts", "credits_charged", "error")
    }
    lines = [f"{name}: {_json(value)}" for name, value in head.items()]
    results = status.get("results") or []
    for page in results:
        lines += [
            "",
            f"=== page {page.get('index')}: {page.get('url')} ({page.get('status')}, "
            f"{page.get('credits')} credits) ===",
            page_text(page.get("result") or {}),
        ]
    lines += ["", f"next_cursor: {_json(status.get('next_cursor'))}"]
    return "\n".join(lines)


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
