"""What ``ScrapeRequest``'s validators check across its fields, written for ``/openapi.json``."""

from __future__ import annotations

from typing import Any

from service.core.formats import OUTPUTS

TAGS_DOC = "CSS selectors (no pseudo-elements); a selector that is not valid CSS is a 400 naming it"

FORMATS_DOC = "outputs to add to the result, each as a field of the same name: "


def _needs_engine() -> list[dict[str, Any]]:
    return [
        {
            "description": f'"{output.name}" needs the {output.needs} engine',
            "anyOf": [
                {"properties": {"formats": {"not": {"contains": {"const": output.name}}}}},
                {"required": ["engine"], "properties": {"engine": {"const": output.needs}}},
            ],
        }
        for output in OUTPUTS
        if output.needs is not None
    ]


def across_fields(schema: dict[str, Any]) -> None:
    """``ScrapeRequest``'s JSON Schema with the declared formats (service.core.formats, those a
    deployment declared included) and what its validators check across fields."""
    formats = schema["properties"]["formats"]
    formats["items"] = {"enum": list(OUTPUTS.names), "type": "string"}
    formats["description"] = FORMATS_DOC + ", ".join(output.summary for output in OUTPUTS)
    schema["allOf"] = [*_needs_engine(), *_ACROSS_FIELDS]


# What the validators check across fields, whatever the formats.
_ACROSS_FIELDS: list[dict[str, Any]] = [
    {
        "description": 'screenshot_full_page needs "screenshot" in formats',
        "anyOf": [
            {"properties": {"screenshot_full_page": {"const": False}}},
            {
                "required": ["formats"],
                "properties": {"formats": {"contains": {"const": "screenshot"}}},
            },
        ],
    },
    {
        "description": "actions need the js engine",
        "anyOf": [
            {"properties": {"actions": {"maxItems": 0}}},
            {"required": ["engine"], "properties": {"engine": {"const": "js"}}},
        ],
    },
    {
        "description": "wait_for needs the js engine",
        "anyOf": [
            {"properties": {"wait_for": {"type": "null"}}},
            {"required": ["engine"], "properties": {"engine": {"const": "js"}}},
        ],
    },
    {
        "description": "settle_ms needs the js engine",
        "anyOf": [
            {"properties": {"settle_ms": {"type": "null"}}},
            {"required": ["engine"], "properties": {"engine": {"const": "js"}}},
        ],
    },
    {
        "description": "session_idle_seconds needs session",
        "anyOf": [
            {"properties": {"session_idle_seconds": {"type": "null"}}},
            {"required": ["session"], "properties": {"session": {"type": "string"}}},
        ],
    },
    {
        "description": 'json needs "json" in formats, and "json" in formats needs json',
        "anyOf": [
            {
                "required": ["json", "formats"],
                "properties": {
                    "json": {"type": "object"},
                    "formats": {"contains": {"const": "json"}},
                },
            },
            {
                "properties": {
                    "json": {"type": "null"},
                    "formats": {"not": {"contains": {"const": "json"}}},
                }
            },
        ],
    },
    {
        "description": "max_age cannot be used with session",
        "anyOf": [
            {"properties": {"max_age": {"type": "null"}}},
            {"properties": {"session": {"type": "null"}}},
        ],
    },
]
