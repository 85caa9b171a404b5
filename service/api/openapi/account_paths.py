"""The account's paths in the OpenAPI document: ``/account``, ``/usage``, ``/ledger`` and the
sessions."""

from __future__ import annotations

from typing import Any

from service.api.openapi.common import as_json, error_answers, listing
from service.billing.answers import LedgerEntry, UsageRow


def account_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    return {
        "/account": {
            "get": {
                "summary": "The key's account: balance, held, available, trials, rate limits",
                "security": secured,
                "responses": {
                    "200": {
                        "description": "the account's figures, as the ledger has them",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Account"}}
                        },
                    },
                    **error_answers(400, 401, 429, 500, 503),
                },
            }
        },
        **session_paths(secured),
        "/usage": listing("The account's scrapes, newest first", UsageRow, secured),
        "/ledger": listing("The account's changes of balance, newest first", LedgerEntry, secured),
    }


def session_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    session_id = {
        "name": "session_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
    }
    return {
        "/sessions": {
            "get": {
                "summary": "The account's live sessions (names, times, exit tier; no cookies)",
                "security": secured,
                "responses": {
                    "200": as_json("the sessions", {"$ref": "#/components/schemas/SessionList"}),
                    **error_answers(400, 401, 429, 500, 503),
                },
            }
        },
        "/sessions/{session_id}": {
            "delete": {
                "summary": "End a session: its cookies, storage and exit are forgotten",
                "security": secured,
                "parameters": [session_id],
                "responses": {
                    "200": as_json("ended", {"$ref": "#/components/schemas/SessionEnded"}),
                    **error_answers(401, 404, 429, 500, 503),
                },
            }
        },
    }
