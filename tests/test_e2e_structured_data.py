"""End to end: ``formats: ["structured_data"]``, the page's own structured data (issue 36), on
both engines, in batch and crawl jobs, and on the Firecrawl routes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from firecrawl import Firecrawl
from scrapespy import Scrapespy

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from tests.conftest import a_database_of_its_own

JSONLD = {
    "@context": "https://schema.org",
    "@graph": [
        {
            "@type": "Product",
            "name": "Tide clock",
            "offers": {"@type": "Offer", "price": "39.00", "priceCurrency": "EUR"},
        },
        {"@type": "BreadcrumbList", "itemListElement": []},
        {"name": "an entry without a type is not an item"},
    ],
}
PAGE = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Tide clock</title>
<meta property="og:title" content="Tide clock, brass">
<meta property="og:type" content="product">
<meta property="og:image" content="https://cdn.example/one.jpg">
<meta property="og:image" content="https://cdn.example/two.jpg">
<meta name="twitter:card" content="summary_large_image">
<meta name="twitter:site" content="@tideshop">
<script type="application/ld+json">{json.dumps(JSONLD)}</script>
<script type="application/ld+json">{{"@context": "https://schema.org", "@type": "Organization",
 "name": "Tide Shop"}}</script>
<script type="application/ld+json">{{ not json at all </script>
</head><body>
<div itemscope itemtype="https://schema.org/Review">
  <span itemprop="author" itemscope itemtype="https://schema.org/Person">
    <span itemprop="name">Ann</span></span>
  <span itemprop="reviewBody">Keeps good time.</span>
</div>
<div vocab="https://schema.org/" typeof="Event">
  <span property="name">Spring tide night</span>
  <div property="location" typeof="Place"><span property="name">Harbour hall</span></div>
</div>
<p>A clock that tells the tide.</p>
</body></html>
"""
# the same data, written by the page's script: only the js engine sees it
RENDERED = """<!doctype html><html><head><title>rendered</title><script>
const s = document.createElement('script'); s.type = 'application/ld+json';
s.textContent = JSON.stringify({"@context": "https://schema.org", "@type": "Recipe",
  "name": "Rendered soup"});
document.head.appendChild(s);
const m = document.createElement('meta'); m.setAttribute('property', 'og:title');
m.setAttribute('content', 'Rendered soup'); document.head.appendChild(m);
</script></head><body><p>soup</p></body></html>"""
EXPECTED_ITEMS = [
    {
        "@type": "Product",
        "name": "Tide clock",
        "offers": {"@type": "Offer", "price": "39.00", "priceCurrency": "EUR"},
    },
    {"@type": "BreadcrumbList", "itemListElement": []},
    {"@type": "Organization", "name": "Tide Shop"},
    {
        "@type": "Review",
        "author": {"@type": "Person", "name": "Ann"},
        "reviewBody": "Keeps good time.",
    },
    {
        "@type": "Event",
        "name": "Spring tide night",
        "location": {"@type": "Place", "name": "Harbour hall"},
    },
]
EXPECTED = {
    "items": EXPECTED_ITEMS,
    "opengraph": {
        "title": "Tide clock, brass",
        "type": "product",
        "image": ["https://cdn.example/one.jpg", "https://cdn.example/two.jpg"],
    },
    "twitter": {"card": "summary_large_image", "site": "@tideshop"},
}
NOTHING = {"items": [], "opengraph": {}, "twitter": {}}


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> dict[str, str]:
    site.page("/structured/product", PAGE)
    site.page("/structured/rendered", RENDERED)
    site.page("/structured/plain", "<html><head><title>plain</title></head><body>x</body></html>")
    return {name: site.url(f"/structured/{name}") for name in ("product", "rendered", "plain")}


def ok(service: ServiceProcess, key: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = service.scrape(key, body)
    assert reply.status == 200, reply.body
    assert reply.json["success"] is True, reply.json
    result: dict[str, Any] = reply.json
    return result


def same_items(found: dict[str, Any], expected: dict[str, Any]) -> None:
    """Equal, the items in any order (each syntax is read in turn)."""
    key = lambda item: json.dumps(item, sort_keys=True)  # noqa: E731
    assert sorted(found["items"], key=key) == sorted(expected["items"], key=key)
    assert found["opengraph"] == expected["opengraph"]
    assert found["twitter"] == expected["twitter"]


@pytest.mark.parametrize("engine", ["static", "js"])
def test_the_pages_json_ld_microdata_rdfa_og_and_twitter(
    service: ServiceProcess, accounts: Accounts, pages: dict[str, str], engine: str
) -> None:
    account_id, key = accounts.create(credits=100)
    body = {"url": pages["product"], "engine": engine, "formats": ["structured_data"]}
    result = ok(service, key, body)
    same_items(result["structured_data"], EXPECTED)
    assert "markdown" not in result
    # it costs what the same scrape costs without it
    plain = ok(service, key, {"url": pages["product"], "engine": engine})
    assert result["credits_charged"] == plain["credits_charged"]
    assert "structured_data" not in plain


def test_with_other_formats_and_main_content(
    service: ServiceProcess, accounts: Accounts, pages: dict[str, str]
) -> None:
    _, key = accounts.create(credits=100)
    body = {
        "url": pages["product"],
        "formats": ["markdown", "structured_data"],
        "only_main_content": True,
    }
    result = ok(service, key, body)
    same_items(result["structured_data"], EXPECTED)
    assert "A clock that tells the tide." in result["markdown"]


def test_a_page_without_any_is_empty_and_only_js_sees_what_a_script_writes(
    service: ServiceProcess, accounts: Accounts, pages: dict[str, str]
) -> None:
    _, key = accounts.create(credits=100)
    plain = ok(service, key, {"url": pages["plain"], "formats": ["structured_data"]})
    assert plain["structured_data"] == NOTHING
    static = ok(service, key, {"url": pages["rendered"], "formats": ["structured_data"]})
    assert static["structured_data"] == NOTHING
    body = {"url": pages["rendered"], "engine": "js", "formats": ["structured_data"]}
    rendered = ok(service, key, body)["structured_data"]
    assert rendered["items"] == [{"@type": "Recipe", "name": "Rendered soup"}]
    assert rendered["opengraph"] == {"title": "Rendered soup"}


@pytest.fixture(scope="module")
def jobs(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServiceProcess, Accounts]]:
    for url, accounts in a_database_of_its_own(database_url, tmp_path_factory.mktemp("sd-db")):
        workdir: Path = tmp_path_factory.mktemp("sd")
        proc = ServiceProcess(url, workdir).start()
        yield proc, accounts
        proc.stop()


