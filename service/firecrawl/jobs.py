"""Firecrawl's crawl, batch scrape and map requests as native jobs (service.jobs), and a map's
answer (a job's answers are service.firecrawl.job_answers).

Each Firecrawl field becomes the native field that does the same, is accepted when its value is
what scrapespy does anyway (the SDKs send several by default), or is a 400 naming it when it
asks for what scrapespy cannot do; nothing is accepted and then ignored. A job's pages are
shown with the Firecrawl scrape options it was made with, kept in its stored options under
``firecrawl`` (service.jobs.page_runs.NOT_SCRAPING).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from service.core.config import Config
from service.core.errors import BadRequest
from service.firecrawl.options import BOOKKEEPING
from service.firecrawl.scrape import Version, native_scrape
from service.firecrawl.webhooks import native_webhook
from service.jobs.crawl_rules import MAX_DEPTH, MAX_PAGES, MAX_PATTERN_LENGTH, normalised
from service.jobs.crawl_rules import MAX_URLS as MAX_MAP_URLS

# Firecrawl's crawl field -> the native crawl field that does the same
CRAWL_FIELDS: dict[str, str] = {
    "limit": "max_pages",
    "includePaths": "include_paths",
    "excludePaths": "exclude_paths",
    "maxDiscoveryDepth": "max_depth",
    "allowSubdomains": "allow_subdomains",
    "sitemap": "sitemap",
}
# ... and the native names in a native 400, told back by their Firecrawl names
NATIVE_NAMES: dict[str, str] = {
    **{native: name for name, native in CRAWL_FIELDS.items()},
    "respect_robots": "ignoreRobotsTxt",
    "max_urls": "limit",
    "allow_subdomains": "includeSubdomains",
}
# fields accepted only with these values, which are what scrapespy does anyway
AS_WE_DO: dict[str, tuple[Any, ...]] = {
    "allowExternalLinks": (False,),
    "ignoreQueryParameters": (False,),
    "regexOnFullURL": (False,),
    "zeroDataRetention": (False,),
    # scrapespy drops a URL already in the job; near-duplicates are pages of their own
    "deduplicateSimilarURLs": (True, False),
}
# ... and a map's
MAP_AS_WE_DO: dict[str, tuple[Any, ...]] = {
    # a map here never reads an index; it filters by the rules it is given
    "useIndex": (True, False),
    "filterByPath": (True,),
}
# fields asking for what scrapespy cannot do
REFUSED: dict[str, str] = {
    "prompt": "crawls driven by a prompt are not supported",
    "robotsUserAgent": "robots.txt is read for scrapespy's own user agent",
    "appendToId": "a batch cannot be added to",
    "location": "a location is not supported",
    "useMock": "mocks are not supported",
    "auditMetadata": "audit metadata is not supported",
}
# the fields of the other version's crawl, which this version's has not
NOT_OF_VERSION: dict[Version, frozenset[str]] = {
    1: frozenset({"sitemap", "prompt"}),
    2: frozenset({"maxDepth", "ignoreSitemap", "allowBackwardLinks"}),
}
# a crawl's own fields as the caller sent them, kept beside its scrape options under a name
# that no scrape option has (service.firecrawl.scrape.document reads only the formats, the
# actions and the proxy)
CRAWLER_OPTIONS = "crawlerOptions"
NOT_CRAWLER = frozenset({"url", "scrapeOptions", "webhook"})
DEFAULT_MAP_URLS = 5000  # Firecrawl's default limit of a map
_QUOTED = re.compile(r"'([a-z_]+)'")


def invalid(name: str, why: str) -> BadRequest:
    return BadRequest(f"invalid request: {name!r}: {why}")


def told_by_firecrawl_names(error: BadRequest) -> BadRequest:
    """A native 400 with the fields named as the caller named them."""
    message = _QUOTED.sub(lambda m: f"'{NATIVE_NAMES.get(m[1], m[1])}'", error.message)
    return BadRequest(message)


def _own(data: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in data.items() if name not in BOOKKEEPING}


def _settled(fields: dict[str, Any], as_we_do: Mapping[str, tuple[Any, ...]] = AS_WE_DO) -> None:
    """Takes out the fields scrapespy does anyway; a 400 for those it cannot do."""
    for name in list(fields):
        if name in REFUSED:
            raise invalid(name, REFUSED[name])
        if name in as_we_do:
            value = fields.pop(name)
            if not any(value is ok for ok in as_we_do[name]):
                allowed = " or ".join(str(ok).lower() for ok in as_we_do[name])
                raise invalid(name, f"only {allowed} is supported")


def _unknown(fields: Mapping[str, Any]) -> None:
    if fields:
        raise BadRequest(f"unknown field {sorted(fields)[0]!r}")


def _bool(fields: dict[str, Any], name: str, default: bool) -> bool:
    value = fields.pop(name, default)
    if not isinstance(value, bool):
        raise invalid(name, "must be true or false")
    return value


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise invalid(name, "must be a positive number")
    return float(value)


def _scrape_options(options: Any, url: Any, version: Version) -> dict[str, Any]:
    """The native scrape options (without the URL) for Firecrawl's scrape options."""
    if not isinstance(options, dict):
        raise invalid("scrapeOptions", "must be an object")
    native = native_scrape({**options, "url": url}, version)
    native.pop("url", None)
    return native


