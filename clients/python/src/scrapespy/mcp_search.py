"""The MCP server's ``search`` tool (scrapespy.mcp): a web search on the service's search
backend, each web result's page scraped to markdown in the same call when the agent asks."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from scrapespy import AsyncScrapespy
from scrapespy.mcp_answers import Prices, answered, api_call, dump, page_text

PAID = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)


def _item_text(item: dict[str, Any]) -> str:
    head = f"{item.get('position')}. {item.get('title') or item['url']}\n{item['url']}"
    if item.get("description"):
        head += f"\n{item['description']}"
    page = item.get("page")
    if page:
        head += "\n" + page_text(page)
    return head


def add_search_tool(
    server: MCPServer, client: AsyncScrapespy, prices: Prices, base_url: str
) -> None:
    @server.tool(
        description="Search the web and return the top results (url, title, description); with "
        "scrape true, each web result's page is scraped to markdown in the same call. "
        + prices.search_cost(),
        annotations=PAID,
    )
    async def search(
        query: Annotated[str, Field(description="what to search for", min_length=1)],
        limit: Annotated[int, Field(description="results wanted, 1 to 100", ge=1, le=100)] = 5,
        sources: Annotated[
            list[Literal["web", "news", "images"]], Field(description="web, news, images")
        ] = ["web"],  # noqa: B006 (pydantic copies the default)
        scrape: Annotated[
            bool, Field(description="scrape each web result's page to markdown (billed per page)")
        ] = False,
        engine: Annotated[
            Literal["static", "js", "auto"],
            Field(description="the engine of the results' scrapes: static, js or auto"),
        ] = "static",
        tbs: Annotated[
            Literal["qdr:h", "qdr:d", "qdr:w", "qdr:m", "qdr:y"] | None,
            Field(description="only results of the past hour, day, week, month or year"),
        ] = None,
        country: Annotated[
            str | None, Field(description="ISO 3166-1 alpha-2 country of the results")
        ] = None,
        lang: Annotated[str | None, Field(description="the results' language, e.g. en")] = None,
        include_domains: Annotated[
            list[str] | None, Field(description="keep only results on these domains")
        ] = None,
        exclude_domains: Annotated[
            list[str] | None, Field(description="drop results on these domains")
        ] = None,
    ) -> CallToolResult:
        options: dict[str, Any] = {
            name: value
            for name, value in {
                "limit": limit,
                "sources": list(sources),
                "tbs": tbs,
                "country": country,
                "lang": lang,
                "include_domains": include_domains,
                "exclude_domains": exclude_domains,
            }.items()
            if value is not None
        }
        if scrape:
            options["scrape"] = {"engine": engine, "formats": ["markdown"]}
        answer = dump(await api_call(lambda: client.search(query, **options), base_url))
        parts = [f"credits_charged: {answer.get('credits_charged', 0)}"]
        for source in ("web", "news", "images"):
            items = answer.get(source) or []
            if items:
                parts.append(f"--- {source} ---")
                parts += [_item_text(item) for item in items]
        if len(parts) == 1:
            parts.append("no results (not charged)")
        return answered("\n\n".join(parts), answer)
