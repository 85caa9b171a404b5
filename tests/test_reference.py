"""The /docs page (service.reference) as rendered from the OpenAPI document, without a server:
every operation, field, error code and price is on it, and nothing points outside the service."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re

import pytest
from parsel import Selector

import service.jobs.batches  # noqa: F401  (its TooManyJobs is an ApiError of its own)
from service.api.openapi import document
from service.core import errors
from service.core.config import ENGINES, TIERS, Config
from service.reference.examples import KEY, NOT_CALLED_BY_USERS, TARGET
from service.reference.fields import fields_of, kind_of
from service.reference.page import METHODS, Reference, anchor_of

PUBLIC = "https://scrape.example.net"
COSTS = {
    "static": {"none": 3, "datacenter": 4, "residential": 12},
    "js": {"none": 7, "datacenter": 9, "residential": 30},
}
URL = re.compile(r"https?://[^\s\"'<>)\]]+")


@pytest.fixture(scope="module")
def config() -> Config:
    return dataclasses.replace(
        Config(), public_url=PUBLIC, costs=COSTS, map_credits=2, document_pages_per_block=25
    )


@pytest.fixture(scope="module")
def page(config: Config) -> Selector:
    doc = document(config.public_url, config.countries, config.session_max_idle_seconds)
    return Selector(text=Reference(config, doc).body.decode())


def operations() -> list[tuple[str, str]]:
    paths = document(PUBLIC)["paths"]
    return [(method, path) for path, item in paths.items() for method in METHODS if method in item]


def test_every_operation_has_a_section_with_its_method_path_and_summary(page: Selector) -> None:
    paths = document(PUBLIC)["paths"]
    for method, path in operations():
        section = page.css(f"section#{anchor_of(method, path)}")
        assert section, (method, path)
        heading = " ".join(section.css("h3 ::text").getall())
        assert method.upper() in heading and path in heading
        assert paths[path][method]["summary"] in section.css(".summary::text").get()
        assert page.css(f"nav.toc a[href='#{anchor_of(method, path)}']"), (method, path)


def test_every_request_field_is_listed_with_its_rules(page: Selector) -> None:
    doc = document(PUBLIC)
    schemas = doc["components"]["schemas"]
    for method, path in operations():
        body = doc["paths"][path][method].get("requestBody")
        if body is None:
            continue
        schema = body["content"]["application/json"]["schema"]
        if "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
        table = page.css(f"#{anchor_of(method, path)}-request")
        listed = set(table.css("tr::attr(data-field)").getall())
        assert set(schema.get("properties", {})) <= listed, (method, path)
    timeout = page.css("#post-scrape-request tr[data-field=timeout]")
    rules = " ".join(" ".join(timeout.css("td:nth-child(3) ::text").getall()).split())
    assert "default 20" in rules and "more than 0" in rules and "at most 120" in rules
    engine = " ".join(page.css("#post-scrape-request tr[data-field=engine] ::text").getall())
    assert '"static"' in engine and '"js"' in engine and '"auto"' in engine


def test_every_result_field_of_every_schema_is_listed(page: Selector) -> None:
    schemas = document(PUBLIC)["components"]["schemas"]
    for name in ("ScrapeResult", "MapResult", "Job", "JobSummary", "JobItem", "Account"):
        listed = set(page.css(f"#fields-{name} tr::attr(data-field)").getall())
        assert set(schemas[name]["properties"]) <= listed, name
    nested = set(page.css("#fields-ScrapeResult tr::attr(data-field)").getall())
    assert {"timings.queue", "links[].href", "attempts[].tier"} <= nested


def test_every_error_code_is_listed_with_its_status_and_meaning(page: Selector) -> None:
    for code, meaning in errors.ERROR_CODES.items():
        cells = page.css(f"tr#error-{code} td")
        assert cells, code
        status = "".join(cells[1].css("::text").getall())
        assert str(errors.ERROR_STATUSES.get(code, 200)) in status, code
        assert "".join(cells[2].css("::text").getall()) == meaning


def _api_errors(cls: type[errors.ApiError]) -> list[type[errors.ApiError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _api_errors(child))]


def test_the_status_of_each_code_is_the_status_its_error_answers() -> None:
    import service

    for module in pkgutil.walk_packages(service.__path__, "service."):  # every ApiError
        importlib.import_module(module.name)
    for cls in _api_errors(errors.ApiError):
        assert errors.ERROR_STATUSES[cls.code] == cls.status, cls
    assert errors.ERROR_STATUSES[errors.max_credits_exceeded(5, 1).code] == 402
    assert errors.ERROR_STATUSES[errors.key_cap_reached(5, 1, 1).code] == 402


def test_the_running_configurations_prices_are_shown(page: Selector, config: Config) -> None:
    for engine in ENGINES:
        for tier in TIERS:
            cell = page.css(f"#price-{engine}-{tier} .credits::text").get()
            assert cell == str(COSTS[engine][tier]), (engine, tier)
    assert page.css("#price-map::text").get() == "2"
    assert page.css("#price-document-block::text").get() == "25"
    assert page.css("#credits-per-euro::text").get() == "1\u202f000"
    assert page.css("#pack-50 ::text").getall()[0] == "50"
    # no backend in this configuration: the page says search is off
    assert page.css("#search-off") and not page.css("#price-search")


def test_each_operation_has_curl_and_python_examples_aimed_at_the_public_url(
    page: Selector,
) -> None:
    for method, path in operations():
        anchor = anchor_of(method, path)
        curl = page.css(f"#{anchor}-curl::text").get()
        python = page.css(f"#{anchor}-python::text").get()
        if (method, path) in NOT_CALLED_BY_USERS:
            assert curl is None and python is None
            continue
        assert curl and python, (method, path)
        assert curl.startswith("curl ") and f"'{PUBLIC}/" in curl
        assert PUBLIC in python
        if page.css(f"#{anchor} .auth code::text").get() == "X-API-Key":
            assert f"X-API-Key: {KEY}" in curl, (method, path)
    scrape = page.css("#post-scrape-python::text").get()
    assert "from scrapespy import Scrapespy" in scrape
    assert f'Scrapespy(api_key="{KEY}", base_url="{PUBLIC}")' in scrape


def test_no_address_outside_the_service_but_the_examples_targets(page: Selector) -> None:
    html = page.get()
    for url in URL.findall(html):
        assert url.startswith(PUBLIC) or url.startswith(TARGET), url
    for attribute in page.css("[src]::attr(src), link::attr(href)").getall():
        assert attribute.startswith("/docs/static/"), attribute


def test_every_link_within_the_page_has_its_target(page: Selector) -> None:
    ids = set(page.css("[id]::attr(id)").getall())
    for href in page.css("a::attr(href)").getall():
        if href.startswith("#"):
            assert href[1:] in ids, href


def test_a_schema_is_read_as_words() -> None:
    kind = kind_of({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]})
    assert kind.text == "integer or null" and kind.limits == ("at least 0",)
    items = kind_of(
        {"type": "array", "items": {"$ref": "#/components/schemas/Cookie"}, "maxItems": 1}
    )
    assert items.text == "array of Cookie" and items.refs == ("Cookie",)
    assert items.limits == ("at most 1 item",)
    assert items.pieces() == [("array of ", False), ("Cookie", True)]
    rows = fields_of(
        {
            "required": ["a"],
            "properties": {
                "a": {"type": "object", "properties": {"b": {"enum": ["x", "y"], "default": "x"}}}
            },
        }
    ).rows
    assert [(r.name, r.required, r.depth) for r in rows] == [("a", True, 0), ("a.b", False, 1)]
    assert rows[1].kind.values == ('"x"', '"y"') and rows[1].default == '"x"'
