"""Firecrawl's crawl, batch scrape and map requests as native ones (service.firecrawl.jobs), from
the payloads firecrawl-py builds: what its defaults send is accepted, each field does what the
native field does (a crawl kept under its start path, v1's path depth), what scrapespy cannot
do is a 400 naming the field, and a map's search, query and limit apply to its URLs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from firecrawl.v2.methods.crawl import _prepare_crawl_request
from firecrawl.v2.methods.map import _prepare_map_request
from firecrawl.v2.types import CrawlRequest, MapOptions

from service.core.config import Config
from service.core.errors import BadRequest
from service.extraction.patterns import compile_pattern
from service.firecrawl.jobs import native_batch, native_crawl, native_map
from service.jobs.crawl_rules import CRAWL_FIELDS, MAX_DEPTH, MAX_PAGES, CrawlRules

CONFIG = Config()
SITE = "https://example.com"


def sdk_crawl(url: str, **options: Any) -> dict[str, Any]:
    """What ``Firecrawl.crawl`` posts, with the defaults its signature fills in."""
    defaults = {
        "ignore_query_parameters": False,
        "crawl_entire_domain": False,
        "allow_external_links": False,
        "allow_subdomains": False,
        "ignore_robots_txt": False,
        "regex_on_full_url": False,
        "deduplicate_similar_urls": True,
        "zero_data_retention": False,
    }
    body = _prepare_crawl_request(CrawlRequest(url=url, **{**defaults, **options}))
    return {**body, "origin": "python-sdk@4.55.0"}


def kept(body: dict[str, Any], path: str) -> bool:
    """Whether the native rules in ``body`` keep ``path``, as service.jobs.crawl_rules.Rules
    runs them: by RE2 (which refuses a pattern it cannot run)."""
    includes = [compile_pattern(p) for p in body.get("include_paths") or []]
    excludes = [compile_pattern(p) for p in body.get("exclude_paths") or []]
    if includes and not any(pattern.search(path) for pattern in includes):
        return False
    return not any(pattern.search(path) for pattern in excludes)


def test_the_sdks_default_crawl_is_the_native_crawl_of_firecrawls_defaults() -> None:
    body, shown = native_crawl(sdk_crawl(f"{SITE}/"), 2, CONFIG)
    # no scrape options; the crawl's own fields kept as sent, for GET /crawl/active
    assert set(shown) == {"crawlerOptions"}
    assert shown["crawlerOptions"]["deduplicateSimilarURLs"] is True
    assert "url" not in shown["crawlerOptions"] and "origin" not in shown["crawlerOptions"]
    assert body["url"] == f"{SITE}/"
    assert (body["max_pages"], body["max_depth"], body["respect_robots"]) == (
        MAX_PAGES,
        MAX_DEPTH,
        True,
    )
    assert "include_paths" not in body and "sitemap" not in body


def test_crawl_fields_become_the_native_ones() -> None:
    payload = sdk_crawl(
        f"{SITE}/",
        limit=7,
        include_paths=["^/docs/"],
        exclude_paths=["^/docs/old/"],
        max_discovery_depth=2,
        allow_subdomains=True,
        ignore_robots_txt=True,
        sitemap="only",
    )
    body, _ = native_crawl(payload, 2, CONFIG)
    assert body["max_pages"] == 7 and body["max_depth"] == 2
    assert body["include_paths"] == ["^/docs/"] and body["exclude_paths"] == ["^/docs/old/"]
    assert body["allow_subdomains"] is True and body["respect_robots"] is False
    assert body["sitemap"] == "only"


def test_a_crawl_stays_under_its_start_path_with_its_own_includes() -> None:
    body, _ = native_crawl(sdk_crawl(f"{SITE}/docs/", include_paths=["[0-9]$"]), 2, CONFIG)
    assert [kept(body, path) for path in ("/docs/1", "/docs/a", "/blog/1", "/1")] == [
        True,
        False,
        False,
        False,
    ]
    whole, _ = native_crawl(sdk_crawl(f"{SITE}/docs/", crawl_entire_domain=True), 2, CONFIG)
    assert "include_paths" not in whole
    # an include anchored at the start still matches under the start path
    anchored, _ = native_crawl(sdk_crawl(f"{SITE}/docs/", include_paths=["^/docs/a"]), 2, CONFIG)
    assert [kept(anchored, path) for path in ("/docs/ab", "/docs/b", "/blog/docs/ab")] == [
        True,
        False,
        False,
    ]


def test_a_long_start_path_is_kept_under_by_the_includes() -> None:
    start = "/documentation/reference/application-programming-interface/v2/"
    body, _ = native_crawl(sdk_crawl(f"{SITE}{start}", include_paths=["[0-9]$"]), 2, CONFIG)
    rules = CrawlRules.model_validate({k: v for k, v in body.items() if k in CRAWL_FIELDS})
    assert rules.include_paths and rules.exclude_paths == []
    assert [kept(body, path) for path in (f"{start}1", f"{start}a", "/blog/1")] == [
        True,
        False,
        False,
    ]
    plain, _ = native_crawl(sdk_crawl(f"{SITE}{start}"), 2, CONFIG)
    assert kept(plain, f"{start}x") and not kept(plain, "/documentation/")


def test_v1s_max_depth_counts_path_segments_beyond_the_start_url() -> None:
    body, _ = native_crawl({"url": f"{SITE}/docs/", "maxDepth": 1, "origin": "x"}, 1, CONFIG)
    assert kept(body, "/docs/1") and not kept(body, "/docs/1/2")
    v1_only = {"url": f"{SITE}/", "ignoreSitemap": True, "allowBackwardLinks": True}
    body, _ = native_crawl(v1_only, 1, CONFIG)
    assert body["sitemap"] == "skip" and "include_paths" not in body


@pytest.mark.parametrize(
    ("fields", "version", "named"),
    [
        ({"allowExternalLinks": True}, 2, "allowExternalLinks"),
        ({"ignoreQueryParameters": True}, 2, "ignoreQueryParameters"),
        ({"regexOnFullURL": True}, 2, "regexOnFullURL"),
        ({"zeroDataRetention": True}, 2, "zeroDataRetention"),
        ({"prompt": "the docs"}, 2, "prompt"),
        ({"robotsUserAgent": "me"}, 2, "robotsUserAgent"),
        ({"delay": 1}, 2, "delay"),
        ({"maxConcurrency": 1}, 2, "maxConcurrency"),
        ({"maxDepth": 2}, 2, "maxDepth"),
        ({"sitemap": "skip"}, 1, "sitemap"),
        ({"maxDepth": -1}, 1, "maxDepth"),
        ({"crawlerOptions": {}}, 2, "crawlerOptions"),
        ({"ignoreRobotsTxt": "yes"}, 2, "ignoreRobotsTxt"),
    ],
)
def test_what_a_crawl_cannot_do_is_a_400_naming_the_field(
    fields: dict[str, Any], version: int, named: str
) -> None:
    with pytest.raises(BadRequest, match=named):
        native_crawl({"url": f"{SITE}/", **fields}, version, CONFIG)  # type: ignore[arg-type]


def test_a_delay_is_accepted_when_the_service_waits_that_long_anyway() -> None:
    polite = dataclasses.replace(CONFIG, crawl_pages_per_site=1, crawl_delay_seconds=2.0)
    native_crawl({"url": f"{SITE}/", "delay": 2, "maxConcurrency": 1}, 2, polite)
    with pytest.raises(BadRequest, match="delay"):
        native_crawl({"url": f"{SITE}/", "delay": 3}, 2, polite)


def test_a_batch_leaves_invalid_urls_out_as_each_version_does() -> None:
    urls = [f"{SITE}/a", "not a url"]
    body, _, left_out = native_batch({"urls": urls}, 2)
    assert (body["urls"], left_out) == ([f"{SITE}/a"], ["not a url"])
    body, _, left_out = native_batch({"urls": urls}, 1)
    assert (body["urls"], left_out) == (urls, None)  # the native check names urls[1]
    body, _, left_out = native_batch({"urls": urls[:1], "ignoreInvalidURLs": True}, 1)
    assert (body["urls"], left_out) == (urls[:1], [])  # invalidURLs: [] when none was
    with pytest.raises(BadRequest, match="urls"):
        native_batch({"urls": ["not a url"]}, 2)
    with pytest.raises(BadRequest, match="appendToId"):
        native_batch({"urls": urls, "appendToId": "x"}, 2)


def test_a_map_takes_the_sdks_defaults_and_filters_what_it_found() -> None:
    v1_defaults = {"url": f"{SITE}/", "timeout": 30000, "origin": "python-sdk@1"}
    body, ask = native_map(v1_defaults, 1)
    assert body["allow_subdomains"] is True and ask.seconds == 30.0
    v2 = _prepare_map_request(f"{SITE}/", MapOptions(search="Blog", limit=2, sitemap="skip"))
    body, ask = native_map(v2, 2)
    assert body["sitemap"] == "skip"
    found = [f"{SITE}/blog/1?page=2", f"{SITE}/blog/1", f"{SITE}/docs/1", f"{SITE}/blog/2"]
    assert ask(found) == [f"{SITE}/blog/1", f"{SITE}/blog/2"]
    with pytest.raises(BadRequest, match="location"):
        native_map({"url": f"{SITE}/", "location": {"country": "US"}}, 2)
    with pytest.raises(BadRequest, match="limit"):
        native_map({"url": f"{SITE}/", "limit": 30000}, 2)
