"""The monitors' paths in the OpenAPI document (``/monitors``, ``/monitors/{id}``,
``/monitors/{id}/checks``) and their schemas: the request made from the scrape request's, the
answers written out as service.jobs.monitor_store builds them."""

from __future__ import annotations

from typing import Any

from service.api.openapi.common import as_json, component, cursor_and_limit, error_answers
from service.core.schemas import ScrapeRequest
from service.jobs.crawl_rules import CrawlRules
from service.jobs.monitor_spec import LONGEST_INTERVAL, MAX_CRON, MAX_NAME, MONITOR_EVENTS
from service.jobs.monitor_store import CHECKS_LIMIT, MONITORS_LIMIT

HOUR = 3600
DAY = 24 * HOUR
_MINUTE = "[0-5]?[0-9]"
_HOUR = "(?:[01]?[0-9]|2[0-3])"
_DOM = "(?:[1-9]|1[0-9]|2[0-8])"  # every month has these days
_MONTH = r"(?:\*|[1-9]|1[0-2])"
_DOW = r"(?:\*|[0-6])"


def cron_pattern(least: int) -> str:
    """Cron expressions the schema can promise run no more often than ``least`` seconds: a
    fixed minute (hourly at most), and a fixed hour (daily) or day (monthly) when ``least`` asks
    for it. Others are accepted too, when their runs are far enough apart."""
    hour = r"(?:\*|" + _HOUR + ")" if least <= HOUR else _HOUR
    if least <= DAY:
        return f"^{_MINUTE} {hour} (?:\\*|{_DOM}) {_MONTH} {_DOW}$"
    return f"^{_MINUTE} {_HOUR} {_DOM} {_MONTH} \\*$"


def schedule_schema(least: int) -> dict[str, Any]:
    return {
        "description": "an interval in seconds, or a cron expression of five fields (UTC); "
        f"runs never closer than {least} seconds (a shorter schedule is a 400)",
        "oneOf": [
            {"type": "integer", "minimum": least, "maximum": LONGEST_INTERVAL},
            {"type": "string", "maxLength": MAX_CRON, "pattern": cron_pattern(least)},
        ],
    }


def monitor_webhook() -> dict[str, Any]:
    return {
        "type": "object",
        "title": "MonitorWebhook",
        "description": "POSTs the monitor's events, signed as the jobs' are (Standard Webhooks, "
        "the account's secret): 'change' when a run found a change, 'run' after every run, "
        "'failed' when a run failed or was skipped, and when the monitor was paused; all three "
        "when 'events' is left out",
        "required": ["url"],
        "additionalProperties": False,
        "properties": {
            "url": {
                **ScrapeRequest.model_json_schema()["properties"]["url"],
                "description": "http or https; not a private address unless the service "
                "allows those",
            },
            "events": {
                "type": "array",
                "minItems": 1,
                "maxItems": len(MONITOR_EVENTS),
                "uniqueItems": True,
                "items": {"enum": list(MONITOR_EVENTS)},
            },
        },
    }


def monitor_request(least: int) -> dict[str, Any]:
    """A scrape request's options (each run's), with what the monitor watches (``url``, or
    ``crawl``: a crawl's start and rules), its ``schedule``, ``name`` and ``webhook``."""
    schema: dict[str, Any] = ScrapeRequest.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    schema.pop("$defs", None)
    properties = dict(schema["properties"])
    url = properties["url"]
    rules = CrawlRules.model_json_schema(ref_template="#/components/schemas/{model}")
    rules.pop("$defs", None)
    crawl = {
        "type": "object",
        "description": "a crawl from 'url' by the rules of POST /crawl, run as one job",
        "required": ["url"],
        "additionalProperties": False,
        "properties": {"url": url, **rules["properties"]},
    }
    schema["properties"] = {
        **properties,
        "crawl": crawl,
        "schedule": schedule_schema(least),
        "name": {"type": ["string", "null"], "maxLength": MAX_NAME},
        "webhook": component("MonitorWebhook"),
    }
    schema["required"] = ["schedule"]
    schema["oneOf"] = [
        {"required": ["url"], "not": {"required": ["crawl"]}},
        {"required": ["crawl"], "not": {"required": ["url"]}},
    ]
    schema["title"] = "MonitorRequest"
    return schema


def monitor_change(least: int) -> dict[str, Any]:
    return {
        "type": "object",
        "title": "MonitorChange",
        "description": "pause ('status': 'paused'), resume ('active'), reschedule, rename, or "
        "set the webhook (null removes it); a resumed or rescheduled monitor runs next at its "
        "schedule's first time from now",
        "minProperties": 1,
        "additionalProperties": False,
        "properties": {
            "status": {"enum": ["active", "paused"]},
            "schedule": schedule_schema(least),
            "name": {"type": ["string", "null"], "maxLength": MAX_NAME},
            "webhook": {"oneOf": [component("MonitorWebhook"), {"type": "null"}]},
        },
    }


_TIME = {"type": "string", "format": "date-time"}
_NULLABLE_TIME = {"type": ["string", "null"], "format": "date-time"}


