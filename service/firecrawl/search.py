"""Firecrawl's ``POST /v1/search`` and ``POST /v2/search``, translated to the native search
(service.search.searcher) and back, as Firecrawl's ``controllers/v2/types.ts``
(``searchRequestSchema``) and ``controllers/v{1,2}/search.ts`` shape them.

v2 takes ``sources`` as names or as objects (``{"type": "news"}``), ``tbs``, ``lang``,
``country``, ``timeout`` in milliseconds, ``includeDomains`` / ``excludeDomains`` and
``scrapeOptions``; the web results are scraped only when ``scrapeOptions.formats`` names a
format, as Firecrawl does, and a scraped result is the result's fields with its document's.
It answers ``{"success", "data": {"web", "news", "images"}, "creditsUsed"}``, with the sources
asked. v1 answers ``data`` as a list of documents (``url``, ``title``, ``description``, and the
document's fields when scraped). What Firecrawl's hosted search offers and no backend here does
(``categories``, ``location`` as a place name, ``filter``) is refused with a 400 naming it, or
for bookkeeping fields (``origin``, ``integration``) ignored.
"""

from __future__ import annotations

from typing import Any

from service.core.errors import BadRequest
from service.firecrawl.options import Version, firecrawl_message, native_scrape
from service.firecrawl.scrape import document

# bookkeeping, and Firecrawl's catalogue of data providers (Alexandria: ``domainTools``,
# ``toolDetail``, the ``alexandria`` source), which its MCP server asks for by default and this
# server has not: the web results are answered without ``data.tools``
IGNORED = frozenset(
    {
        "origin",
        "integration",
        "ignoreInvalidURLs",
        "threatProtection",
        "__searchPreviewToken",
        "domainTools",
        "toolDetail",
        "highlights",
    }
)
CATALOGUE = "alexandria"
REFUSED = {
    "categories": "search categories",
    "filter": "a search filter",
    "location": "a search location by place name (give country)",
}
KNOWN = frozenset(
    {
        "query",
        "limit",
        "tbs",
        "sources",
        "lang",
        "country",
        "timeout",
        "scrapeOptions",
        "includeDomains",
        "excludeDomains",
        *IGNORED,
        *REFUSED,
    }
)
NATIVE_SCRAPE_DROPPED = ("url", "max_age")


def _sources(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise BadRequest("invalid request: 'sources': must be a list")
    names = []
    for source in value:
        if isinstance(source, dict):
            source = source.get("type")
        if source != CATALOGUE:
            names.append(source)
    return names


def native_search(data: dict[str, Any], version: Version) -> tuple[dict[str, Any], bool]:
    """The native ``POST /search`` body of Firecrawl's search ``data``, and whether its web
    results are scraped."""
    unknown = sorted(set(data) - KNOWN)
    if unknown:
        raise BadRequest(f"invalid request: unrecognized key in body: {unknown[0]!r}")
    for name, what in REFUSED.items():
        if data.get(name) not in (None, [], ""):
            raise BadRequest(f"invalid request: '{name}': {what} is not offered by this server")
    native: dict[str, Any] = {"query": data.get("query")}
    if "limit" in data:
        native["limit"] = data["limit"]
    if version == 2 and "sources" in data:
        native["sources"] = _sources(data["sources"])
    for name in ("tbs", "lang"):
        if data.get(name) is not None:
            native[name] = data[name]
    country = data.get("country")
    if isinstance(country, str) and len(country) == 2:
        native["country"] = country
    elif country is not None:
        native["country"] = country  # refused by the native check, which names it
    timeout = data.get("timeout")
    if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0:
        native["timeout"] = min(timeout / 1000, 120)
    elif timeout is not None:
        raise BadRequest("invalid request: 'timeout': milliseconds, a positive integer")
    for ours, theirs in (
        ("include_domains", "includeDomains"),
        ("exclude_domains", "excludeDomains"),
    ):
        if data.get(theirs):
            native[ours] = data[theirs]
    options = data.get("scrapeOptions") or {}
    if not isinstance(options, dict):
        raise BadRequest("invalid request: 'scrapeOptions': must be an object")
    scraped = bool(options.get("formats"))
    if scraped:
        try:
            scrape = native_scrape(options, version)
        except BadRequest as error:
            raise BadRequest(firecrawl_message(error.message)) from None
        native["scrape"] = {k: v for k, v in scrape.items() if k not in NATIVE_SCRAPE_DROPPED}
    return native, scraped


def _web(item: dict[str, Any], options: dict[str, Any], version: Version) -> dict[str, Any]:
    shown: dict[str, Any] = {
        k: item[k] for k in ("url", "title", "description", "position") if k in item
    }
    page = item.get("page")
    if page is not None:
        doc = document(page, options, version)
        shown |= {k: v for k, v in doc.items() if k not in shown}
    return shown


def _news(item: dict[str, Any]) -> dict[str, Any]:
    shown = {"title": item["title"], "url": item["url"], "snippet": item.get("description", "")}
    if item.get("date"):
        shown["date"] = item["date"]
    return shown | {"position": item["position"]}


def _image(item: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {"title": item["title"], "url": item["url"]}
    for ours, theirs in (
        ("image_url", "imageUrl"),
        ("image_width", "imageWidth"),
        ("image_height", "imageHeight"),
    ):
        if item.get(ours) is not None:
            shown[theirs] = item[ours]
    return shown | {"position": item["position"]}


def firecrawl_answer(
    answer: dict[str, Any], data: dict[str, Any], sources: list[str], version: Version
) -> dict[str, Any]:
    """Firecrawl's answer to a search whose native answer is ``answer``."""
    options = data.get("scrapeOptions") or {}
    web = [_web(item, options, version) for item in answer["web"]]
    if version == 1:
        return {"success": True, "data": web, "creditsUsed": answer["credits_charged"]}
    found: dict[str, Any] = {}
    if "web" in sources:
        found["web"] = web
    if "news" in sources:
        found["news"] = [_news(item) for item in answer["news"]]
    if "images" in sources:
        found["images"] = [_image(item) for item in answer["images"]]
    return {"success": True, "data": found, "creditsUsed": answer["credits_charged"]}
