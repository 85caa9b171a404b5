"""The interface every search backend answers, and the one HTTP call they all make.

A backend turns a :class:`Query` into :class:`Found`: each source's items in the backend's order,
as plain dicts of the answer's fields (``url``, ``title``, ``description`` for web and news;
``url``, ``title``, ``image_url``, ``image_width``, ``image_height`` for images; ``date`` where the
backend gives one). Whatever goes wrong between the service and the backend (refused, timed out,
a status that is not 200, a body that is not the JSON it documents) is :class:`BackendFailed`,
which the caller sees as a 503 ``search_unavailable``, and nothing is billed.

The call is httpx's asyncio client on the reactor's own loop, as the language model's is
(service.extraction.llm): the backend is the operator's own endpoint, so it is not a target and
does not go through the egress guard (a SearXNG on the operator's private network must work).
Its key travels in a header only, never in a message or a log line here.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from service.core.config import Config

SOURCES = ("web", "news", "images")


@dataclass(frozen=True, slots=True)
class Query:
    """What the backends are asked: one query, for ``sources``, up to ``limit`` of each."""

    text: str
    sources: tuple[str, ...]
    limit: int
    lang: str | None = None
    country: str | None = None
    tbs: str | None = None  # qdr:h|d|w|m|y
    timeout: float = 20.0


@dataclass(slots=True)
class Found:
    web: list[dict[str, Any]] = field(default_factory=list)
    news: list[dict[str, Any]] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    elapsed_ms: int = 0  # the backend's own time, in the answer's timings

    def of(self, source: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = getattr(self, source)
        return items

    def count(self) -> int:
        return len(self.web) + len(self.news) + len(self.images)


async def each_source(
    query: Query, source_items: Callable[[Query, str], Awaitable[list[dict[str, Any]]]]
) -> Found:
    """What every backend does with a query: each source asked in turn, timed as a whole."""
    started = time.monotonic()
    found = Found()
    for source in query.sources:
        found.of(source).extend(await source_items(query, source))
    found.elapsed_ms = int((time.monotonic() - started) * 1000)
    return found


class BackendFailed(Exception):
    """The backend did not answer usably; the message is the operator's (logged), never the
    caller's, and never carries the key."""


class SearchBackend(Protocol):
    name: str

    async def search(self, query: Query) -> Found:
        """Each of ``query.sources``, at most ``query.limit`` items each; raises
        :class:`BackendFailed`."""
        ...


class JsonEndpoint:
    """One backend's base URL and headers, and its calls that answer JSON."""

    def __init__(self, config: Config, base_url: str, headers: dict[str, str]) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = httpx.AsyncClient(
            headers={"Accept": "application/json", **headers},
            follow_redirects=False,
            trust_env=False,
        )

    async def call(
        self,
        method: str,
        path: str,
        timeout: float,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """The JSON the backend answered to ``method path``; :class:`BackendFailed` for
        anything else (the key is in the client's headers, so it is in no message)."""
        try:
            answer = await self.client.request(
                method, self.base_url + path, params=params, json=body, timeout=timeout
            )
        except httpx.TimeoutException:
            raise BackendFailed(f"{path}: no answer within {timeout:g} s") from None
        except httpx.HTTPError as error:
            raise BackendFailed(f"{path}: {type(error).__name__}") from None
        if answer.status_code != 200:
            raise BackendFailed(f"{path}: status {answer.status_code}")
        try:
            return answer.json()
        except ValueError:
            raise BackendFailed(f"{path}: the answer is not JSON") from None

    async def close(self) -> None:
        await self.client.aclose()


def listed(answer: Any, *path: str) -> list[dict[str, Any]]:
    """``answer[path...]`` when it is a list of objects (the backend's documented shape), [] when
    the key is absent; :class:`BackendFailed` when the answer is not shaped so."""
    here = answer
    for key in path:
        if not isinstance(here, dict):
            raise BackendFailed(f"the answer has no object around {key!r}")
        here = here.get(key)
        if here is None:
            return []
    if not isinstance(here, list) or not all(isinstance(item, dict) for item in here):
        raise BackendFailed(f"{'.'.join(path)} is not a list of objects")
    return here


def text(item: dict[str, Any], *names: str) -> str:
    """The first of ``names`` that ``item`` has as a string, or ''."""
    for name in names:
        value = item.get(name)
        if isinstance(value, str):
            return value
    return ""


def number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
