"""Firecrawl's ``formats`` as the native formats that make them: each name's native format, the
formats this server refuses and why, a v2 format object's options and the json format's prompt and
schema (service.firecrawl.options reads the rest of a scrape's options).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.core.errors import BadRequest
from service.core.formats import OUTPUTS

SDK_DEFAULT_FORMATS = ["markdown"]


# Firecrawl's formats read from the native result's own fields rather than made by a format
FROM_RESULT = ("links", "images")
# Firecrawl's own formats, in the order of its documentation (a refusal lists them so); a native
# format's Firecrawl name comes from its declaration (service.core.formats), and those that are
# not Firecrawl's (structuredData...) follow
FIRECRAWL_ORDER = (
    "markdown", "html", "rawHtml", *FROM_RESULT, "screenshot", "json", "summary", "changeTracking"
)  # fmt: skip


def formats() -> dict[str, str | None]:
    """Firecrawl's format -> the native format that makes it (None: read from the native
    result), from the declared formats."""
    made: dict[str, str | None] = {**OUTPUTS.firecrawl(), **dict.fromkeys(FROM_RESULT)}
    ordered = {name: made.pop(name) for name in FIRECRAWL_ORDER if name in made}
    return {**ordered, **made}


FULL_PAGE_SCREENSHOT = "screenshot@fullPage"


# formats Firecrawl makes and this server does not, by what they would need
REFUSED_FORMATS = {
    "extract": "a language model",
    "query": "a language model",
    "question": "a language model",
    "highlights": "a language model",
    "branding": "a language model",
    "product": "a language model",
    "menu": "a language model",
    "attributes": "Firecrawl's attribute extraction",
    "audio": "media downloads",
    "video": "media downloads",
    "content": "its removal in v1 (use markdown)",
}


def bad(where: str, message: str) -> BadRequest:
    return BadRequest(f"invalid request: '{where}': {message}")


def format_names(value: Any) -> tuple[list[str], bool]:
    """Firecrawl's ``formats`` (strings, or v2's objects) as names, and whether the screenshot
    is of the full page."""
    if value is None:
        return list(SDK_DEFAULT_FORMATS), False
    if not isinstance(value, list):
        raise bad("formats", "must be a list")
    names, full_page = [], False
    for index, item in enumerate(value):
        name = item.get("type") if isinstance(item, Mapping) else item
        if name == FULL_PAGE_SCREENSHOT:
            name, full_page = "screenshot", True
        if not isinstance(name, str):
            raise bad(f"formats[{index}]", "a format name or an object with 'type'")
        if name in REFUSED_FORMATS:
            raise bad(
                "formats",
                f"the {name!r} format needs {REFUSED_FORMATS[name]}, which this server does "
                "not offer",
            )
        known = formats()
        if name not in known:
            raise bad("formats", f"{name!r} is not a format (one of {', '.join(known)})")
        if isinstance(item, Mapping):
            full_page |= _format_options(item, index)
        names.append(name)
    return names, full_page


def _format_options(item: Mapping[str, Any], index: int) -> bool:
    """A v2 format object's options: a screenshot's ``fullPage``, json's prompt and schema
    (read by :func:`model_json`)."""
    for option, value in item.items():
        if option == "type":
            continue
        if item["type"] == "screenshot" and option == "fullPage" and isinstance(value, bool):
            continue
        if item["type"] == "json" and option in JSON_KEYS:
            continue
        if item["type"] == "json" and option in UNCHECKED and not value:
            continue
        if item["type"] == TRACKING and option in TRACKING_KEYS:
            continue
        raise bad(f"formats[{index}].{option}", "is not offered by this server")
    return bool(item.get("fullPage"))


# what a json format (v2) or jsonOptions (v1) may hold: the native json.prompt and json.schema
JSON_KEYS = frozenset({"prompt", "schema"})


# what the SDKs send in it with a null or false value, the server's own behaviour
UNCHECKED = frozenset({"checkPromptInjection", "check_prompt_injection", "systemPrompt"})


def model_json(formats: Any, json_options: Any) -> dict[str, Any]:
    """The native ``json`` of a json format: v2's object, or v1's ``jsonOptions``; a 400 when
    it names neither a prompt nor a schema."""
    found: Any = json_options
    where = "jsonOptions"
    for index, item in enumerate(formats if isinstance(formats, list) else ()):
        if isinstance(item, Mapping) and item.get("type") == "json":
            found, where = item, f"formats[{index}]"
    if found is None:
        return {}
    if not isinstance(found, Mapping):
        raise bad(where, 'must be an object {"prompt": string, "schema": JSON Schema}')
    for option, value in found.items():
        if option not in JSON_KEYS | UNCHECKED | {"type"} or (option in UNCHECKED and value):
            raise bad(f"{where}.{option}", "is not offered by this server")
    asked = {name: found[name] for name in JSON_KEYS if found.get(name) is not None}
    if not asked:
        raise bad(where, "the json format needs a prompt or a schema")
    return {"json": asked}


# Firecrawl's changeTracking format (v2's object, v1's changeTrackingOptions): the native
# change_tracking's modes and tag, and its json mode by the operator's model (prompt, schema)
TRACKING = "changeTracking"
TRACKING_KEYS = frozenset({"modes", "tag", "prompt", "schema"})


def change_tracking(formats: Any, tracking_options: Any) -> dict[str, Any]:
    """The native ``change_tracking`` of a changeTracking format: v2's object, or v1's
    ``changeTrackingOptions``; nothing when neither gives an option."""
    found: Any = tracking_options
    where = "changeTrackingOptions"
    for index, item in enumerate(formats if isinstance(formats, list) else ()):
        if isinstance(item, Mapping) and item.get("type") == TRACKING:
            found, where = item, f"formats[{index}]"
    if found is None:
        return {}
    if not isinstance(found, Mapping):
        raise bad(where, 'must be an object {"modes", "tag", "prompt", "schema"}')
    for option in found:
        if option not in TRACKING_KEYS | {"type"}:
            raise bad(f"{where}.{option}", "is not offered by this server")
    asked = {name: found[name] for name in TRACKING_KEYS if found.get(name) is not None}
    return {"change_tracking": asked} if asked else {}


def native_formats(value: Any) -> dict[str, Any]:
    names, full_page = format_names(value)
    known = formats()
    native: dict[str, Any] = {
        "formats": sorted({made for name in names if (made := known[name]) is not None})
    }
    if full_page and "screenshot" in names:
        native["screenshot_full_page"] = True
    return native