def finished(service: ServiceProcess, key: str, job_id: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while True:
        found = call("GET", service.url(f"/jobs/{job_id}"), key=key).json
        if found["status"] in ("completed", "failed", "cancelled"):
            assert found["status"] == "completed", found
            results: list[dict[str, Any]] = found["results"]
            assert found["next_cursor"] is None
            return results
        assert time.monotonic() < deadline, found["status"]
        time.sleep(0.2)


def test_batch_and_crawl_jobs(
    jobs: tuple[ServiceProcess, Accounts], site: TargetSite, pages: dict[str, str]
) -> None:
    service, accounts = jobs
    _, key = accounts.create(credits=100)
    urls = [pages["product"], pages["plain"]]
    reply = call(
        "POST", service.url("/batch"), {"urls": urls, "formats": ["structured_data"]}, key=key
    )
    assert reply.status == 202, reply.body
    results = finished(service, key, reply.json["id"])
    assert [entry["status"] for entry in results] == ["done", "done"]
    same_items(results[0]["result"]["structured_data"], EXPECTED)
    assert results[1]["result"]["structured_data"] == NOTHING

    site.page(
        "/sd-crawl/",
        f"<html><head><title>start</title></head><body>"
        f"<a href='{pages['product']}'>product</a></body></html>",
    )
    body = {"url": site.url("/sd-crawl/"), "max_depth": 1, "formats": ["structured_data"]}
    reply = call("POST", service.url("/crawl"), body, key=key)
    assert reply.status == 202, reply.body
    by_url = {entry["url"]: entry for entry in finished(service, key, reply.json["id"])}
    assert by_url[site.url("/sd-crawl/")]["result"]["structured_data"] == NOTHING
    same_items(by_url[pages["product"]]["result"]["structured_data"], EXPECTED)


def test_firecrawl_routes_put_it_in_the_metadata(
    service: ServiceProcess, accounts: Accounts, pages: dict[str, str]
) -> None:
    _, key = accounts.create(credits=100)
    client = Firecrawl(api_key=key, api_url=service.url(""), max_retries=1)
    doc = client.scrape(pages["product"], formats=["markdown", {"type": "structuredData"}])
    assert "A clock that tells the tide." in (doc.markdown or "")
    found = doc.metadata_dict["structuredData"]
    same_items(found, EXPECTED)
    assert doc.metadata_dict["og_title"] == "Tide clock, brass"
    # without the format, none
    plain = client.scrape(pages["product"], formats=["markdown"])
    assert "structuredData" not in plain.metadata_dict
    # v1, as a string
    reply = call(
        "POST",
        service.url("/v1/scrape"),
        {"url": pages["product"], "formats": ["structuredData"]},
        key=key,
    )
    assert reply.status == 200, reply.body
    assert set(reply.json["data"]) == {"metadata"}
    same_items(reply.json["data"]["metadata"]["structuredData"], EXPECTED)


def test_the_python_client_reads_it(
    service: ServiceProcess, accounts: Accounts, pages: dict[str, str]
) -> None:
    _, key = accounts.create(credits=100)
    with Scrapespy(api_key=key, base_url=service.base) as client:
        result = client.scrape(pages["product"], formats=["structured_data"])
    assert result.structured_data is not None
    same_items(result.structured_data, EXPECTED)


def test_a_firecrawl_batch_scrape_puts_it_in_each_documents_metadata(
    jobs: tuple[ServiceProcess, Accounts], pages: dict[str, str]
) -> None:
    service, accounts = jobs
    _, key = accounts.create(credits=100)
    client = Firecrawl(api_key=key, api_url=service.url(""), max_retries=1)
    job = client.batch_scrape(
        [pages["product"], pages["plain"]],
        formats=[{"type": "structuredData"}],
        poll_interval=1,
        timeout=60,
    )
    assert job.status == "completed" and job.completed == 2
    by_url = {doc.metadata_dict["source_url"]: doc.metadata_dict for doc in job.data}
    same_items(by_url[pages["product"]]["structuredData"], EXPECTED)
    assert by_url[pages["plain"]]["structuredData"] == NOTHING
