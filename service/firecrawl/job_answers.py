"""Native jobs as Firecrawl's answers: a job's status page, its errors and the account's
active crawls, each job named by its Firecrawl id (service.firecrawl.ids)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from service.firecrawl.ids import page_id, shown_id
from service.firecrawl.jobs import CRAWLER_OPTIONS
from service.firecrawl.scrape import Version, document
from service.jobs.answers import JobSummary
from service.jobs.outcomes import Active, Scraped, Unscraped

# the native job's status -> Firecrawl's
STATUSES: dict[str, str] = {
    "queued": "scraping",
    "running": "scraping",
    "completed": "completed",
    "cancelled": "cancelled",
    "failed": "failed",
    "insufficient_credits": "failed",
}


def status_page(
    found: Scraped, version: Version, next_url: str | None, retention_days: int
) -> dict[str, Any]:
    """``GET /crawl/{id}`` and ``/batch/scrape/{id}``: the job, and its pages' documents after
    the cursor (a page the target answered with an error status among them, unbilled)."""
    summary = found.summary
    counts = summary["counts"]
    shown = found.options.get("firecrawl") or {}
    answer: dict[str, Any] = {
        "success": True,
        "status": STATUSES[summary["status"]],
        "total": summary["total"],
        "completed": counts["done"] + counts["failed"] + counts["blocked"],
        "creditsUsed": summary["credits_charged"],
        "expiresAt": expires_at(summary, retention_days),
        "data": [document(result, shown, version) for _, result in found.results],
    }
    if next_url is not None:
        answer["next"] = next_url
    if summary["error"]:
        answer["warning"] = summary["error"]
    return answer


def expires_at(summary: JobSummary, retention_days: int) -> str:
    """When the job's results are deleted (service.jobs.batches.Batches.purge)."""
    made = datetime.fromisoformat(summary["created_at"])
    return (made + timedelta(days=retention_days)).isoformat().replace("+00:00", "Z")


def errors_answer(public_id: str, pages: list[Unscraped]) -> dict[str, Any]:
    """``GET /crawl/{id}/errors``: the pages that failed or were blocked, robots.txt's apart.
    Each error's ``id`` is its page's, a UUID as Firecrawl's scrape ids are: the same for the
    same page of the job at every call."""
    errors: list[dict[str, Any]] = []
    robots: list[str] = []
    for page in pages:
        result = page.result or {}
        code = result.get("error_code")
        if code == "robots_disallowed":
            robots.append(page.url)
            continue
        why = result.get("error") or (
            "an anti-bot page answered" if page.status == "blocked" else "the page failed"
        )
        errors.append(
            {
                "id": page_id(public_id, page.position),
                "timestamp": page.at,
                "url": page.url,
                "code": code,
                "error": why,
            }
        )
    return {"success": True, "errors": errors, "robotsBlocked": robots}


def active_answer(found: list[Active], team_id: str) -> dict[str, Any]:
    """``GET /crawl/active``: the account's crawls still running, each with when it was made
    and its options as the caller sent them (the crawl's fields and its ``scrapeOptions``)."""
    return {
        "success": True,
        "crawls": [
            {
                "id": shown_id(crawl.public_id),
                "teamId": team_id,
                "url": crawl.url,
                "created_at": crawl.created_at,
                "options": crawl_options(crawl.options),
            }
            for crawl in found
        ],
    }


def crawl_options(stored: Mapping[str, Any]) -> dict[str, Any]:
    shown = dict(stored.get("firecrawl") or {})
    crawler = shown.pop(CRAWLER_OPTIONS, None) or {}
    return {**crawler, "scrapeOptions": shown}
