"""Brave Search API (``SCRAPESPY_BRAVE_API_KEY``, at ``SCRAPESPY_BRAVE_BASE_URL``): its web, news
and images endpoints, ``GET /res/v1/{web,news,images}/search``, with the key in the
``X-Subscription-Token`` header.

Web answers at most 20 results a call (``count``) and pages by ``offset`` (in pages, at most 9),
so a ``limit`` over 20 takes several calls; news takes ``count`` up to 50 and images up to 200,
in one call. ``country`` and ``search_lang`` come from the query; ``tbs`` is ``freshness``
(``pd``, ``pw``, ``pm``, ``py``: Brave has no hour, the past hour asks for the past day).
Answers: ``web.results[]`` (web), ``results[]`` (news, images), each with ``url``, ``title``,
``description`` (its ``<strong>`` marks taken out), ``age``; an image's picture is
``properties.url``, with ``properties.width`` and ``height`` when Brave gives them.
"""

from __future__ import annotations

import html
import re
from typing import Any

from service.core.config import Config
from service.search.backend import (
    BackendFailed,
    Found,
    JsonEndpoint,
    Query,
    each_source,
    listed,
    number,
    text,
)

FRESHNESS = {"qdr:h": "pd", "qdr:d": "pd", "qdr:w": "pw", "qdr:m": "pm", "qdr:y": "py"}
WEB_PAGE = 20
MAX_OFFSET = 9
NEWS_MAX, IMAGES_MAX = 50, 200
_TAG = re.compile(r"<[^>]*>")


def plain(value: str) -> str:
    """Brave marks the query's words in ``<strong>``; the answer shows plain text."""
    return html.unescape(_TAG.sub("", value))


def item(source: str, result: dict[str, Any]) -> dict[str, Any] | None:
    url = text(result, "url")
    if not url:
        return None
    if source == "images":
        given = result.get("properties")
        properties: dict[str, Any] = given if isinstance(given, dict) else {}
        return {
            "url": url,
            "title": text(result, "title"),
            "image_url": text(properties, "url") or None,
            "image_width": number(properties.get("width")),
            "image_height": number(properties.get("height")),
        }
    found = {
        "url": url,
        "title": plain(text(result, "title")),
        "description": plain(text(result, "description")),
    }
    if text(result, "age", "page_age"):
        found["date"] = text(result, "age", "page_age")
    return found


class BraveBackend:
    name = "brave"

    def __init__(self, config: Config) -> None:
        self.endpoint = JsonEndpoint(
            config, config.brave_base_url, {"X-Subscription-Token": config.brave_api_key}
        )

    async def search(self, query: Query) -> Found:
        return await each_source(query, self._source)

    def _params(self, query: Query, source: str) -> dict[str, Any]:
        params: dict[str, Any] = {"q": query.text}
        if query.country is not None:
            params["country"] = query.country.lower()
        if query.lang is not None:
            params["search_lang"] = query.lang.split("-")[0]
        if query.tbs is not None and source != "images":
            params["freshness"] = FRESHNESS[query.tbs]
        return params

    async def _source(self, query: Query, source: str) -> list[dict[str, Any]]:
        params = self._params(query, source)
        path = f"/res/v1/{source}/search"
        if source != "web":
            params["count"] = min(query.limit, NEWS_MAX if source == "news" else IMAGES_MAX)
            answer = await self.endpoint.call("GET", path, query.timeout, params=params)
            if not isinstance(answer, dict) or answer.get("type") != source:
                raise BackendFailed(f"{path}: not Brave's answer (type is not {source!r})")
            return [one for r in listed(answer, "results") if (one := item(source, r))][
                : query.limit
            ]
        items: list[dict[str, Any]] = []
        for offset in range(MAX_OFFSET + 1):
            params |= {"count": min(WEB_PAGE, query.limit), "offset": offset}
            answer = await self.endpoint.call("GET", path, query.timeout, params=params)
            page = [one for r in listed(answer, "web", "results") if (one := item(source, r))]
            items.extend(page)
            if len(items) >= query.limit or len(page) < params["count"]:
                break
        return items[: query.limit]
