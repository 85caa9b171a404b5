"""Firecrawl's webhooks: a job started with Firecrawl's ``webhook`` gets Firecrawl's events.

The receiver checks each delivery the way Firecrawl's documentation tells receivers to: the
``X-Firecrawl-Signature`` header is ``sha256=<hex>``, the HMAC-SHA256 of the raw body under the
account's webhook secret (the dashboard's), compared in constant time. The body is Firecrawl's
(``success``, ``type``, ``id``, ``data``, ``metadata``, ``error``), the webhook's own headers
come with the POST, and the delivery machinery (retries, one ``webhookId`` per delivery) is the
native one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from firecrawl import Firecrawl, V1FirecrawlApp
from firecrawl.v1.client import V1WebhookConfig
from firecrawl.v2.types import ScrapeOptions, WebhookConfig
from standardwebhooks.webhooks import Webhook

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from service.core.errors import BadRequest
from service.firecrawl.webhooks import event_body, firecrawl_delivery, native_webhook
from service.jobs import webhook_store
from service.jobs.webhook_flavours import native
from service.jobs.webhook_store import Delivery
from tests.test_e2e_batch import a_database_of_its_own, add_pages, start
from tests.test_e2e_webhooks import HOOKS_ENV, Receiver, secret_of, settled


def verified(secret: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """Firecrawl's receiver-side check (its documentation's Python example), then the body."""
    algorithm, _, digest = headers["x-firecrawl-signature"].partition("=")
    assert algorithm == "sha256"
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(digest, expected), "signature does not verify"
    return json.loads(body)


def forged(secret: str, headers: dict[str, str], body: bytes) -> bool:
    try:
        verified(secret, headers, body)
    except AssertionError:
        return True
    return False


# the field: what a job stores --------------------------------------------------------------


def test_a_url_alone_is_every_event_with_nothing_of_its_own() -> None:
    assert native_webhook("https://example.com/hook", 2) == {
        "url": "https://example.com/hook",
        "events": ["started", "page", "completed", "failed"],
        "flavour": "firecrawl",
        "version": 2,
        "headers": {},
        "metadata": {},
    }


def test_the_object_keeps_its_headers_metadata_and_events_in_v1_too() -> None:
    hook = {
        "url": "https://example.com/hook",
        "headers": {"Authorization": "Bearer t"},
        "metadata": {"project": "p"},
        "events": ["completed", "page", "completed"],
    }
    assert native_webhook(hook, 1) == {
        "url": "https://example.com/hook",
        "events": ["page", "completed"],
        "flavour": "firecrawl",
        "version": 1,
        "headers": {"Authorization": "Bearer t"},
        "metadata": {"project": "p"},
    }
    assert native_webhook({"url": "https://example.com/", "events": []}, 2)["events"] == [
        "started",
        "page",
        "completed",
        "failed",
    ]


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"url": "ftp://example.com/"}, "'webhook.url'"),
        ({"headers": {}}, "'webhook.url'"),
        ({"url": "https://example.com/", "events": ["done"]}, "'webhook.events[0]'"),
        ({"url": "https://example.com/", "headers": {"X-A": 1}}, "'webhook.headers[\"X-A\"]'"),
        ({"url": "https://example.com/", "headers": {"Host": "x"}}, "'webhook.headers'"),
        ({"url": "https://example.com/", "headers": {"X-A": "a\r\nB: b"}}, "'webhook.headers'"),
        ({"url": "https://example.com/", "metadata": {"a": ["b"]}}, "'webhook.metadata.a'"),
        ({"url": "https://example.com/", "secret": "s"}, "'webhook.secret'"),
        (["https://example.com/"], "'webhook'"),
    ],
)
def test_a_bad_field_is_a_400_naming_it(value: Any, named: str) -> None:
    with pytest.raises(BadRequest) as raised:
        native_webhook(value, 2)
    assert named in raised.value.message


# the body and the signature ---------------------------------------------------------------


def delivery(event: str, data: dict[str, Any], kind: str = "crawl", version: int = 2) -> Delivery:
    return Delivery(
        id=1,
        message_id="msg_1",
        account_id=1,
        url="https://example.com/hook",
        payload=orjson.dumps({"type": f"job.{event}", "timestamp": "t", "data": data}).decode(),
        attempts=0,
        event=event,
        job_id="j1",
        kind=kind,
        hook={
            "url": "https://example.com/hook",
            "events": ["started", "page", "completed", "failed"],
            "flavour": "firecrawl",
            "version": version,
            "headers": {"X-Token": "t0k"},
            "metadata": {"project": "p"},
        },
        options={"formats": ["markdown"], "only_main_content": True},
    )


RESULT = {
    "url": "https://site.test/a",
    "final_url": "https://site.test/a",
    "status_code": 200,
    "success": True,
    "error": None,
    "title": "A",
    "meta": {"description": "about a"},
    "markdown": "# A",
    "tier_used": "none",
}


def summary(status: str, error: str | None = None) -> dict[str, Any]:
    return {"id": "j1", "kind": "crawl", "status": status, "error": error}


def test_each_event_is_firecrawl_s_body() -> None:
    started = event_body(delivery("started", summary("running")))
    assert started == {
        "success": True,
        "type": "crawl.started",
        "id": "j1",
        "webhookId": "msg_1",
        "data": [],
        "metadata": {"project": "p"},
    }
    page = {"index": 0, "url": RESULT["url"], "status": "done", "credits": 1, "result": RESULT}
    told = event_body(delivery("page", {"id": "j1", "page": page}, kind="batch"))
    assert (told["success"], told["type"], "error" in told) == (True, "batch_scrape.page", False)
    [doc] = told["data"]
    assert doc["markdown"] == "# A"
    assert doc["metadata"]["sourceURL"] == RESULT["url"] and doc["metadata"]["statusCode"] == 200
    completed = event_body(delivery("completed", summary("completed")))
    assert (completed["type"], completed["success"], completed["data"]) == (
        "crawl.completed",
        True,
        [],
    )
    cancelled = event_body(delivery("failed", summary("cancelled")))
    assert (cancelled["type"], cancelled["success"]) == ("crawl.failed", False)
    assert cancelled["error"] == "the job was cancelled"


def test_a_failed_page_says_why_and_a_page_too_large_has_no_document() -> None:
    result = {**RESULT, "success": False, "status_code": None, "error": "connection refused"}
    page = {"index": 0, "url": RESULT["url"], "status": "failed", "credits": 0, "result": result}
    told = event_body(delivery("page", {"id": "j1", "page": page}))
    assert (told["success"], told["error"]) == (False, "connection refused")
    assert told["data"][0]["metadata"]["error"] == "connection refused"
    left_out = {**page, "status": "done", "result": None, "result_left_out": True}
    assert event_body(delivery("page", {"id": "j1", "page": left_out}))["data"] == []


def test_a_page_the_target_answered_404_is_a_document_under_the_job_s_uuid() -> None:
    result = {
        **RESULT,
        "success": False,
        "status_code": 404,
        "error": "the target answered HTTP 404",
        "error_code": "http_error",
        "title": "Not here",
    }
    page = {"index": 0, "url": RESULT["url"], "status": "failed", "credits": 0, "result": result}
    job = uuid.uuid4()
    told = event_body(replace(delivery("page", {"id": job.hex, "page": page}), job_id=job.hex))
    assert (told["success"], "error" in told, told["id"]) == (True, False, str(job))
    [doc] = told["data"]
    assert (doc["metadata"]["statusCode"], doc["metadata"]["title"]) == (404, "Not here")
    assert doc["markdown"] == "# A"
    blocked = {**result, "blocked": True, "error_code": "blocked", "block_reason": "cloudflare"}
    page = {**page, "status": "blocked", "result": blocked}
    assert event_body(delivery("page", {"id": "j1", "page": page}))["success"] is False


def test_the_post_carries_the_user_s_headers_and_a_signature_receivers_verify() -> None:
    secret = webhook_store.new_secret()
    told = delivery("completed", summary("completed"))
    sent = firecrawl_delivery(told, secret, datetime.now(UTC))
    headers = dict(sent.headers)
    assert headers["x-token"] == "t0k"
    assert verified(secret, headers, sent.body)["type"] == "crawl.completed"
    assert forged(webhook_store.new_secret(), headers, sent.body)
    assert forged(secret, headers, sent.body.replace(b"completed", b"failed"))


def test_the_native_flavour_is_unchanged() -> None:
    hook = delivery("completed", summary("completed"))
    secret = webhook_store.new_secret()
    sent = native(hook, secret, datetime.now(UTC))
    assert sent.body == hook.payload.encode()
    assert Webhook(secret).verify(sent.body, dict(sent.headers))["type"] == "job.completed"


# end to end: the real service, a real receiver ----------------------------------------------


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.server.shutdown()
    found.server.server_close()


@pytest.fixture(scope="module")
def fc_db(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("fc-hooks-db"))


@pytest.fixture(scope="module")
def accounts(fc_db: tuple[str, Accounts]) -> Accounts:
    return fc_db[1]


@pytest.fixture(scope="module")
def fc_service(
    fc_db: tuple[str, Accounts], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = start(fc_db[0], tmp_path_factory.mktemp("fc-hooks"), **HOOKS_ENV)
    yield proc
    proc.stop()


def native_id(job_id: str) -> str:
    """The native id of a job the Firecrawl routes name by its dashed UUID."""
    return uuid.UUID(job_id).hex


def by_type(secret: str, got: list[tuple[dict[str, str], bytes]]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for headers, body in got:
        payload = verified(secret, headers, body)
        found.setdefault(payload["type"], []).append((headers, payload))
    return found


def test_a_v2_crawl_sends_firecrawl_s_events_with_the_user_s_headers_and_metadata(
    fc_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    account_id, key = accounts.create(credits=100)
    site.page("/fch/", "<html><title>Start</title><main><a href='/fch/a'>a</a><p>go</p></main>")
    site.page("/fch/a", "<html><title>A</title><main><h1>Leaf</h1><p>a leaf page</p></main>")
    hook = WebhookConfig(
        url=receiver.url("/fc-crawl"),
        headers={"X-Receiver-Token": "r-42"},
        metadata={"project": "docs"},
    )
    job = Firecrawl(api_key=key, api_url=fc_service.base).start_crawl(
        site.url("/fch/"),
        limit=5,
        sitemap="skip",
        webhook=hook,
        scrape_options=ScrapeOptions(formats=["markdown"]),
    )
    got = receiver.wait("/fc-crawl", 4)
    events = by_type(secret_of(accounts, account_id), got)
    assert sorted(events) == ["crawl.completed", "crawl.page", "crawl.started"]
    assert [len(events[name]) for name in sorted(events)] == [1, 2, 1]
    for name, told in events.items():
        for headers, payload in told:
            assert headers["x-receiver-token"] == "r-42"
            assert headers["content-type"] == "application/json"
            assert (payload["id"], payload["metadata"]) == (job.id, {"project": "docs"})
            assert payload["success"] is True and "error" not in payload
            if name != "crawl.page":
                assert payload["data"] == []
    pages = sorted((p["data"][0] for _, p in events["crawl.page"]), key=lambda d: d["markdown"])
    assert "a leaf page" in pages[0]["markdown"] and "go" in pages[1]["markdown"]
    assert {page["metadata"]["sourceURL"] for page in pages} == {
        site.url("/fch/"),
        site.url("/fch/a"),
    }
    sent_ids = {payload["webhookId"] for told in events.values() for _, payload in told}
    assert {row.message_id for row in settled(accounts, native_id(job.id))} == sent_ids


def test_a_v2_batch_s_webhook_may_be_a_url_alone(
    fc_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = add_pages(site, "/fc-batch", 2)
    job = Firecrawl(api_key=key, api_url=fc_service.base).start_batch_scrape(
        urls, formats=["markdown", "links"], webhook=receiver.url("/fc-batch")
    )
    events = by_type(secret_of(accounts, account_id), receiver.wait("/fc-batch", 4))
    assert sorted(events) == ["batch_scrape.completed", "batch_scrape.page", "batch_scrape.started"]
    assert {p["data"][0]["metadata"]["sourceURL"] for _, p in events["batch_scrape.page"]} == set(
        urls
    )
    for _, payload in events["batch_scrape.page"]:  # the formats the batch asked for
        [doc] = payload["data"]
        assert "Text of page" in doc["markdown"] and doc["links"] == [site.url("/article")]
    assert all(p["id"] == job.id and p["metadata"] == {} for t in events.values() for _, p in t)


def test_a_v1_crawl_sends_only_the_events_asked_for(
    fc_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    account_id, key = accounts.create(credits=100)
    site.page("/fch1/", "<html><title>One</title><main><p>only page</p></main></html>")
    hook = V1WebhookConfig(url=receiver.url("/fc-v1"), events=["completed"])
    job = V1FirecrawlApp(api_key=key, api_url=fc_service.base).async_crawl_url(
        site.url("/fch1/"), limit=1, ignore_sitemap=True, webhook=hook
    )
    [(headers, body)] = receiver.wait("/fc-v1", 1)
    payload = verified(secret_of(accounts, account_id), headers, body)
    assert (payload["type"], payload["id"], payload["success"]) == ("crawl.completed", job.id, True)
    assert [row.event for row in settled(accounts, native_id(job.id))] == ["completed"]


def test_a_cancelled_batch_is_batch_scrape_failed_and_retries_keep_the_webhook_id(
    fc_service: ServiceProcess, accounts: Accounts, site: TargetSite, receiver: Receiver
) -> None:
    account_id, key = accounts.create(credits=100)
    urls = add_pages(site, "/fc-hooks-cancel", 6, delay=0.5)
    hook = {"url": receiver.url("/fail-1/fc"), "events": ["failed"]}
    reply = call(
        "POST", fc_service.url("/v1/batch/scrape"), {"urls": urls, "webhook": hook}, key=key
    )
    assert reply.status == 200, reply.body
    job_id = reply.json["id"]
    assert call("DELETE", fc_service.url(f"/v1/batch/scrape/{job_id}"), key=key).status == 200
    got = receiver.wait("/fail-1/fc", 2)  # answered 500 once, then 200
    secret = secret_of(accounts, account_id)
    payloads = [verified(secret, headers, body) for headers, body in got]
    [row] = settled(accounts, native_id(job_id))
    assert {payload["webhookId"] for payload in payloads} == {row.message_id}
    assert payloads[0] == payloads[1]
    assert payloads[0]["type"] == "batch_scrape.failed" and payloads[0]["success"] is False
    assert payloads[0]["error"] == "the job was cancelled"


@pytest.mark.parametrize(
    ("hook", "named"),
    [
        ({"url": "http://example.com/", "secret": "s"}, "'webhook.secret'"),
        ({"url": "http://example.com/", "events": ["done"]}, "'webhook.events[0]'"),
        ({"url": "http://example.com/", "headers": {"Content-Length": "1"}}, "'webhook.headers'"),
    ],
)
def test_a_bad_webhook_on_a_firecrawl_route_is_a_400_naming_it(
    fc_service: ServiceProcess, accounts: Accounts, hook: Any, named: str
) -> None:
    _, key = accounts.create(credits=10)
    body = {"url": "http://example.com/", "webhook": hook}
    reply = call("POST", fc_service.url("/v2/crawl"), body, key=key)
    assert reply.status == 400 and named in reply.json["error"], reply.body
    assert set(reply.json) == {"error"}
