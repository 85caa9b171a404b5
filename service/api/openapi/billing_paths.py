"""Buying credits in the OpenAPI document: ``/credits/buy``, Stripe's webhook and
``/pricing``."""

from __future__ import annotations

from typing import Any

from service.api.openapi.common import error_answers
from service.billing.answers import PriceList
from service.core.answer_schemas import answer_schema


def billing_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    return {
        "/credits/buy": {
            "post": {
                "summary": "Start a credit purchase; returns the hosted checkout URL",
                "security": secured,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/BuyRequest"}}
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
                    **error_answers(400, 401, 429, 500, 502, 503),
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
                    **error_answers(400, 500, 503),
                },
            }
        },
        "/pricing": {
            "get": {
                "summary": "Public price list",
                "responses": {
                    "200": {
                        "description": "prices",
                        "content": {"application/json": {"schema": answer_schema(PriceList)}},
                    }
                },
            }
        },
    }
