"""End to end: ``formats: ["json"]`` with ``json.selectors``, a Crawl4AI-shaped schema, through
the real service: a listing of 50 products becomes 50 records on both engines, in a batch and a
crawl; each type and transform; bad schemas are 400s naming their path, nothing fetched."""

from __future__ import annotations

import html as html_lib
from typing import Any

import pytest
from scrapespy import Scrapespy

from harness.listing import LISTING, SCHEMA, SHELL
from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from tests.test_e2e_batch import all_results, wait_finished


def record(n: int, base: str) -> dict[str, Any]:
    return {
        "sku": f"SKU-{n:03d}",
        "name": f"WIDGET {n}",
        "price": 1000 + n + 0.5,
        "url": f"{base}/products/{n}",
        "image": f"{base}/shop/img/{n}.png",
        "brand": {"label": "acme", "country": "de"},
        "tags": [{"tag": f"tag{n}a"}, {"tag": f"tag{n}b"}],
        "left": str(n),
        "rating": "unrated",
    }


@pytest.fixture(scope="module")
def shop(site: TargetSite) -> TargetSite:
    site.page("/shop/listing", LISTING)
    site.page("/shop/shell", SHELL)
    site.page("/shop/odd", ODD)
    return site


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


def scrape(service: ServiceProcess, key: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = service.scrape(key, body)
    assert reply.status == 200, reply.body
    assert reply.json["success"] is True, reply.json
    result: dict[str, Any] = reply.json
    return result


def test_a_listing_of_50_products_is_50_records_on_the_static_engine(service, shop, paying):
    _, key = paying
    body = {"url": shop.url("/shop/listing"), "formats": ["json"], "json": {"selectors": SCHEMA}}
    result = scrape(service, key, body)
    base = shop.base.rstrip("/")
    assert result["json"] == [record(n, base) for n in range(1, 51)]
    assert result["credits_charged"] == 1  # a plain static scrape's price
    assert "truncated" not in result


def test_the_same_schema_reads_a_page_a_script_wrote_on_the_js_engine(service, shop, paying):
    _, key = paying
    body: dict[str, Any] = {
        "url": shop.url("/shop/shell"),
        "formats": ["json"],
        "json": {"selectors": SCHEMA},
    }
    assert scrape(service, key, body)["json"] == []  # static: the shell has no product
    result = scrape(service, key, {**body, "engine": "js"})
    assert result["engine"] == "js"
    assert result["json"] == [record(n, shop.base.rstrip("/")) for n in range(1, 51)]


def test_a_batch_and_a_crawl_carry_the_schema_to_their_pages(service, shop, paying):
    _, key = paying
    options = {"formats": ["json"], "json": {"selectors": SCHEMA}}
    expected = [record(n, shop.base.rstrip("/")) for n in range(1, 51)]
    batch = call(
        "POST",
        service.url("/batch"),
        {"urls": [shop.url("/shop/listing")], **options},
        key=key,
    )
    assert batch.status in (200, 202), batch.body
    wait_finished(service, key, batch.json["id"])
    (page,) = all_results(service, key, batch.json["id"])
    assert page["result"]["json"] == expected

    crawl = call(
        "POST",
        service.url("/crawl"),
        {"url": shop.url("/shop/listing"), "max_pages": 2, "sitemap": "skip", **options},
        key=key,
    )
    assert crawl.status in (200, 202), crawl.body
    wait_finished(service, key, crawl.json["id"])
    by_url = {entry["url"]: entry for entry in all_results(service, key, crawl.json["id"])}
    assert by_url[shop.url("/shop/listing")]["result"]["json"] == expected


ODD = (
    "<!doctype html><html><body>"
    '<section class="row"><h3>  Mixed CASE  </h3><a href="../x?a=1">x</a>'
    '<span class="raw"> <b>bold</b> </span><span class="link">/rel/path</span>'
    '<ul><li class="e"></li><li class="e"><i>kept</i></li></ul></section>'
    '<section class="row"><h3>Second</h3></section>'
    "</body></html>"
)


def test_each_type_and_transform(service, shop, paying):
    _, key = paying
    schema = {
        "baseSelector": "//section[@class='row']",  # XPath at the top: from the document
        "fields": [
            {"name": "strip", "selector": "h3", "type": "text", "transform": "strip"},
            {"name": "up", "selector": "h3", "type": "text", "transform": ["strip", "uppercase"]},
            {"name": "html", "selector": "span.raw", "type": "html"},
            {"name": "href", "selector": "a", "type": "attribute", "attribute": "href"},
            {
                "name": "absolute",
                "selector": "span.link",
                "type": "text",
                "transform": "absolute_url",
            },
            {"name": "word", "selector": "h3", "type": "regex", "pattern": r"[A-Z]{4}"},
            {"name": "none", "selector": "h3", "type": "text", "transform": "number"},
            {
                "name": "first",
                "selector": "ul",
                "type": "nested",
                "fields": [{"name": "i", "selector": "i", "type": "text"}],
            },
            {
                "name": "all",
                "selector": "li",
                "type": "nested_list",
                "fields": [{"name": "i", "selector": "i", "type": "text"}],
            },
            {
                "name": "kept",
                "selector": "li",
                "type": "list",
                "fields": [{"name": "i", "selector": "i", "type": "text"}],
            },
        ],
    }
    url = shop.url("/shop/odd")
    body = {"url": url, "formats": ["json"], "json": {"selectors": schema}}
    first, second = scrape(service, key, body)["json"]
    base = shop.base.rstrip("/")
    assert first == {
        "strip": "Mixed CASE",
        "up": "MIXED CASE",
        "html": '<span class="raw"> <b>bold</b> </span>',
        "href": f"{base}/x?a=1",
        "absolute": f"{base}/rel/path",
        "word": "CASE",
        "first": {"i": "kept"},
        "all": [{}, {"i": "kept"}],
        "kept": [{"i": "kept"}],
    }
    assert html_lib.unescape(first["html"]) == first["html"]
    # nothing matched: no key, or the default; an empty nested_list is an empty list
    assert second == {"strip": "Second", "up": "SECOND", "all": [], "kept": []}


def deep(levels: int) -> dict[str, Any]:
    field: dict[str, Any] = {"name": "leaf", "type": "text"}
    for _ in range(levels):
        field = {"name": "n", "selector": "div", "type": "nested", "fields": [field]}
    return {"baseSelector": "body", "fields": [field]}


@pytest.mark.parametrize(
    ("selectors", "names"),
    [
        ({"fields": []}, "'json.selectors.baseSelector': is required"),
        ({"baseSelector": "a[", "fields": []}, "'json.selectors.baseSelector': invalid CSS"),
        (
            {"baseSelector": "a", "fields": [{"name": "x", "type": "text"}, {"name": "y"}]},
            "'json.selectors.fields[1].type': must be one of",
        ),
        (
            {"baseSelector": "a", "fields": [{"name": "x", "type": "attribute"}]},
            "'json.selectors.fields[0].attribute': is required",
        ),
        (
            {"baseSelector": "a", "fields": [{"name": "x", "type": "regex", "pattern": "("}]},
            "'json.selectors.fields[0].pattern': not a regular expression",
        ),
        (
            {"baseSelector": "a", "fields": [{"name": "x", "type": "text", "selector": "//["}]},
            "'json.selectors.fields[0].selector': invalid XPath",
        ),
        (  # lxml refuses control characters outright (schemathesis found it a 500)
            {"baseSelector": "a", "fields": [{"name": "x", "type": "text", "selector": "(\x10"}]},
            "'json.selectors.fields[0].selector': invalid XPath",
        ),
        (
            {"baseSelector": "a", "fields": [{"name": "x", "type": "text", "transform": "rot13"}]},
            "'json.selectors.fields[0].transform': must be one of strip, number",
        ),
        (  # a list in the list of transforms (schemathesis found it a 500)
            {"baseSelector": "a", "fields": [{"name": "x", "type": "text", "transform": [[{}]]}]},
            "'json.selectors.fields[0].transform[0]': must be one of strip, number",
        ),
        (
            {"baseSelector": "a", "fields": [{"name": "x", "type": "list", "selector": "p"}]},
            "'json.selectors.fields[0].fields': must be a list",
        ),
        (
            {"baseSelector": "a", "fields": [{"name": "x", "type": "text", "computed": 1}]},
            "'json.selectors.fields[0].computed': unknown field",
        ),
        (deep(10), "at most 10 levels"),
        (
            {
                "baseSelector": "a",
                "fields": [{"name": f"f{i}", "type": "text"} for i in range(201)],
            },
            "'json.selectors.fields[200]': at most 200 fields",
        ),
    ],
)
def test_bad_schemas_are_400s_naming_their_path_with_nothing_fetched(
    service, shop, accounts, paying, selectors, names
):
    account_id, key = paying
    before = shop.count("/shop/listing")
    body = {"url": shop.url("/shop/listing"), "formats": ["json"], "json": {"selectors": selectors}}
    reply = service.scrape(key, body)
    assert reply.status == 400, reply.body
    assert list(reply.json) == ["error"]
    assert names in reply.json["error"], reply.json["error"]
    assert shop.count("/shop/listing") == before
    assert accounts.summary(account_id)["held"] == 0


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"formats": ["json"]}, "\"json\" needs 'json'"),
        ({"json": {"selectors": {"baseSelector": "a", "fields": []}}}, "'json' needs \"json\""),
        ({"formats": ["json"], "json": {}}, "exactly one of 'selectors'"),
        (
            {"formats": ["json"], "json": {"prompt": "the prices"}},
            "json.prompt needs a language model endpoint",
        ),
    ],
)
def test_json_and_its_format_go_together(service, shop, paying, body, names):
    _, key = paying
    reply = service.scrape(key, {"url": shop.url("/shop/listing"), **body})
    assert reply.status == 400, reply.body
    assert names in reply.json["error"], reply.json["error"]


