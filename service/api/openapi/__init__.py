"""``GET /openapi.json``: built from the same pydantic models that validate the requests, and
from the types the answers are built with (service.billing.answers, service.jobs.answers).

One module per group of paths: :mod:`.scrape_paths` (``POST /scrape``, and what the running
configuration bounds in its schema), :mod:`.job_paths` (batch, crawl, map, jobs),
:mod:`.search_paths` (``POST /search``), :mod:`.monitor_paths` (``/monitors``),
:mod:`.account_paths` (account, usage, ledger, sessions) and :mod:`.billing_paths` (credits,
Stripe's webhook, prices), with what they share in :mod:`.common`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from service.api.openapi.account_paths import account_paths
from service.api.openapi.billing_paths import billing_paths
from service.api.openapi.common import (
    ERROR_ANSWER,
    ERROR_CODE_HEADER_DESCRIPTION,
    ERROR_CODE_REF,
    ERROR_CODE_SCHEMA,
    error_answers,
    model_schemas,
)
from service.api.openapi.job_paths import batch_request, crawl_request, job_paths, webhook_schema
from service.api.openapi.monitor_paths import monitor_paths, monitor_schemas
from service.api.openapi.scrape_paths import idle_bounded, place, scrape_paths
from service.api.openapi.search_paths import search_paths, search_schemas
from service.billing.answers import Account, LedgerEntry, UsageRow
from service.core.answer_schemas import answer_schema
from service.core.schemas import BuyRequest, ScrapeRequest
from service.jobs.answers import Job, JobItem, JobSummary, MapResult
from service.jobs.crawl_rules import MapRequest
from service.scrape import results
from service.scrape.sessions import SessionEnded, SessionList

# SCRAPESPY_MONITOR_MIN_INTERVAL_SECONDS's default: the service passes its own
DEFAULT_MIN_INTERVAL = 300

__all__ = ["ERROR_CODE_HEADER_DESCRIPTION", "ERROR_CODE_REF", "document"]

_HEALTH: dict[str, Any] = {
    "get": {
        "summary": "Liveness, database and job queue check",
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
            **error_answers(503),
        },
    }
}


def document(
    public_url: str,
    countries: Mapping[str, Sequence[str]] | None = None,
    max_idle_seconds: int | None = None,
    monitor_min_interval: int = DEFAULT_MIN_INTERVAL,
) -> dict[str, Any]:
    """The OpenAPI document; with ``countries`` (``Config.countries``) it says which
    ``location.country`` each ``proxy_type`` may ask for, with ``max_idle_seconds``
    (``Config.session_max_idle_seconds``) the most ``session_idle_seconds`` may be."""
    made = _document(public_url, monitor_min_interval)
    place(made["components"]["schemas"], countries or {})
    if max_idle_seconds is not None:
        idle_bounded(made["components"]["schemas"], max_idle_seconds)
    return made


def _document(public_url: str, monitor_min_interval: int) -> dict[str, Any]:
    secured: list[dict[str, list[str]]] = [{"ApiKey": []}]
    return {
        "openapi": "3.1.0",
        "info": {"title": "scrapespy", "version": "0.1.0"},
        "servers": [{"url": public_url}],
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
            "headers": {"ErrorCode": ERROR_CODE_SCHEMA},
            "schemas": {
                **model_schemas(ScrapeRequest, BuyRequest, MapRequest),
                "CrawlRequest": crawl_request(),
                "MapResult": answer_schema(MapResult),
                "ScrapeResult": results.json_schema(),
                "Error": ERROR_ANSWER,
                "Account": answer_schema(Account),
                "UsageRow": answer_schema(UsageRow),
                "LedgerEntry": answer_schema(LedgerEntry),
                "BatchRequest": batch_request(),
                "Webhook": webhook_schema(),
                "JobItem": answer_schema(JobItem),
                "JobSummary": answer_schema(JobSummary),
                "Job": answer_schema(Job, (results.ScrapeResult,)),
                "SessionList": answer_schema(SessionList),
                "SessionEnded": answer_schema(SessionEnded),
                **search_schemas(),
                **monitor_schemas(monitor_min_interval),
            },
        },
        "paths": {
            **scrape_paths(secured),
            **search_paths(secured),
            **job_paths(secured),
            **monitor_paths(secured),
            **account_paths(secured),
            **billing_paths(secured),
            "/healthz": _HEALTH,
        },
    }
