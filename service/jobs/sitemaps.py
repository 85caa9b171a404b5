"""A site's URLs from its sitemaps: ``/sitemap.xml`` and the ``Sitemap:`` lines of robots.txt.

Every document is fetched through the engine (service.scrape.engine) as an unbilled scrape, so the
egress guard, the proxy rules and the size cap on ``raw_html`` (config.max_raw_html_bytes)
apply as to any scrape. Scrapy parses them (``scrapy.utils.sitemap``: no entities, no network).
The walk is bounded: the request's timeout for the whole walk, at most :data:`MAX_DOCUMENTS`
documents, sitemap indexes followed :data:`MAX_LEVELS` levels deep, sitemaps only on the site's
registrable domain, and it stops once ``limit`` URLs are found. Gzipped sitemaps
(``.xml.gz``) are not read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from service.jobs.crawl_rules import normalised, registrable
from service.scrape.engine import EngineBridge
from service.scrape.order import ScrapeOrder

log = logging.getLogger(__name__)

MAX_DOCUMENTS = 20
MAX_LEVELS = 2  # an index of indexes of sitemaps, and no deeper


async def fetch_text(bridge: EngineBridge, url: str, timeout: float) -> str | None:
    """The body of ``url`` as an unbilled scrape fetches it, or None when it failed."""
    job = ScrapeOrder(
        url=url, formats=frozenset({"raw_html"}), respect_robots=False, timeout=timeout
    )
    result = await bridge.submit(job)
    if not result.success:
        return None
    text: Any = getattr(result, "raw_html", None)
    return text if isinstance(text, str) else None


async def sitemap_urls(
    bridge: EngineBridge,
    start_url: str,
    accepts: Callable[[str], str | None],
    limit: int,
    timeout: float = 20.0,
) -> list[str]:
    """The URLs the site's sitemaps list that ``accepts`` keeps (normalised), in their order,
    without duplicates, at most ``limit``; whatever was read once ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    parts = urlsplit(start_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    domain = registrable((parts.hostname or "").rstrip("."))
    robots = await fetch_text(bridge, origin + "/robots.txt", timeout)
    queue: list[tuple[str, int]] = [(origin + "/sitemap.xml", 0)]
    if robots:
        queue += [(url, 0) for url in sitemap_urls_from_robots(robots, base_url=origin)]
    seen: set[str] = set()
    found: dict[str, None] = {}
    fetched = 0
    while queue and fetched < MAX_DOCUMENTS and len(found) < limit:
        left = deadline - time.monotonic()
        if left < 1:
            break
        url, level = queue.pop(0)
        key = normalised(url)
        if key is None or key in seen or not _on_domain(key, domain):
            continue
        seen.add(key)
        fetched += 1
        text = await fetch_text(bridge, key, left)
        if not text:
            continue
        try:
            document = Sitemap(text.encode("utf-8"))
        except Exception as exc:  # not XML, or not a sitemap: the site's error, not ours
            log.debug("sitemap %s could not be read: %s", key, exc)
            continue
        for entry in document:
            loc = entry.get("loc")
            if not isinstance(loc, str):
                continue
            if document.type == "sitemapindex":
                if level < MAX_LEVELS:
                    queue.append((loc, level + 1))
            elif document.type == "urlset":
                kept = accepts(loc)
                if kept is not None:
                    found[kept] = None
                    if len(found) >= limit:
                        break
    return list(found)


def _on_domain(url: str, domain: str) -> bool:
    host = (urlsplit(url).hostname or "").rstrip(".")
    return host == domain or host.endswith("." + domain)