def test_the_python_client_gives_the_records(service, shop, paying):
    _, key = paying
    client = Scrapespy(api_key=key, base_url=service.base)
    result = client.scrape(shop.url("/shop/listing"), formats=["json"], json={"selectors": SCHEMA})
    assert result.json_ == [record(n, shop.base.rstrip("/")) for n in range(1, 51)]


def test_records_past_their_budget_stop_there_and_say_so(service, shop, paying):
    _, key = paying
    big = "".join(f"<p class=big>{n} {'x' * 100_000}</p>" for n in range(30))
    shop.page("/shop/big", f"<html><body>{big}</body></html>")
    schema = {"baseSelector": "p.big", "fields": [{"name": "t", "type": "text"}]}
    body = {"url": shop.url("/shop/big"), "formats": ["json"], "json": {"selectors": schema}}
    result = scrape(service, key, body)
    assert result["truncated"] == ["json", "text"]
    assert 15 <= len(result["json"]) < 30
    assert sum(len(r["t"]) for r in result["json"]) == 2 * 1024 * 1024  # the budget, no more
    assert [r["t"].split()[0] for r in result["json"]] == [
        str(n) for n in range(len(result["json"]))
    ]
    assert result["credits_charged"] == 1


def test_an_xpath_schema_as_written_for_crawl4ais_xpath_strategy(service, shop, paying):
    _, key = paying
    schema = {
        "name": "Products",
        "baseSelector": "//article[contains(@class, 'product')]",
        "fields": [
            {"name": "name", "selector": "//h2", "type": "text"},  # relative to the record
            {
                "name": "url",
                "selector": ".//a[@class='more']",
                "type": "attribute",
                "attribute": "href",
            },
            {"name": "first_tag", "selector": "./ul/li[1]/text()", "type": "text"},
            {"name": "second_tag", "selector": "(./ul/li)[2]", "type": "text"},
        ],
    }
    body = {"url": shop.url("/shop/listing"), "formats": ["json"], "json": {"selectors": schema}}
    records = scrape(service, key, body)["json"]
    base = shop.base.rstrip("/")
    assert records == [
        {
            "name": f"Widget {n}",
            "url": f"{base}/products/{n}",
            "first_tag": f"tag{n}a",
            "second_tag": f"tag{n}b",
        }
        for n in range(1, 51)
    ]
