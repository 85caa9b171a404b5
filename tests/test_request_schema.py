"""The scrape request's new fields: what /openapi.json documents is what the service accepts.

Schemathesis explores this at random; these are the corners of the rules written across fields
(exactly one of two, a scroll's two forms, the headers refused), checked one by one.
"""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema_rs
import pytest

from service.api.openapi import document
from service.core.errors import BadRequest
from service.core.schemas import checked_scrape

ABSENT = object()


def _with(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not ABSENT}


WAIT_FORS = [
    {"engine": "js", "wait_for": _with(selector=selector, ms=ms)}
    for selector, ms in itertools.product([ABSENT, None, "#a"], [ABSENT, None, 0, 1500, -1])
]
SCROLLS = [
    {"engine": "js", "actions": [_with(type="scroll", direction=d, amount=a, to=t)]}
    for d, a, t in itertools.product(
        [ABSENT, None, "down"], [ABSENT, None, 5], [ABSENT, None, "bottom"]
    )
]
OTHERS = [
    {"actions": []},
    {"actions": [{"type": "wait", "ms": 1}]},
    {"engine": "js", "actions": [{"type": "wait", "ms": 1.0}]},
    {"engine": "js", "actions": [{"type": "wait", "ms": 1.5}]},
    {"wait_for": None},
    {"wait_for": {"ms": 1}},
    {"engine": "js", "actions": [{"type": "click", "selector": "a", "all": None}]},
    {"engine": "js", "actions": [{"type": "screenshot"}, {"type": "press", "key": "Enter"}]},
    {"engine": "js", "actions": [{"type": "evaluate", "script": ""}]},
    *({"headers": {name: "1"}} for name in ("Host", "HOST", "te", "Proxy-X", "X-Proxy", "Proxy")),
    *({"headers": {"X-A": value}} for value in ("a b\t", "a\n", "a\r\nb", "\u00e9", "")),
    {"cookies": [{"name": "a", "value": "b", "domain": "x.example", "path": "/"}]},
    {"cookies": [{"name": "a", "value": "b", "domain": None, "path": None}]},
    {"cookies": [{"name": "a", "value": "b c"}]},
    {"cookies": [{"name": "a", "value": "b", "domain": "-x"}]},
    {"device": "mobile"},
    *({"settle_ms": ms} for ms in (None, 0, 50)),
    *({"engine": "js", "settle_ms": ms} for ms in (None, 0, 50, 10_000, 10_001, -1, 1.5, "5")),
]


@pytest.fixture(scope="module")
def documented() -> jsonschema_rs.Validator:
    components = document("http://127.0.0.1")["components"]
    schema = {"$ref": "#/components/schemas/ScrapeRequest", "components": components}
    return jsonschema_rs.Draft202012Validator(schema)


@pytest.mark.parametrize("fields", WAIT_FORS + SCROLLS + OTHERS)
def test_the_schema_and_the_service_agree(documented, fields):
    body = {"url": "http://example.com/", **fields}
    try:
        checked_scrape(body)
    except BadRequest:
        accepted = False
    else:
        accepted = True
    assert documented.is_valid(body) is accepted


# location: what the running configuration's proxies offer, by tier (Config.countries)
COUNTRIES = {"datacenter": ("de", "fr"), "residential": ("de", "jp")}
LOCATIONS = [
    {"location": location, **tier}
    for location, tier in itertools.product(
        [
            None,
            {},
            {"country": None},
            {"country": "de"},
            {"country": "DE"},
            {"country": "jp"},
            {"country": "br"},
            {"country": "xx"},
            {"country": "de\n"},
            {"languages": ["de-DE", "en"]},
            {"languages": ["de\n"]},
            {"languages": ["not a tag"]},
            {"languages": ["en"] * 11},
            {"country": "fr", "city": "Paris"},
        ],
        [{}, {"proxy_type": "none"}, *({"proxy_type": t} for t in ("datacenter", "residential"))]
        + [{"proxy_type": "auto"}],
    )
]


@pytest.mark.parametrize("fields", LOCATIONS)
def test_the_schema_and_the_service_agree_on_locations(fields):
    components = document("http://127.0.0.1", COUNTRIES)["components"]
    schema = {"$ref": "#/components/schemas/ScrapeRequest", "components": components}
    body = {"url": "http://example.com/", **fields}
    try:
        checked_scrape(body, COUNTRIES)
    except BadRequest:
        accepted = False
    else:
        accepted = True
    assert jsonschema_rs.Draft202012Validator(schema).is_valid(body) is accepted
