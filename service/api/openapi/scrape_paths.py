"""``POST /scrape`` in the OpenAPI document, and what the running configuration bounds in the
scrape requests' schemas (the countries offered, the sessions' idle time)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from service.api.openapi.common import (
    CREDIT_HEADERS,
    as_json,
    component,
    error_answers,
    idempotent_post,
)


def scrape_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    return {
        "/scrape": idempotent_post(
            "Fetch one URL and return structured JSON",
            secured,
            "ScrapeRequest",
            {
                "200": as_json(
                    "the scrape result (success may be false)",
                    component("ScrapeResult"),
                    CREDIT_HEADERS,
                ),
                **error_answers(400, 401, 402, 403, 409, 422, 429, 500, 503),
            },
        ),
    }


def _codes(countries: Iterable[str]) -> list[str]:
    """Country codes as a request may spell them: either case."""
    return sorted({spelt for code in countries for spelt in (code, code.upper())})


def place(schemas: dict[str, Any], countries: Mapping[str, Sequence[str]]) -> None:
    """What the running configuration offers for ``location.country``, in the schemas: the
    countries its proxies are tagged with, and at which ``proxy_type`` each may be asked for
    (service.core.places.unavailable says the same to a request)."""
    offered = {code for codes in countries.values() for code in codes}
    schemas["Location"]["properties"]["country"]["anyOf"] = [
        *([{"type": "string", "enum": _codes(offered)}] if offered else []),
        {"type": "null"},
    ]
    by_tier = {**countries, "auto": sorted(offered)}
    rule = {
        "description": "location.country is one that proxy_type's tier offers (GET /pricing)",
        "anyOf": [
            {"properties": {"location": {"anyOf": [{"type": "null"}, _no_country()]}}},
            *(
                {
                    "required": ["proxy_type", "location"],
                    "properties": {
                        "proxy_type": {"const": tier},
                        "location": {
                            "type": "object",
                            "properties": {"country": {"enum": [*_codes(codes), None]}},
                        },
                    },
                }
                for tier, codes in by_tier.items()
                if codes
            ),
        ],
    }
    for name in ("ScrapeRequest", "BatchRequest", "CrawlRequest", "SearchScrape", "MonitorRequest"):
        schemas[name].setdefault("allOf", []).append(rule)


def _no_country() -> dict[str, Any]:
    return {"type": "object", "properties": {"country": {"type": "null"}}}


def idle_bounded(schemas: dict[str, Any], most: int) -> None:
    """The operator's bound on ``session_idle_seconds`` in every request that has it."""
    for schema in schemas.values():
        idle = schema.get("properties", {}).get("session_idle_seconds")
        for branch in (idle or {}).get("anyOf", ()):
            if branch.get("type") == "integer":
                branch["maximum"] = most
