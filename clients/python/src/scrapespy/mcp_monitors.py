"""The MCP server's monitor tools (scrapespy.mcp): a page watched on a schedule, each run a
check with what changed; made, listed, read, paused, resumed and deleted by the agent."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from scrapespy import AsyncScrapespy
from scrapespy.mcp_answers import Prices, api_call, dump

PAID = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)
FREE = ToolAnnotations(read_only_hint=True, open_world_hint=False)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DELETES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

MonitorId = Annotated[str, Field(description="the id create_monitor or list_monitors answered")]


def add_monitor_tools(
    server: MCPServer, client: AsyncScrapespy, prices: Prices, base_url: str
) -> None:
    @server.tool(
        description="Watch a page: scrape it now and then again on a schedule (every "
        "schedule_seconds, or a cron expression in UTC), each run a check saying what changed; "
        "each run is billed as a scrape of the page. " + prices.page_cost(),
        annotations=PAID,
    )
    async def create_monitor(
        url: Annotated[str, Field(description="the page's http or https URL")],
        schedule_seconds: Annotated[
            int | None, Field(description="seconds between runs (the service's minimum applies)")
        ] = None,
        cron: Annotated[
            str | None, Field(description="a cron expression of five fields, UTC, instead")
        ] = None,
        name: Annotated[str | None, Field(description="a label", max_length=200)] = None,
        engine: Annotated[
            Literal["static", "js", "auto"], Field(description="static, js or auto")
        ] = "static",
        formats: Annotated[
            list[str], Field(description="outputs of each run's scrape, e.g. markdown")
        ] = ["markdown"],  # noqa: B006 (pydantic copies the default)
    ) -> dict[str, Any]:
        schedule: int | str | None = cron if cron is not None else schedule_seconds
        if schedule is None:
            schedule = 3600
        made = await api_call(
            lambda: client.create_monitor(
                url, schedule=schedule, name=name, engine=engine, formats=list(formats)
            ),
            base_url,
        )
        answer: dict[str, Any] = dump(made)
        return answer

    @server.tool(
        description="The account's monitors, newest first, each with its last check. Free.",
        annotations=FREE,
    )
    async def list_monitors(
        cursor: Annotated[str | None, Field(description="next_cursor, for more")] = None,
    ) -> dict[str, Any]:
        answer: dict[str, Any] = dump(
            await api_call(lambda: client.monitors(cursor=cursor), base_url)
        )
        return answer

    @server.tool(
        description="One monitor, with its last check and last change. Free.", annotations=FREE
    )
    async def get_monitor(monitor_id: MonitorId) -> dict[str, Any]:
        answer: dict[str, Any] = dump(await api_call(lambda: client.monitor(monitor_id), base_url))
        return answer

    _add_monitor_state_tools(server, client, base_url)


def _add_monitor_state_tools(server: MCPServer, client: AsyncScrapespy, base_url: str) -> None:
    """The tools that change a monitor's state or read its checks."""

    @server.tool(
        description="Pause a monitor: no run until it is resumed. Free.", annotations=CHANGES
    )
    async def pause_monitor(monitor_id: MonitorId) -> dict[str, Any]:
        answer: dict[str, Any] = dump(
            await api_call(lambda: client.pause_monitor(monitor_id), base_url)
        )
        return answer

    @server.tool(
        description="Resume a paused monitor: it runs next at its schedule's next time. Free.",
        annotations=CHANGES,
    )
    async def resume_monitor(monitor_id: MonitorId) -> dict[str, Any]:
        answer: dict[str, Any] = dump(
            await api_call(lambda: client.resume_monitor(monitor_id), base_url)
        )
        return answer

    @server.tool(description="Delete a monitor and its checks. Free.", annotations=DELETES)
    async def delete_monitor(monitor_id: MonitorId) -> dict[str, Any]:
        answer: dict[str, Any] = dump(
            await api_call(lambda: client.delete_monitor(monitor_id), base_url)
        )
        return answer

    @server.tool(
        description="A monitor's checks (its runs), newest first: status, pages, credits and "
        "what changed, with each changed page's diff when the runs track changes. Free.",
        annotations=FREE,
    )
    async def monitor_checks(
        monitor_id: MonitorId,
        cursor: Annotated[str | None, Field(description="next_cursor, for more")] = None,
        limit: Annotated[int, Field(description="checks in this answer", ge=1, le=100)] = 10,
    ) -> dict[str, Any]:
        answer: dict[str, Any] = dump(
            await api_call(
                lambda: client.monitor_checks(monitor_id, cursor=cursor, limit=limit), base_url
            )
        )
        return answer
