"""``POST /search`` in the OpenAPI document: its request, whose ``scrape`` is the scrape request's
options as a search takes them (:func:`search_scrape`), and its answer
(service.search.answers)."""

from __future__ import annotations

import json
from typing import Any

from service.api.openapi.common import (
    CREDIT_HEADERS,
    as_json,
    component,
    error_answers,
    json_body,
)
from service.core.answer_schemas import answer_schema
from service.core.formats import OUTPUTS
from service.core.schemas import ScrapeRequest
from service.core.schemas.search import SCRAPE_REFUSED, SearchRequest
from service.scrape.results import ScrapeResult
from service.search.answers import SearchAnswer

_REF = "#/components/schemas/{model}"


def search_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    return {
        "/search": {
            "post": {
                "summary": "Search the web on the operator's backend, and scrape the results",
                "description": "Without a search backend on the server, a 400 says so. A "
                "backend that fails, times out or answers something else than its JSON is a "
                "503 search_unavailable, and nothing is charged.",
                "security": secured,
                "requestBody": json_body("SearchRequest"),
                "responses": {
                    "200": as_json(
                        "the results of each source asked, with each web result's scrape "
                        "when scrape was given",
                        component("SearchAnswer"),
                        CREDIT_HEADERS,
                    ),
                    **error_answers(400, 401, 402, 403, 429, 500, 503),
                },
            }
        },
    }


def search_schemas() -> dict[str, Any]:
    """The request's and the answer's components."""
    return {
        "SearchRequest": search_request(),
        "SearchScrape": search_scrape(),
        "SearchAnswer": answer_schema(SearchAnswer, (ScrapeResult,)),
    }


def search_request() -> dict[str, Any]:
    schema: dict[str, Any] = SearchRequest.model_json_schema(ref_template=_REF)
    schema.pop("$defs", None)
    scrape = schema["properties"]["scrape"]
    schema["properties"]["scrape"] = {
        "anyOf": [component("SearchScrape"), {"type": "null"}],
        "default": None,
        "description": scrape["description"],
    }
    schema["allOf"] = [
        {
            "description": "include_domains or exclude_domains, not both",
            "anyOf": [
                {"properties": {"include_domains": {"type": "null"}}},
                {"properties": {"exclude_domains": {"type": "null"}}},
            ],
        }
    ]
    schema["properties"]["sources"]["uniqueItems"] = True
    return schema


def search_scrape() -> dict[str, Any]:
    """The scrape request without the fields a search refuses (``url`` is each result's), its
    formats and ``json`` without what the language model makes (service.core.schemas.search)."""
    schema: dict[str, Any] = ScrapeRequest.model_json_schema(ref_template=_REF)
    schema.pop("$defs", None)
    properties = {k: v for k, v in schema["properties"].items() if k not in SCRAPE_REFUSED}
    formats = properties["formats"]
    formats["items"] = {
        **formats["items"],
        "enum": [f for f in formats["items"]["enum"] if OUTPUTS[f].price != "model_tokens"],
    }
    properties["json"] = {
        **properties["json"],
        "anyOf": [
            {**component("JsonOptions"), "required": ["selectors"]},
            {"type": "null"},
        ],
        "description": 'with "formats": ["json"]: {"selectors": <schema>} extracts records '
        "through a tree of CSS or XPath selectors (the language model's prompt and schema "
        "are not offered in a search)",
    }
    schema["properties"] = properties
    schema["required"] = []
    schema["allOf"] = [
        rule
        for rule in schema.get("allOf", [])
        if not any(f'"{name}"' in json.dumps(rule) for name in SCRAPE_REFUSED)
    ]
    schema["title"] = "SearchScrape"
    schema["description"] = (
        "POST /scrape's options for every web result; max_credits bounds the whole call (each "
        "result's scrape gets an equal share of what is left after the search's price)"
    )
    return schema
