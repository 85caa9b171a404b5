"""SearXNG: an instance's JSON API, ``GET /search?format=json`` (``SCRAPESPY_SEARXNG_URL``).

A source is a SearXNG category (web is ``general``); ``lang`` and ``country`` make its
``language`` (``en-US``); ``tbs`` its ``time_range`` (SearXNG has no hour: the past hour asks
for the past day, and results older than an hour may come); and since an instance answers one
page of about ten results at a time, further ``pageno`` pages are asked until ``limit`` is
reached, a page brings nothing new, or :data:`MAX_PAGES` were read. The instance must have the
``json`` format enabled (``search.formats`` in its settings.yml); one that answers HTML is a
failed backend. An answer's fields are those of SearXNG's ``webapp.py`` JSON: ``results[]``
with ``url``, ``title``, ``content``, ``publishedDate``, and ``img_src``, ``resolution`` for
images.
"""

from __future__ import annotations

import re
from typing import Any

from service.core.config import Config
from service.search.backend import Found, JsonEndpoint, Query, each_source, listed, text

CATEGORIES = {"web": "general", "news": "news", "images": "images"}
TIME_RANGES = {"qdr:h": "day", "qdr:d": "day", "qdr:w": "week", "qdr:m": "month", "qdr:y": "year"}
MAX_PAGES = 10
_RESOLUTION = re.compile(r"^\s*(\d+)\s*[x×]\s*(\d+)\s*$")


def language(query: Query) -> str | None:
    if query.lang is None:
        return None
    if query.country is None or "-" in query.lang:
        return query.lang
    return f"{query.lang}-{query.country.upper()}"


def item(source: str, result: dict[str, Any]) -> dict[str, Any] | None:
    url = text(result, "url")
    if not url:
        return None
    if source == "images":
        found: dict[str, Any] = {
            "url": url,
            "title": text(result, "title"),
            "image_url": text(result, "img_src") or None,
            "image_width": None,
            "image_height": None,
        }
        size = _RESOLUTION.match(text(result, "resolution"))
        if size:  # every backend's image has the same fields, null when it gives no size
            found["image_width"], found["image_height"] = int(size[1]), int(size[2])
        return found
    found = {"url": url, "title": text(result, "title"), "description": text(result, "content")}
    if result.get("publishedDate"):
        found["date"] = text(result, "publishedDate") or None
    return found


class SearxngBackend:
    name = "searxng"

    def __init__(self, config: Config) -> None:
        self.endpoint = JsonEndpoint(config, config.searxng_url, {})

    async def search(self, query: Query) -> Found:
        return await each_source(query, self._source)

    async def _source(self, query: Query, source: str) -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "q": query.text,
            "format": "json",
            "categories": CATEGORIES[source],
        }
        if language(query):
            params["language"] = language(query)
        if query.tbs is not None:
            params["time_range"] = TIME_RANGES[query.tbs]
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            params["pageno"] = page
            answer = await self.endpoint.call("GET", "/search", query.timeout, params=params)
            new = 0
            for result in listed(answer, "results"):
                one = item(source, result)
                if one is None or one["url"] in seen:
                    continue
                seen.add(one["url"])
                items.append(one)
                new += 1
            if len(items) >= query.limit or new == 0:
                break
        return items[: query.limit]
