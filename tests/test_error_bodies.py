"""Every error answer of the native API is the specification's error body: ``{"error": "..."}``
and nothing else, with the code for programs in the ``X-Error-Code`` header.

One walk through every endpoint's error paths, against the real service, as a client written
against the specification would check them.
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from service.core.errors import ERROR_CODES, ERROR_STATUSES
from tests.dashboard_client import member

JSON = {"Content-Type": "application/json"}
TOO_LARGE = b'{"url": "' + b"a" * (300 * 1024) + b'"}'


@dataclass
class Ask:
    """One request that must be refused, and how."""

    method: str
    path: str
    status: int
    code: str
    body: Any = None
    raw: bytes | None = None
    key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def send(self, service: ServiceProcess) -> Reply:
        return call(
            self.method,
            service.url(self.path),
            self.body,
            key=self.key,
            raw=self.raw,
            headers=self.headers,
        )


def assert_error_answer(reply: Reply, ask: Ask) -> None:
    seen = f"{ask.method} {ask.path} -> {reply.status} {reply.body[:200]!r} {reply.headers}"
    assert reply.status == ask.status, seen
    body = json.loads(reply.body)
    assert isinstance(body, dict) and set(body) == {"error"}, seen
    assert isinstance(body["error"], str) and body["error"], seen
    assert reply.headers.get("Content-Type") == "application/json", seen
    code = reply.headers.get("X-Error-Code")
    assert code in ERROR_CODES, seen
    assert ERROR_STATUSES[code] == reply.status, seen
    assert code == ask.code, seen


@pytest.fixture(scope="module")
def strict(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """A service with a webhook secret and a rate limit of one request per key."""
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("strict"),
        env={
            "STRIPE_WEBHOOK_SECRET": "whsec_error_bodies",
            "SCRAPESPY_RATE_LIMIT_PER_SECOND": "0.01",
            "SCRAPESPY_RATE_LIMIT_BURST": "1",
        },
    ).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def no_trials(database_url: str) -> Iterator[Accounts]:
    made = Accounts(database_url, trials=0)
    yield made
    made.close()


def test_every_error_answer_is_the_error_field_alone_with_its_code_in_a_header(
    service: ServiceProcess,
    strict: ServiceProcess,
    accounts: Accounts,
    no_trials: Accounts,
    site: TargetSite,
    tmp_path: Path,
) -> None:
    _, key = accounts.create(credits=100)
    _, broke = accounts.create(credits=0)
    _, locked = no_trials.create(credits=100)
    url = site.url("/article")
    asks = [
        # POST /scrape
        Ask("POST", "/scrape", 400, "invalid_request", raw=b"{not json", key=key),
        Ask("POST", "/scrape", 400, "invalid_request", {"url": url, "nope": 1}, key=key),
        Ask("POST", "/scrape", 400, "invalid_request", raw=b"[]", key=key),
        Ask(
            "POST",
            "/scrape",
            400,
            "invalid_request",
            raw=b"url=x",
            key=key,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        ),
        Ask("POST", "/scrape", 400, "invalid_request", raw=TOO_LARGE, key=key),
        Ask(
            "POST",
            "/scrape",
            400,
            "invalid_request",
            {"url": url},
            key=key,
            headers={"Idempotency-Key": "not\u00a0visible"},
        ),
        Ask("POST", "/scrape", 401, "unauthorized", {"url": url}),
        Ask("POST", "/scrape", 401, "unauthorized", {"url": url}, key="spy_wrong"),
        Ask("POST", "/scrape", 402, "insufficient_credits", {"url": url}, key=broke),
        Ask(
            "POST",
            "/scrape",
            402,
            "max_credits_exceeded",
            {"url": url, "engine": "js", "max_credits": 1},
            key=key,
        ),
        Ask(
            "POST",
            "/scrape",
            403,
            "residential_locked",
            {"url": url, "proxy_type": "residential"},
            key=locked,
        ),
        Ask("GET", "/scrape", 405, "method_not_allowed"),
        # POST /search, on an instance without a search backend (its other refusals, on
        # instances with one: tests/test_e2e_search*.py)
        Ask("POST", "/search", 400, "invalid_request", {"query": "tides"}, key=key),
        Ask("POST", "/search", 400, "invalid_request", raw=b"{", key=key),
        Ask("GET", "/search", 405, "method_not_allowed"),
        # jobs
        Ask("POST", "/batch", 400, "invalid_request", raw=b"{", key=key),
        Ask("POST", "/batch", 400, "invalid_request", {"urls": [url], "nope": 1}, key=key),
        Ask("POST", "/batch", 401, "unauthorized", {"urls": [url]}),
        Ask("POST", "/crawl", 400, "invalid_request", {"url": url, "nope": 1}, key=key),
        Ask("POST", "/crawl", 400, "invalid_request", raw=TOO_LARGE, key=key),
        Ask("POST", "/crawl", 401, "unauthorized", {"url": url}),
        Ask("POST", "/map", 400, "invalid_request", {"url": url, "nope": 1}, key=key),
        Ask("POST", "/map", 401, "unauthorized", {"url": url}),
        Ask("POST", "/map", 402, "insufficient_credits", {"url": url}, key=broke),
        Ask("GET", "/jobs", 401, "unauthorized"),
        Ask("GET", "/jobs?limit=0", 400, "invalid_request", key=key),
        Ask("GET", "/jobs/nosuchjob", 404, "not_found", key=key),
        Ask("GET", "/jobs/nosuchjob", 401, "unauthorized"),
        Ask("DELETE", "/jobs/nosuchjob", 404, "not_found", key=key),
        Ask("PUT", "/jobs/nosuchjob", 405, "method_not_allowed", key=key),
        # the account's reads
        Ask("GET", "/account", 401, "unauthorized"),
        Ask("GET", "/account?nope=1", 400, "invalid_request", key=key),
        Ask("GET", "/usage", 401, "unauthorized"),
        Ask("GET", "/usage?limit=0", 400, "invalid_request", key=key),
        Ask("GET", "/ledger", 401, "unauthorized"),
        Ask("GET", "/ledger?since=yesterday", 400, "invalid_request", key=key),
        Ask("POST", "/account", 405, "method_not_allowed", key=key),
        # payments, not configured on this instance
        Ask("POST", "/credits/buy", 400, "invalid_request", {"pack": "7"}, key=key),
        Ask("POST", "/credits/buy", 401, "unauthorized", {"pack": "10"}),
        Ask("POST", "/credits/buy", 503, "unavailable", {"pack": "10"}, key=key),
        Ask("POST", "/webhooks/stripe", 503, "unavailable", raw=b"{}", headers=JSON),
        # unknown routes and methods
        Ask("GET", "/nope", 404, "not_found"),
        Ask("POST", "/nope", 404, "not_found", {"a": 1}),
        Ask("GET", "/docs/static/nope.css", 404, "not_found"),
        Ask("GET", "/%ff", 400, "invalid_request"),
        Ask("GET", "/jobs/%ff", 400, "invalid_request", key=key),
        Ask("DELETE", "/pricing", 405, "method_not_allowed"),
    ]
    for ask in asks:
        assert_error_answer(ask.send(service), ask)

    # Idempotency-Key: the same key with another body, and a retry while the first still runs
    first = service.scrape(key, {"url": url}, headers={"Idempotency-Key": "bodies-1"})
    assert first.status == 200, first.body
    other = Ask(
        "POST",
        "/scrape",
        422,
        "idempotency_conflict",
        {"url": site.url("/redirect")},
        key=key,
        headers={"Idempotency-Key": "bodies-1"},
    )
    assert_error_answer(other.send(service), other)
    slow = {"url": site.url("/slow")}
    early = Ask("POST", "/scrape", 409, "idempotency_in_progress", slow, key=key)
    early.headers = {"Idempotency-Key": "bodies-slow"}
    hits = site.hits["/slow"]
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(service.scrape, key, slow, headers=early.headers)
        deadline = time.monotonic() + 30
        while site.hits["/slow"] == hits and time.monotonic() < deadline:
            time.sleep(0.05)  # polls the target's own count: the first call is in flight
        reply = early.send(service)
        assert_error_answer(reply, early)
        assert reply.headers["Retry-After"] == "1"
        assert running.result(timeout=60).status == 200

    # the webhook with a secret, and the rate limits (one request per key here)
    _, limited = accounts.create(credits=0)
    strict_asks = [
        Ask("POST", "/webhooks/stripe", 400, "invalid_request", raw=b"{}", headers=JSON),
        Ask(
            "POST",
            "/webhooks/stripe",
            400,
            "invalid_request",
            raw=b"{}",
            headers={**JSON, "Stripe-Signature": "t=1,v1=00"},
        ),
        Ask("POST", "/webhooks/stripe", 400, "invalid_request", raw=TOO_LARGE, headers=JSON),
        Ask("POST", "/scrape", 402, "insufficient_credits", {"url": url}, key=limited),
        Ask("POST", "/scrape", 429, "rate_limited", {"url": url}, key=limited),
        Ask("GET", "/account", 429, "rate_limited", key=limited),
    ]
    for ask in strict_asks:
        reply = ask.send(strict)
        if ask.path == "/account":  # reads have a bucket of their own: its first is a 200
            assert reply.status == 200, reply.body
            reply = ask.send(strict)
        assert_error_answer(reply, ask)
        if reply.status == 429:
            assert int(reply.headers["Retry-After"]) >= 1


def resolved(spec: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """``item``, or what its ``$ref`` (``#/components/...``) points at."""
    if "$ref" not in item:
        return item
    found: Any = spec
    for part in item["$ref"].removeprefix("#/").split("/"):
        found = found[part]
    return dict(found)


def test_the_openapi_document_and_the_reference_page_describe_that_answer(
    service: ServiceProcess,
) -> None:
    spec = call("GET", service.url("/openapi.json")).json
    error = spec["components"]["schemas"]["Error"]
    assert (error["required"], set(error["properties"])) == (["error"], {"error"})
    assert error["additionalProperties"] is False
    answers = 0
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                answers += 1
                header = response.get("headers", {}).get("X-Error-Code")
                assert header is not None, (method, path, status)
                header = resolved(spec, header)
                assert header["required"] is True
                assert header["schema"]["enum"] == list(ERROR_CODES), (method, path, status)
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (method, path, status)
    assert answers > 40
    page = call("GET", service.url("/docs")).body.decode()
    said = re.search(r'<section id="errors">(.*?)</section>', page, re.S)
    assert said is not None
    text = html.unescape(re.sub(r"<[^>]+>", "", said.group(1)))
    assert 'An error answer is {"error": "<a message for people>"} with its HTTP status' in text
    assert "error_code" not in text.split("A scrape that fails")[0]
    assert "X-Error-Code header" in " ".join(text.split())


def test_the_dashboards_try_out_shows_the_error_answer_as_the_api_gives_it(
    service: ServiceProcess, accounts: Accounts, site: TargetSite
) -> None:
    client, _, _ = member(service.base, accounts, "try-error", credits=10)
    fields = {"csrf_token": client.csrf_token(), "api_key": "spy_wrong", "url": site.url("/")}
    page = client.post("/dashboard/try", fields)
    assert page.status == 200, page.body[:500]
    shown = re.search(r'id="result-json">(.*?)</pre>', page.body.decode(), re.S)
    assert shown is not None, page.body.decode()
    assert json.loads(html.unescape(shown.group(1))) == {
        "error": "API key (X-API-Key header) is missing or invalid"
    }
    code = re.search(r'id="result-error-code">(.*?)</span>', page.body.decode(), re.S)
    assert code is not None and html.unescape(re.sub(r"<[^>]+>", "", code.group(1))) == (
        "X-Error-Code: unauthorized"
    )
