"""Serper's Google results (``SCRAPESPY_SERPER_API_KEY``, at ``SCRAPESPY_SERPER_BASE_URL``):
``POST /search``, ``/news`` and ``/images`` with a JSON body and the key in ``X-API-KEY``.

The body is ``q``, ``num`` (up to 100 in one call), ``gl`` (country), ``hl`` (language) and
``tbs`` as Google takes it (``qdr:h`` and the rest pass unchanged). Answers: ``organic[]``
(``link``, ``title``, ``snippet``, ``position``, ``date``), ``news[]`` (the same), ``images[]``
(``link`` the page, ``imageUrl``, ``imageWidth``, ``imageHeight``, ``title``). Google may answer
fewer than ``num`` (Serper pages by ten on some plans): further ``page`` calls are made until
``limit`` is reached, a page brings nothing new, or :data:`MAX_PAGES` were read.
"""

from __future__ import annotations

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

PATHS = {"web": ("/search", "organic"), "news": ("/news", "news"), "images": ("/images", "images")}
MAX_NUM = 100
MAX_PAGES = 10


def item(source: str, result: dict[str, Any]) -> dict[str, Any] | None:
    url = text(result, "link")
    if not url:
        return None
    if source == "images":
        return {
            "url": url,
            "title": text(result, "title"),
            "image_url": text(result, "imageUrl") or None,
            "image_width": number(result.get("imageWidth")),
            "image_height": number(result.get("imageHeight")),
        }
    found = {"url": url, "title": text(result, "title"), "description": text(result, "snippet")}
    if text(result, "date"):
        found["date"] = text(result, "date")
    return found


class SerperBackend:
    name = "serper"

    def __init__(self, config: Config) -> None:
        self.endpoint = JsonEndpoint(
            config, config.serper_base_url, {"X-API-KEY": config.serper_api_key}
        )

    async def search(self, query: Query) -> Found:
        return await each_source(query, self._source)

    async def _source(self, query: Query, source: str) -> list[dict[str, Any]]:
        path, key = PATHS[source]
        body: dict[str, Any] = {"q": query.text, "num": min(query.limit, MAX_NUM)}
        if query.country is not None:
            body["gl"] = query.country.lower()
        if query.lang is not None:
            body["hl"] = query.lang
        if query.tbs is not None and source != "images":
            body["tbs"] = query.tbs
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            body["page"] = page
            answer = await self.endpoint.call("POST", path, query.timeout, body=body)
            if not isinstance(answer, dict) or "searchParameters" not in answer:
                raise BackendFailed(f"{path}: not Serper's answer (no searchParameters)")
            before = len(items)
            for one in (item(source, r) for r in listed(answer, key)):
                if one is not None and one["url"] not in seen:
                    seen.add(one["url"])
                    items.append(one)
            if len(items) >= query.limit or len(items) == before:
                break
        return items[: query.limit]
