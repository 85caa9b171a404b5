"""Firecrawl's webhooks for the crawls and batch scrapes started on ``/v1`` and ``/v2``.

A job's ``webhook`` is Firecrawl's field (a URL, or ``{"url", "headers", "metadata",
"events"}``); :func:`native_webhook` checks it and gives what the native job stores under its
``webhook``, flavoured ``firecrawl``. The deliveries are the native ones (the same rows, lease,
retries, address checks and queue: service.jobs.webhooks); only each attempt's body and headers
are Firecrawl's, made by :func:`firecrawl_delivery`, which the process hands to the sender
(:data:`FLAVOURS`).

The body is Firecrawl's: ``{"success", "type": "crawl.page" | "batch_scrape.completed" | ...,
"id", "webhookId", "data": [documents] for a page and [] otherwise, "error" when something
failed, "metadata": the webhook's own}``. The webhook's ``headers`` are added to the POST, and
``X-Firecrawl-Signature: sha256=<hex>`` is the HMAC-SHA256 of the raw body under the account's
webhook secret (the dashboard's, the one native webhooks are signed with), as Firecrawl's
receivers verify it. ``webhookId`` is the delivery's: the same on every attempt of it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson

from service.core.errors import BadRequest
from service.firecrawl.formats import formats
from service.firecrawl.ids import shown_id
from service.firecrawl.scrape import Version, document, failed
from service.jobs.webhook_flavours import Flavour, Outgoing
from service.jobs.webhook_spec import EVENTS, checked_webhook
from service.jobs.webhook_store import Delivery

FLAVOUR = "firecrawl"
FIELDS = frozenset({"url", "headers", "metadata", "events"})
SIGNATURE_HEADER = "x-firecrawl-signature"
# the native job's kind -> the first part of Firecrawl's event names
JOB_TYPES = {"crawl": "crawl", "batch": "batch_scrape"}
# why a job that stopped without an error of its own failed, by its native status
STOPPED = {
    "cancelled": "the job was cancelled",
    "insufficient_credits": "the account ran out of credits",
    "failed": "the job failed",
}
# a page that did not succeed without a message of its own, by its native status
PAGE_FAILED = {
    "blocked": "the page is an anti-bot page",
    "failed": "the page could not be scraped",
}


def native_webhook(value: Any, version: Version) -> dict[str, Any]:
    """What a native job stores under ``webhook`` for Firecrawl's ``webhook`` field; a 400
    names ``webhook.<field>``. Events left out, or none, are all of them (Firecrawl's rule)."""
    if isinstance(value, str):
        value = {"url": value}
    if not isinstance(value, dict):
        raise BadRequest("invalid request: 'webhook': must be a URL or an object with 'url'")
    unknown = sorted(set(value) - FIELDS)
    if unknown:
        raise BadRequest(f"unknown field 'webhook.{unknown[0]}'")
    given = {name: item for name, item in value.items() if item is not None}
    events = given.get("events") or list(EVENTS)
    if isinstance(events, list) and all(isinstance(event, str) for event in events):
        events = list(dict.fromkeys(events))
    return checked_webhook(
        {
            "url": given.get("url"),
            "events": events,
            "flavour": FLAVOUR,
            "version": version,
            "headers": given.get("headers", {}),
            "metadata": given.get("metadata", {}),
        },
        flavoured=True,
    )


def firecrawl_delivery(delivery: Delivery, secret: str, sent_at: datetime) -> Outgoing:
    """One attempt of a delivery as Firecrawl sends it: its body, the webhook's headers and
    the signature of the body."""
    body = orjson.dumps(event_body(delivery))
    headers = {name.lower(): text for name, text in delivery.hook.get("headers", {}).items()}
    headers[SIGNATURE_HEADER] = signature(secret, body)
    return Outgoing(body, headers)


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def event_body(delivery: Delivery) -> dict[str, Any]:
    """Firecrawl's body of the delivery's event (keys in Firecrawl's order)."""
    told = orjson.loads(delivery.payload)["data"]
    success, data, error = _page(delivery, told["page"]) if delivery.event == "page" else _job(told)
    body: dict[str, Any] = {
        "success": success,
        "type": f"{JOB_TYPES.get(delivery.kind, delivery.kind)}.{delivery.event}",
        "id": shown_id(delivery.job_id),
        "webhookId": delivery.message_id,
        "data": data,
    }
    if error is not None:
        body["error"] = error
    body["metadata"] = dict(delivery.hook.get("metadata", {}))
    return body


def _job(summary: Mapping[str, Any]) -> tuple[bool, list[Any], str | None]:
    status = summary["status"]
    if status in STOPPED:
        return False, [], summary.get("error") or STOPPED[status]
    return True, [], None


def _page(delivery: Delivery, page: Mapping[str, Any]) -> tuple[bool, list[Any], str | None]:
    """A finished page: its document as the job's scrape options describe it (none when its
    result was too large for a delivery: the job's status pages have it). A page the target
    answered with an error status is a document, ``success: true``, as in Firecrawl."""
    result = page.get("result")
    success = page["status"] == "done" or (result is not None and not failed(result))
    docs = [] if result is None else [document(result, _options(delivery), _version(delivery))]
    if success:
        return True, docs, None
    error = (result or {}).get("error") or PAGE_FAILED.get(page["status"], PAGE_FAILED["failed"])
    return False, docs, error


def _options(delivery: Delivery) -> Mapping[str, Any]:
    """Firecrawl's scrape options of the job's pages: those the job was made with (kept under
    ``firecrawl`` in its options, service.firecrawl.jobs), else read from its native formats."""
    shown = delivery.options.get("firecrawl")
    if isinstance(shown, Mapping):
        return shown
    if "formats" not in delivery.options:
        return {}
    # the native format -> Firecrawl's, to describe a page as the job's scrape options asked
    firecrawl = {native: name for name, native in formats().items() if native}
    names = (firecrawl.get(name) for name in delivery.options["formats"])
    return {"formats": [name for name in names if name]}


def _version(delivery: Delivery) -> Version:
    return 1 if delivery.hook.get("version") == 1 else 2


FLAVOURS: dict[str, Flavour] = {FLAVOUR: firecrawl_delivery}