# POST /crawl ------------------------------------------------------------------------------


def native_crawl(
    data: Mapping[str, Any], version: Version, config: Config
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The native ``POST /crawl`` body for Firecrawl's crawl ``data``, and the Firecrawl scrape
    options its pages are shown with (with the crawl's own fields, under
    :data:`CRAWLER_OPTIONS`, for ``GET /crawl/active``)."""
    fields = _own(data)
    crawler = {name: value for name, value in fields.items() if name not in NOT_CRAWLER}
    for name in NOT_OF_VERSION[version]:
        if name in fields:
            raise BadRequest(f"unknown field {name!r} (a field of /v{3 - version}/crawl)")
    url = fields.pop("url", None)
    shown = fields.pop("scrapeOptions", None) or {}
    body: dict[str, Any] = {"url": url, **_scrape_options(shown, url, version)}
    _settled(fields)
    for name, native in CRAWL_FIELDS.items():
        if name in fields:
            body[native] = fields.pop(name)
    body.setdefault("max_pages", MAX_PAGES)  # Firecrawl's default limit is 10,000
    body.setdefault("max_depth", MAX_DEPTH)  # ... and its discovery depth unbounded
    body["respect_robots"] = not _bool(fields, "ignoreRobotsTxt", False)
    if _bool(fields, "ignoreSitemap", False):
        body["sitemap"] = "skip"
    entire = _bool(fields, "allowBackwardLinks", False)
    entire = _bool(fields, "crawlEntireDomain", entire)
    start = urlsplit(url).path if isinstance(url, str) else "/"
    if not entire and start not in ("", "/"):
        outside = _outside(start)
        excludes = body.get("exclude_paths") or []
        includes = body.get("include_paths") or [""]
        if len(outside) > MAX_PATTERN_LENGTH and isinstance(includes, list):
            # a long start path: each include must match after it (not within it)
            body["include_paths"] = [f"^{re.escape(start)}.*?(?:{one})" for one in includes]
        elif isinstance(excludes, list):  # else the native check says what is wrong
            body["exclude_paths"] = [*excludes, outside]
    if "maxDepth" in fields:
        body["exclude_paths"] = [
            *(body.get("exclude_paths") or []),
            _deeper_than(start, fields.pop("maxDepth")),
        ]
    if "delay" in fields:
        _delay(_positive(fields.pop("delay"), "delay"), config)
    if "maxConcurrency" in fields:
        most = _positive(fields.pop("maxConcurrency"), "maxConcurrency")
        if most < config.crawl_pages_per_site:
            raise invalid(
                "maxConcurrency",
                f"a crawl here fetches up to {config.crawl_pages_per_site} pages of its site "
                "at once; a lower limit is not supported",
            )
    if "webhook" in fields:
        body["webhook"] = native_webhook(fields.pop("webhook"), version)
    _unknown(fields)
    return body, {**shown, CRAWLER_OPTIONS: crawler}


def _outside(start: str) -> str:
    """The pattern of the paths not under ``start``: Firecrawl's crawl leaves the start URL's
    path only with ``crawlEntireDomain``. An exclude, as RE2 (which runs the patterns,
    service.extraction.patterns) has no lookahead to put ``start`` in front of each include:
    ``^(?:$|[^/]|/(?:$|[^d]|d...))``, the path ends or differs at some character of ``start``."""
    tail = ""
    for char in reversed(start):
        escaped = re.escape(char)
        tail = f"(?:$|[^{escaped}]|{escaped}{tail})" if tail else f"(?:$|[^{escaped}])"
    return "^" + tail


def _deeper_than(start: str, most: Any) -> str:
    """v1's ``maxDepth``: the path segments a page may have beyond the start URL's, as the
    pattern of the paths that have more."""
    if isinstance(most, bool) or not isinstance(most, int) or most < 0:
        raise invalid("maxDepth", "must be a whole number, 0 or more")
    segments = len([part for part in start.split("/") if part])
    # RE2 counts up to 1000; a URL is too short for that many segments anyway
    return f"^(?:/+[^/]+){{{min(segments + most, 1000)}}}/+[^/]"


def _delay(seconds: float, config: Config) -> None:
    """A delay is honoured when this service already waits that long between a crawl's
    fetches at its site, one at a time."""
    if config.crawl_pages_per_site == 1 and seconds <= config.crawl_delay_seconds:
        return
    raise invalid(
        "delay",
        f"a crawl here waits {config.crawl_delay_seconds:g} s before each of its fetches, up "
        f"to {config.crawl_pages_per_site} at once; a longer delay is not supported",
    )


# POST /batch/scrape -----------------------------------------------------------------------


def native_batch(
    data: Mapping[str, Any], version: Version
) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    """The native ``POST /batch`` body for Firecrawl's batch scrape ``data``, the Firecrawl
    scrape options its pages are shown with, and the URLs left out as invalid (v2 leaves
    them out unless ``ignoreInvalidURLs`` is false; v1 only when it is true): a list, maybe
    empty, when they were to be left out, as Firecrawl's ``invalidURLs``; else None."""
    fields = _own(data)
    urls = fields.pop("urls", None)
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        raise invalid("urls", "must be a list of URLs (strings)")
    ignoring = _bool(fields, "ignoreInvalidURLs", version == 2)
    webhook = fields.pop("webhook", None)
    if "maxConcurrency" in fields:
        raise invalid("maxConcurrency", "a batch's pages run at this service's job concurrency")
    _settled(fields)
    kept = [url for url in urls if normalised(url) is not None] if ignoring else urls
    left_out = [url for url in urls if url not in kept] if ignoring else None
    if not kept:
        raise invalid("urls", "none is an http(s) URL")
    body = {**_scrape_options(fields, kept[0], version), "urls": kept}
    if webhook is not None:
        body["webhook"] = native_webhook(webhook, version)
    return body, fields, left_out


# POST /map --------------------------------------------------------------------------------


def native_map(data: Mapping[str, Any], version: Version) -> tuple[dict[str, Any], MapAsk]:
    """The native ``POST /map`` body for Firecrawl's map ``data``, and what Firecrawl's map
    asks besides (its ``timeout``, and what is done to the native answer's URLs)."""
    fields = _own(data)
    timeout = fields.pop("timeout", None)
    seconds = None if timeout is None else _positive(timeout, "timeout") / 1000
    plain_query = _bool(fields, "ignoreQueryParameters", True)
    search = fields.pop("search", None)
    if search is not None and not isinstance(search, str):
        raise invalid("search", "must be a string")
    limit = fields.pop("limit", DEFAULT_MAP_URLS)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_MAP_URLS:
        raise invalid("limit", f"must be a whole number from 1 to {MAX_MAP_URLS}")
    body: dict[str, Any] = {
        "url": fields.pop("url", None),
        "allow_subdomains": _bool(fields, "includeSubdomains", True),
        "max_urls": MAX_MAP_URLS if search or plain_query else limit,
    }
    if version == 2 and "sitemap" in fields:
        body["sitemap"] = fields.pop("sitemap")
    if _bool(fields, "ignoreSitemap", False):
        body["sitemap"] = "skip"
    if _bool(fields, "sitemapOnly", False):
        body["sitemap"] = "only"
    for name in ("includePaths", "excludePaths"):
        if name in fields:
            body[CRAWL_FIELDS[name]] = fields.pop(name)
    if "ignoreRobotsTxt" in fields:
        body["respect_robots"] = not _bool(fields, "ignoreRobotsTxt", False)
    _settled(fields, {**AS_WE_DO, **MAP_AS_WE_DO})
    _unknown(fields)
    return body, MapAsk(search, plain_query, limit, seconds)


class MapAsk:
    """Firecrawl's map fields that the native map has not: ``timeout`` (the map's, in
    seconds here), and those that apply to the URLs found: ``search`` keeps those that
    contain it (case apart), ``ignoreQueryParameters`` counts URLs apart from their query
    as one, and ``limit`` keeps the first so many."""

    def __init__(self, search: str | None, plain_query: bool, limit: int, seconds: float | None):
        self.search = (search or "").casefold()
        self.plain_query = plain_query
        self.limit = limit
        self.seconds = seconds

    def __call__(self, urls: list[str]) -> list[str]:
        kept: dict[str, None] = {}
        for url in urls:
            if self.plain_query:
                url = urlunsplit(urlsplit(url)._replace(query=""))
            if self.search in url.casefold():
                kept[url] = None
        return list(kept)[: self.limit]


def map_answer(urls: list[str], error: str | None, version: Version) -> dict[str, Any]:
    """v1's links are strings, v2's objects; a map that found nothing says why."""
    links: list[Any] = urls if version == 1 else [{"url": url} for url in urls]
    answer: dict[str, Any] = {"success": True, "links": links}
    if error:
        answer["warning"] = error
    return answer