def check_schema() -> dict[str, Any]:
    count = {"type": "integer", "minimum": 0}
    return {
        "type": "object",
        "title": "MonitorCheck",
        "description": "one run of a monitor: its job, status, pages, changes and credits",
        "required": [
            "id",
            "monitor_id",
            "job_id",
            "status",
            "scheduled_for",
            "started_at",
            "finished_at",
            "changed",
            "credits_charged",
            "pages",
            "changes",
            "results",
            "error",
        ],
        "properties": {
            "id": {"type": "string"},
            "monitor_id": {"type": "string"},
            "job_id": {"type": ["string", "null"]},
            "status": {
                "enum": ["running", "completed", "failed", "insufficient_credits", "cancelled"]
            },
            "scheduled_for": _TIME,
            "started_at": _TIME,
            "finished_at": _NULLABLE_TIME,
            "changed": {"type": "boolean"},
            "credits_charged": count,
            "pages": {
                "type": ["object", "null"],
                "additionalProperties": count,
            },
            "changes": {
                "type": "array",
                "description": "the pages whose change_tracking says other than 'same', with "
                "that object as the scrape made it (its diff)",
                "items": {
                    "type": "object",
                    "required": ["url", "change_status", "change_tracking"],
                    "properties": {
                        "url": {"type": "string"},
                        "change_status": {"type": "string"},
                        "change_tracking": {"type": "object"},
                    },
                },
            },
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["url", "status", "credits", "error", "change_status"],
                    "properties": {
                        "url": {"type": "string"},
                        "status": {"type": "string"},
                        "credits": count,
                        "error": {"type": ["string", "null"]},
                        "change_status": {"type": ["string", "null"]},
                    },
                },
            },
            "error": {"type": ["string", "null"]},
        },
    }


def monitor_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "title": "Monitor",
        "required": [
            "id",
            "name",
            "kind",
            "url",
            "crawl",
            "schedule",
            "status",
            "paused_reason",
            "options",
            "webhook",
            "next_run_at",
            "last_run_at",
            "created_at",
            "last_check",
            "last_change",
        ],
        "properties": {
            "id": {"type": "string"},
            "name": {"type": ["string", "null"]},
            "kind": {"enum": ["url", "crawl"]},
            "url": {"type": "string"},
            "crawl": {"type": ["object", "null"]},
            "schedule": {"type": ["integer", "string"]},
            "status": {"enum": ["active", "paused"]},
            "paused_reason": {"enum": ["paused", "insufficient_credits", None]},
            "options": {"type": "object"},
            "webhook": {"oneOf": [component("MonitorWebhook"), {"type": "null"}]},
            "next_run_at": _NULLABLE_TIME,
            "last_run_at": _NULLABLE_TIME,
            "created_at": _TIME,
            "last_check": {"oneOf": [component("MonitorCheck"), {"type": "null"}]},
            "last_change": {"oneOf": [component("MonitorCheck"), {"type": "null"}]},
        },
    }


def _page(item: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["items", "next_cursor"],
        "properties": {
            "items": {"type": "array", "items": component(item)},
            "next_cursor": {"type": ["string", "null"]},
        },
    }


def monitor_schemas(least: int) -> dict[str, Any]:
    return {
        "MonitorRequest": monitor_request(least),
        "MonitorChange": monitor_change(least),
        "MonitorWebhook": monitor_webhook(),
        "Monitor": monitor_schema(),
        "MonitorCheck": check_schema(),
    }


_MONITOR_ID = {"name": "monitor_id", "in": "path", "required": True, "schema": {"type": "string"}}
_DELETED = {
    "type": "object",
    "required": ["id", "deleted"],
    "properties": {"id": {"type": "string"}, "deleted": {"const": True}},
}


def monitor_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    monitor_id, deleted = dict(_MONITOR_ID), dict(_DELETED)
    return {
        "/monitors": {
            "post": {
                "summary": "Watch a URL, or a crawl, on a schedule: each run a check",
                "security": secured,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": component("MonitorRequest")}},
                },
                "responses": {
                    "201": as_json("the monitor; its first run is due now", component("Monitor")),
                    **error_answers(400, 401, 409, 429, 500, 503),
                },
            },
            "get": {
                "summary": "The account's monitors, newest first, with their last checks",
                "security": secured,
                "parameters": cursor_and_limit(MONITORS_LIMIT),
                "responses": {
                    "200": as_json("one page of monitors", _page("Monitor")),
                    **error_answers(400, 401, 429, 500, 503),
                },
            },
        },
        "/monitors/{monitor_id}": {
            "get": {
                "summary": "A monitor, with its last check and last change",
                "security": secured,
                "parameters": [monitor_id],
                "responses": {
                    "200": as_json("the monitor", component("Monitor")),
                    **error_answers(401, 404, 429, 500, 503),
                },
            },
            "patch": {
                "summary": "Pause, resume, reschedule or rename a monitor, or set its webhook",
                "security": secured,
                "parameters": [monitor_id],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": component("MonitorChange")}},
                },
                "responses": {
                    "200": as_json("the monitor, changed", component("Monitor")),
                    **error_answers(400, 401, 404, 429, 500, 503),
                },
            },
            "delete": {
                "summary": "Delete a monitor and its checks; a run in flight is cancelled",
                "security": secured,
                "parameters": [monitor_id],
                "responses": {
                    "200": as_json("deleted", deleted),
                    **error_answers(401, 404, 429, 500, 503),
                },
            },
        },
        "/monitors/{monitor_id}/checks": {
            "get": {
                "summary": "A monitor's checks (its runs), newest first",
                "security": secured,
                "parameters": [monitor_id, *cursor_and_limit(CHECKS_LIMIT)],
                "responses": {
                    "200": as_json("one page of checks", _page("MonitorCheck")),
                    **error_answers(400, 401, 404, 429, 500, 503),
                },
            }
        },
    }
