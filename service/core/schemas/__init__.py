"""Request bodies: one definition gives validation, error messages and the OpenAPI schemas.

One module per family: :mod:`.scrape` (``POST /scrape``, and the scrape options of the jobs and
the Firecrawl front), with what it sends and asks (:mod:`.page_options`), its browser steps
(:mod:`.actions`) and its rules across fields (:mod:`.scrape_rules`); :mod:`.buy` (a credit
purchase); :mod:`.common` (the strict model and the patterns they share); :mod:`.validation`
(how a body and its errors are read)."""

from __future__ import annotations

from service.core.schemas.actions import ACTION_TYPES, Action, WaitFor
from service.core.schemas.buy import MAX_AMOUNT_EUR, MIN_AMOUNT_EUR, PACKS, BuyRequest
from service.core.schemas.common import (
    _HTTP_URL,
    ACTIONS_NEED_JS,
    CREDENTIALS_REFUSED,
    FULL_PAGE_NEEDS_SCREENSHOT,
    MAX_URL_LENGTH,
    SCREENSHOT_NEEDS_JS,
    URL_PATTERN,
    Whole,
    _Strict,
)
from service.core.schemas.page_options import (
    FORMAT_NEEDS_JSON,
    JSON_NEEDS_FORMAT,
    NO_LLM,
    Cookie,
    JsonOptions,
    Location,
)
from service.core.schemas.scrape import FormatName, ScrapeRequest, checked_scrape
from service.core.schemas.validation import parse_json_object, validate

__all__ = [
    "ACTIONS_NEED_JS",
    "ACTION_TYPES",
    "CREDENTIALS_REFUSED",
    "FORMAT_NEEDS_JSON",
    "FULL_PAGE_NEEDS_SCREENSHOT",
    "JSON_NEEDS_FORMAT",
    "MAX_AMOUNT_EUR",
    "MAX_URL_LENGTH",
    "MIN_AMOUNT_EUR",
    "NO_LLM",
    "PACKS",
    "SCREENSHOT_NEEDS_JS",
    "URL_PATTERN",
    "_HTTP_URL",
    "Action",
    "BuyRequest",
    "Cookie",
    "FormatName",
    "JsonOptions",
    "Location",
    "ScrapeRequest",
    "WaitFor",
    "Whole",
    "_Strict",
    "checked_scrape",
    "parse_json_object",
    "validate",
]
