"""The jobs' paths in the OpenAPI document (``/batch``, ``/crawl``, ``/map``, ``/jobs``) and
their requests' schemas, made from the scrape request's."""

from __future__ import annotations

from typing import Any

from service.api.openapi.common import (
    as_json,
    component,
    cursor_and_limit,
    error_answers,
    idempotent_post,
    json_body,
    page_of,
)
from service.core.answer_schemas import answer_schema
from service.core.schemas import ScrapeRequest
from service.jobs.answers import RESULTS_LIMIT, JobAccepted, JobItem
from service.jobs.batches import JOBS_LIMIT, MAX_URLS
from service.jobs.crawl_rules import CrawlRules
from service.jobs.webhook_spec import WebhookSpec


def batch_request() -> dict[str, Any]:
    """A scrape request with ``urls`` in place of ``url``: the options apply to every URL."""
    schema: dict[str, Any] = ScrapeRequest.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    schema.pop("$defs", None)
    properties = dict(schema["properties"])
    url = properties.pop("url")
    schema["properties"] = {
        "urls": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_URLS,
            "items": url,
            "description": "each URL is scraped as POST /scrape would with the other fields",
        },
        **properties,
        "webhook": {"$ref": "#/components/schemas/Webhook"},
    }
    schema["required"] = ["urls", *(name for name in schema.get("required", []) if name != "url")]
    schema["title"] = "BatchRequest"
    return schema


def crawl_request() -> dict[str, Any]:
    """A scrape request (its options apply to every page) with the crawl's own fields."""
    schema: dict[str, Any] = ScrapeRequest.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    schema.pop("$defs", None)
    rules = CrawlRules.model_json_schema(ref_template="#/components/schemas/{model}")
    schema["properties"] = {
        **schema["properties"],
        **rules["properties"],
        "webhook": {"$ref": "#/components/schemas/Webhook"},
    }
    schema["title"] = "CrawlRequest"
    return schema


def webhook_schema() -> dict[str, Any]:
    """A job's ``webhook`` (service.jobs.webhook_spec): where its signed events go, and which."""
    schema: dict[str, Any] = WebhookSpec.model_json_schema()
    schema["properties"]["events"]["uniqueItems"] = True
    schema["properties"]["url"] = {
        **ScrapeRequest.model_json_schema()["properties"]["url"],
        "description": "http or https; not a private address unless the service allows those",
    }
    schema["title"] = "Webhook"
    schema["description"] = (
        "POSTs the job's events, signed under the Standard Webhooks scheme with the account's "
        "secret (on the dashboard); all four events when 'events' is left out"
    )
    return schema


def job_paths(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    """The paths that start a job (``/batch``, ``/crawl``, ``/map``) and those that read one."""
    return {**_starting(secured), **_reading(secured)}


def _starting(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    return {
        "/batch": idempotent_post(
            "Scrape up to 1,000 URLs with the same options, asynchronously",
            secured,
            "BatchRequest",
            {
                "202": as_json("the job is stored and queued", answer_schema(JobAccepted)),
                **error_answers(400, 401, 409, 422, 429, 500, 503),
            },
        ),
        "/crawl": idempotent_post(
            "Crawl a site from a URL and its sitemap, asynchronously",
            secured,
            "CrawlRequest",
            {
                "202": as_json("the crawl is stored and queued", answer_schema(JobAccepted)),
                **error_answers(400, 401, 409, 422, 429, 500, 503),
            },
        ),
        "/map": {
            "post": {
                "summary": "A site's URLs from its sitemaps and start page, without scraping them",
                "security": secured,
                "requestBody": json_body("MapRequest"),
                "responses": {
                    "200": as_json("the URLs found", component("MapResult")),
                    **error_answers(400, 401, 402, 429, 500, 503),
                },
            }
        },
    }


def _reading(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    job_id = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "/jobs": {
            "get": {
                "summary": "The account's jobs, newest first",
                "security": secured,
                "parameters": cursor_and_limit(JOBS_LIMIT),
                "responses": {
                    "200": as_json("one page of jobs", page_of(JobItem)),
                    **error_answers(400, 401, 429, 500, 503),
                },
            }
        },
        "/jobs/{job_id}": {
            "get": {
                "summary": "A job: status, counts, credits charged, and a page of results",
                "security": secured,
                "parameters": [job_id, *cursor_and_limit(RESULTS_LIMIT)],
                "responses": {
                    "200": as_json("the job", component("Job")),
                    **error_answers(400, 401, 404, 429, 500, 503),
                },
            },
            "delete": {
                "summary": "Cancel a job: its pending pages are not scraped",
                "security": secured,
                "parameters": [job_id],
                "responses": {
                    "200": as_json(
                        "the job, cancelled (or as it was, when it had finished)",
                        component("JobSummary"),
                    ),
                    **error_answers(401, 404, 429, 500, 503),
                },
            },
        },
    }
