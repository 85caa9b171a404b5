"""What the MCP server's tools answer (scrapespy.mcp): the price list their descriptions carry,
the text a model reads for a page or a job, and the API's errors as tool errors.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from scrapespy.errors import ConnectionFailed, ScrapespyError

T = TypeVar("T")

# The service's defaults (service/core/config.py), for when GET /pricing cannot be read at start-up
DEFAULT_COSTS = {
    "static": {"none": 1, "datacenter": 2, "residential": 10},
    "js": {"none": 5, "datacenter": 6, "residential": 25},
}
DEFAULT_MAP_CREDITS = 1
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


class Prices(BaseModel):
    costs: dict[str, dict[str, int]] = DEFAULT_COSTS
    map_credits: int = DEFAULT_MAP_CREDITS
    read_from_service: bool = False
    # a service older than map_credits in GET /pricing: the default is said to be one
    map_read_from_service: bool = False
    # GET /pricing's search: {"credits", "backend"}, or None when the service has no search
    search: dict[str, Any] | None = None

    def table(self) -> str:
        rows = [
            f"{engine}: " + ", ".join(f"{tier} {credits}" for tier, credits in tiers.items())
            for engine, tiers in self.costs.items()
        ]
        where = "this service's prices" if self.read_from_service else "the default prices"
        return f"credits per page by engine and proxy tier ({where}): " + "; ".join(rows)

    def map_cost(self) -> str:
        credits = f"{self.map_credits} credit{'' if self.map_credits == 1 else 's'} a call"
        if not self.map_read_from_service:
            credits += " by default (the operator may set another price)"
        return f"Cost: {credits}, charged only when it found at least one URL."

    def search_cost(self) -> str:
        if self.search is None:
            known = "is off on this service" if self.read_from_service else "may be off"
            return f"Search {known} (no search backend): the call then answers an error."
        credits = int(self.search.get("credits", 0))
        return (
            f"Cost: {credits} credit{'' if credits == 1 else 's'} a search that found anything, "
            f"plus each scraped page at its price. {self.table()}."
        )

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
        listed_map = listed.get("map_credits")
        search = listed.get("search")
        map_credits = DEFAULT_MAP_CREDITS if listed_map is None else int(listed_map)
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
        return Prices()
    return Prices(
        costs=costs,
        map_credits=map_credits,
        read_from_service=True,
        map_read_from_service=listed_map is not None,
        search=search if isinstance(search, dict) else None,
    )


def dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        # what the API answered, not the fields it left out (outputs that were not asked for)
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, list | tuple):
        return [dump(item) for item in value]
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
    except ConnectionFailed as exc:
        raise ToolError(unreachable(base_url, exc.message)) from None
    except ScrapespyError as exc:
        raise ToolError(error_message(exc)) from None
    except httpx.HTTPError as exc:
        raise ToolError(unreachable(base_url, str(exc))) from None


def unreachable(base_url: str, why: str) -> str:
    return f"could not reach the scrapespy service at {base_url} (SCRAPESPY_URL): {why}"


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


def job_started(job: dict[str, Any], pages: int | None) -> dict[str, Any]:
    what = "the crawl's pages are"
    if pages is not None:
        what = "1 page is" if pages == 1 else f"{pages} pages are"
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
