"""The backend's items as the answer shows them: kept to ``http(s)`` URLs a scrape would take,
filtered by the request's domains, deduplicated by URL within each source, cut to ``limit``
and numbered from 1 (``position``).

What the backend is asked for makes room for that: the domains go into the query as the
``site:`` and ``-site:`` operators Google, Brave and SearXNG's engines understand (as Firecrawl
asks its own), and more items than ``limit`` are asked (:func:`asked_count`), so that the
duplicates and the results off the domains that the engine still gives do not leave the answer
short."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from service.core.schemas import _HTTP_URL, MAX_URL_LENGTH
from service.core.schemas.search import SearchRequest


def host_of(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.rstrip(".") if host else None


def on(host: str, domains: list[str]) -> bool:
    """Whether ``host`` is one of ``domains`` or under one of them."""
    return any(host == domain or host.endswith("." + domain) for domain in domains)


# items asked beyond ``limit``: for duplicates and non-web URLs, and, with domain filters, for
# the results an engine gives outside them (as many again as the limit)
SPARE = 5


def asked_count(request: SearchRequest) -> int:
    filtered = request.include_domains is not None or request.exclude_domains is not None
    return min(MAX_ASKED, request.limit * 2 if filtered else request.limit + SPARE)


MAX_ASKED = 200


def asked_text(request: SearchRequest) -> str:
    """The query as the backend gets it: the caller's, and the domains as operators."""
    if request.include_domains:
        sites = " OR ".join(f"site:{domain}" for domain in request.include_domains)
        return (
            f"{request.query} ({sites})"
            if len(request.include_domains) > 1
            else (f"{request.query} {sites}")
        )
    if request.exclude_domains:
        return " ".join([request.query, *(f"-site:{d}" for d in request.exclude_domains)])
    return request.query


def kept(request: SearchRequest, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    shown: list[dict[str, Any]] = []
    for item in items:
        url = item["url"]
        if url in seen or len(url) > MAX_URL_LENGTH or not _HTTP_URL.match(url):
            continue
        host = host_of(url)
        if host is None or "@" in urlsplit(url).netloc:
            continue
        if request.include_domains is not None and not on(host, request.include_domains):
            continue
        if request.exclude_domains is not None and on(host, request.exclude_domains):
            continue
        seen.add(url)
        shown.append({**item, "position": len(shown) + 1})
        if len(shown) == request.limit:
            break
    return shown
