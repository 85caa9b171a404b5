"""What the OpenAPI document's paths share: the error answer and its header, the credit
headers, the listings' parameters, the Idempotency-Key, JSON bodies and answers, the POST that
takes an Idempotency-Key, and the models' schemas."""

from __future__ import annotations

from typing import Any

from service.billing.answers import Page
from service.core.answer_schemas import answer_schema
from service.core.errors import ERROR_CODE_HEADER, ERROR_CODE_HEADER_DESCRIPTION, ERROR_CODES
from service.web.account import DEFAULT_LIMIT, MAX_LIMIT

ERROR_ANSWER = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string", "description": "what went wrong, for people"}},
    "additionalProperties": False,
    "description": f"Every error answer; what went wrong, for programs, is its {ERROR_CODE_HEADER} "
    "header",
}
# the header of every error answer, described once (components.headers) and referred to
ERROR_CODE_REF = "#/components/headers/ErrorCode"
ERROR_CODE_SCHEMA = {
    "required": True,
    "description": ERROR_CODE_HEADER_DESCRIPTION
    + " ("
    + "; ".join(f"{code}: {meaning}" for code, meaning in ERROR_CODES.items())
    + ")",
    "schema": {"enum": list(ERROR_CODES)},
}

CREDIT_HEADERS: dict[str, Any] = {
    "X-Credits-Charged": {
        "description": "credits this answer cost (credits_charged): 0 for a failure, a blocked "
        "page, a residential trial, a cached answer or an Idempotency-Key replay",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    },
    "X-Credits-Remaining": {
        "description": "the account's balance once this scrape was settled (for a cached "
        "answer, when it was given; for an Idempotency-Key replay, now); other scrapes' holds "
        "are not subtracted",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    },
}


_TIME_BOUND = {
    "anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]
}

# a listing's page after the one given: the same parameter on every listing
CURSOR: dict[str, Any] = {
    "name": "cursor",
    "in": "query",
    "description": "the next_cursor of the previous page; anything else is a 400",
    "schema": {"type": "string"},
}

LISTING_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "since",
        "in": "query",
        "description": "rows at or after this time (a date-time with an offset, or a date: "
        "midnight UTC)",
        "schema": _TIME_BOUND,
    },
    {
        "name": "until",
        "in": "query",
        "description": "rows before this time",
        "schema": _TIME_BOUND,
    },
    CURSOR,
    {
        "name": "limit",
        "in": "query",
        "description": "rows per page",
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    },
]


def page_of(item: type) -> dict[str, Any]:
    """A page of a listing of ``item``s, which it refers to by their component."""
    return answer_schema(Page[item], (item,))  # type: ignore[valid-type]


def listing(summary: str, item: type, secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "security": secured,
            "parameters": LISTING_PARAMETERS,
            "responses": {
                "200": {
                    "description": "one page, newest first",
                    "content": {"application/json": {"schema": page_of(item)}},
                },
                **error_answers(400, 401, 429, 500, 503),
            },
        }
    }


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "description": "the same key with the same body within 24 hours answers what the first "
    "call answered, charging nothing more; another body is a 422",
    "schema": {"type": "string", "pattern": "^[!-~]{1,255}$"},
}


def cursor_and_limit(most: int) -> list[dict[str, Any]]:
    return [
        CURSOR,
        {
            "name": "limit",
            "in": "query",
            "schema": {"type": "integer", "minimum": 1, "maximum": most, "default": most},
        },
    ]


def component(name: str) -> dict[str, str]:
    """A reference to the schema ``name`` of the document's components."""
    return {"$ref": f"#/components/schemas/{name}"}


def as_json(
    description: str, schema: dict[str, Any], headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description}
    if headers is not None:
        answer["headers"] = headers
    answer["content"] = {"application/json": {"schema": schema}}
    return answer


def json_body(name: str) -> dict[str, Any]:
    """A required JSON request body, the component ``name``."""
    return {"required": True, "content": {"application/json": {"schema": component(name)}}}


def idempotent_post(
    summary: str, secured: list[dict[str, list[str]]], request: str, responses: dict[str, Any]
) -> dict[str, Any]:
    """A POST that takes the component ``request`` as its body and an Idempotency-Key (a
    scrape, a batch, a crawl)."""
    return {
        "post": {
            "summary": summary,
            "security": secured,
            "parameters": [IDEMPOTENCY_KEY],
            "requestBody": json_body(request),
            "responses": responses,
        }
    }


def error_answers(*statuses: int) -> dict[str, Any]:
    meanings = {
        400: "invalid input",
        401: "missing or invalid X-API-Key",
        402: "insufficient credits, the API key's monthly cap reached, or a price over the "
        "request's max_credits; nothing scraped, "
        "nothing billed",
        403: "free residential trials used up and residential not unlocked",
        404: "no such job (or session, or monitor) for this account",
        409: "the first request with this Idempotency-Key is still running (see Retry-After), "
        "or the account has as many sessions as it may (too_many_sessions)",
        422: "this Idempotency-Key was used with another body",
        429: "rate limit exceeded (scrapes or reads per key, checkouts per account; see "
        "Retry-After), or the account's jobs in flight at their limit (too_many_jobs), or its "
        "monitors (too_many_monitors)",
        500: "unexpected error",
        502: "the payment provider failed",
        503: "temporarily unavailable (database down, at capacity, payments not configured, "
        "the search backend failing)",
    }
    out: dict[str, Any] = {}
    for status in statuses:
        entry: dict[str, Any] = {
            "description": meanings[status],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            "headers": {ERROR_CODE_HEADER: {"$ref": ERROR_CODE_REF}},
        }
        if status in (409, 429):
            entry["headers"]["Retry-After"] = {"schema": {"type": "integer", "minimum": 1}}
        out[str(status)] = entry
    return out


def model_schemas(*models: type) -> dict[str, Any]:
    """Each model's schema by its name, with the models they refer to (a scrape's steps and
    cookies) beside them."""
    out: dict[str, Any] = {}
    for model in models:
        schema: dict[str, Any] = model.model_json_schema(  # type: ignore[attr-defined]
            ref_template="#/components/schemas/{model}"
        )
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out
