"""Firecrawl's scrape options as a native scrape request, and a native result as Firecrawl's
document.

v1 and v2 differ in a few names and shapes (v2's formats may be objects, v2's ``links`` are
strings); :func:`native_scrape` and :func:`document` take the version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from service.core.errors import BadRequest
from service.scrape.results import ScrapeResult

Version = Literal[1, 2]

# what the SDKs add to every request for their own bookkeeping: accepted, ignored
BOOKKEEPING = frozenset({"origin", "integration"})

# Firecrawl's format -> the native format that makes it (None: made from the native result)
FORMATS: dict[str, str | None] = {
    "markdown": "markdown",
    "html": "html",
    "rawHtml": "raw_html",
    "links": None,
}


def _format_names(value: Any) -> list[str]:
    if value is None:
        return ["markdown"]
    if not isinstance(value, list):
        raise BadRequest("invalid request: formats: must be a list")
    names = []
    for item in value:
        name = item.get("type") if isinstance(item, dict) else item
        if not isinstance(name, str):
            raise BadRequest("invalid request: formats: each is a string or an object with type")
        if name not in FORMATS:
            raise BadRequest(f"invalid request: formats: {name!r} is not supported")
        names.append(name)
    return names


def native_scrape(data: dict[str, Any], version: Version) -> dict[str, Any]:
    """The native ``POST /scrape`` body for Firecrawl's scrape ``data`` (url and options)."""
    options = {k: v for k, v in data.items() if k not in BOOKKEEPING}
    url = options.pop("url", None)
    formats = _format_names(options.pop("formats", None))
    only_main = options.pop("onlyMainContent", True)
    if options:
        raise BadRequest(f"unknown field {sorted(options)[0]!r}")
    native: dict[str, Any] = {
        "url": url,
        "formats": sorted({FORMATS[name] for name in formats if FORMATS[name]}),
        "only_main_content": only_main,
    }
    return native


def _field(result: ScrapeResult | Mapping[str, Any], name: str) -> Any:
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


def document(
    result: ScrapeResult | Mapping[str, Any], data: Mapping[str, Any], version: Version
) -> dict[str, Any]:
    """Firecrawl's document of ``result`` (a native result, or its JSON as jobs store it), the
    answer to Firecrawl's scrape options ``data``."""
    formats = _format_names(data.get("formats"))
    doc: dict[str, Any] = {}
    for name, field in (("markdown", "markdown"), ("html", "html"), ("rawHtml", "raw_html")):
        if name in formats:
            doc[name] = _field(result, field)
    if "links" in formats:
        doc["links"] = [link["href"] for link in _field(result, "links") or ()]
    meta = _field(result, "meta") or {}
    doc["metadata"] = {
        "title": _field(result, "title"),
        "description": meta.get("description"),
        "sourceURL": _field(result, "url"),
        "url": _field(result, "final_url"),
        "statusCode": _field(result, "status_code"),
        "error": _field(result, "error"),
        "proxyUsed": "stealth" if _field(result, "tier_used") == "residential" else "basic",
        "cacheState": "hit" if _field(result, "cached") else "miss",
        "creditsUsed": _field(result, "credits_charged"),
    }
    return doc
