"""``GET /openapi.json``: built from the same pydantic models that validate the requests."""

from __future__ import annotations

from typing import Any

from service import results
from service.config import ENGINES, TIERS
from service.errors import ERROR_CODES
from service.schemas import PACKS, BuyRequest, ScrapeRequest

_ERROR = {
    "type": "object",
    "required": ["error", "error_code"],
    "properties": {
        "error": {"type": "string", "description": "what went wrong, for people"},
        "error_code": {
            "enum": list(ERROR_CODES),
            "description": "what went wrong, for programs: "
            + "; ".join(f"{code}: {meaning}" for code, meaning in ERROR_CODES.items()),
        },
    },
    "additionalProperties": False,
}

_TIER_COSTS = {
    "type": "object",
    "required": list(TIERS),
    "properties": {tier: {"type": "integer", "minimum": 0} for tier in TIERS},
    "additionalProperties": False,
}

PRICE_LIST: dict[str, Any] = {
    "type": "object",
    "required": ["currency", "credits_per_euro", "packs", "min_amount_eur", "costs"],
    "properties": {
        "currency": {"const": "EUR"},
        "credits_per_euro": {"type": "integer", "minimum": 1},
        "packs": {"type": "array", "items": {"enum": list(PACKS)}},
        "min_amount_eur": {"type": "number", "minimum": 0},
        "costs": {
            "type": "object",
            "description": "credits per billed scrape, by engine and proxy tier",
            "required": list(ENGINES),
            "properties": {engine: _TIER_COSTS for engine in ENGINES},
            "additionalProperties": False,
        },
    },
}


def _errors(*statuses: int) -> dict[str, Any]:
    meanings = {
        400: "invalid input",
        401: "missing or invalid X-API-Key",
        402: "insufficient credits; nothing scraped, nothing billed",
        403: "free residential trials used up and residential not unlocked",
        429: "rate limit exceeded (scrapes per key, checkouts per account); see Retry-After",
        500: "unexpected error",
        502: "the payment provider failed",
        503: "temporarily unavailable (database down, at capacity, payments not configured)",
    }
    out: dict[str, Any] = {}
    for status in statuses:
        entry: dict[str, Any] = {
            "description": meanings[status],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        if status in (429,):
            entry["headers"] = {"Retry-After": {"schema": {"type": "integer", "minimum": 1}}}
        out[str(status)] = entry
    return out


def _schema(model: type) -> dict[str, Any]:
    schema: dict[str, Any] = model.model_json_schema(ref_template="#/components/schemas/{model}")  # type: ignore[attr-defined]
    schema.pop("$defs", None)
    return schema


def document(public_url: str) -> dict[str, Any]:
    secured: list[dict[str, list[str]]] = [{"ApiKey": []}]
    return {
        "openapi": "3.1.0",
        "info": {"title": "scrapespy", "version": "0.1.0"},
        "servers": [{"url": public_url}],
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
            "schemas": {
                "ScrapeRequest": _schema(ScrapeRequest),
                "BuyRequest": _schema(BuyRequest),
                "ScrapeResult": results.json_schema(),
                "Error": _ERROR,
            },
        },
        "paths": {
            "/scrape": {
                "post": {
                    "summary": "Fetch one URL and return structured JSON",
                    "security": secured,
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/ScrapeRequest"}
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "the scrape result (success may be false)",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/ScrapeResult"}
                                }
                            },
                        },
                        **_errors(400, 401, 402, 403, 429, 500, 503),
                    },
                }
            },
            "/credits/buy": {
                "post": {
                    "summary": "Start a credit purchase; returns the hosted checkout URL",
                    "security": secured,
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/BuyRequest"}
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "checkout created",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["url"],
                                        "properties": {"url": {"type": "string"}},
                                    }
                                }
                            },
                        },
                        **_errors(400, 401, 429, 500, 502, 503),
                    },
                }
            },
            "/webhooks/stripe": {
                "post": {
                    "summary": "Stripe's payment confirmations (called by Stripe, not by users)",
                    "description": "The raw body is verified against the Stripe-Signature header "
                    "with STRIPE_WEBHOOK_SECRET (300 s tolerance). checkout.session.completed "
                    "with payment_status paid and checkout.session.async_payment_succeeded "
                    "credit the account once per session; async_payment_failed and expired mark "
                    "the payment failed; other events are acknowledged and ignored.",
                    "parameters": [
                        {
                            "name": "Stripe-Signature",
                            "in": "header",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "responses": {
                        "200": {
                            "description": "event received (replays included)",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "received": {"type": "boolean"},
                                            "outcome": {"type": "string"},
                                        },
                                    }
                                }
                            },
                        },
                        **_errors(400, 500, 503),
                    },
                }
            },
            "/pricing": {
                "get": {
                    "summary": "Public price list",
                    "responses": {
                        "200": {
                            "description": "prices",
                            "content": {"application/json": {"schema": PRICE_LIST}},
                        }
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "Liveness and database check",
                    "responses": {
                        "200": {
                            "description": "healthy",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["status"],
                                        "properties": {"status": {"const": "ok"}},
                                    }
                                }
                            },
                        },
                        **_errors(503),
                    },
                }
            },
        },
    }
