"""The HTTP front as anyone on the network meets it: odd paths, security headers, /metrics."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from harness.service import Reply, ServiceProcess, call

METRICS_TOKEN = "metrics-Tok3n-for-the-test-0123456789"

# werkzeug's router answered each of these with a 308 to the Host header's site (a 500 here,
# since the router's redirect was not expected): never a redirect, never a traceback
DOUBLE_SLASHES = (
    "/dashboard//usage",
    "/dashboard/%2F%2Fevil.example",
    "/payments/demo/checkout//x",
    "/payments/demo/checkout//x/confirm",
    "/dashboard//",
    "/dashboard///evil.example",
    "/dashboard/%2Fevil.example",
    "/dashboard/usage//x",
    "/dashboard/static//app.css",
    "/metrics//",
    "//evil.example/",
)


def raw_get(
    base: str, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> Reply:
    """One request as sent, without following a redirect (urllib would)."""
    where = urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return Reply(response.status, dict(response.getheaders()), response.read())
    finally:
        conn.close()


def log_lines_of(service: ServiceProcess, request_ids: set[str]) -> list[str]:
    """The service's log up to the access lines of these requests (each written last)."""
    deadline = time.monotonic() + 10
    while True:
        seen = {entry.get("request_id") for entry in service.access_entries()}
        lines = list(service.output)  # read after: it holds every access line seen
        if request_ids <= seen or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def test_double_slashes_are_not_found_with_no_redirect_and_no_traceback(service):
    before = len(service.output)
    ids = set()
    for n, path in enumerate(DOUBLE_SLASHES):
        for method in ("GET", "POST"):
            request_id = f"double-slash-{n}-{method}"
            ids.add(request_id)
            reply = raw_get(
                service.base,
                path,
                {"Host": "evil.example", "X-Request-Id": request_id},
                method=method,
            )
            assert reply.status in (404, 405), (method, path, reply.status)
            assert "Location" not in reply.headers, (method, path)
            assert b"evil.example" not in reply.body
            if not path.startswith("/dashboard/") or reply.headers["Content-Type"].startswith(
                "application/json"
            ):
                assert "error" in json.loads(reply.body), path
    logged = "\n".join(log_lines_of(service, ids)[before:])
    assert "Traceback" not in logged
    assert '"level":"error"' not in logged


def test_the_dashboard_and_the_api_still_route_single_slash_paths(service):
    assert raw_get(service.base, "/dashboard/").headers["Location"] == "/dashboard"
    assert raw_get(service.base, "/dashboard").headers["Location"] == "/dashboard/login"
    assert raw_get(service.base, "/dashboard/login").status == 200
    assert raw_get(service.base, "/payments/demo/checkout/nope").status in (404, 503)


def test_each_path_reaches_its_front_percent_encoded_or_not(service):
    """The dashboard answers ``/`` and ``/dashboard``, the reference ``/docs``, Firecrawl's API
    ``/v1`` and ``/v2``, the native API the rest; a path reaches the same front however it is
    percent-encoded, and around the pages every front's errors are the API's JSON ones."""
    assert raw_get(service.base, "/").headers["Location"] == "/dashboard"
    assert raw_get(service.base, "/%64ashboard/login").status == 200
    for path in ("/docs", "/%64ocs"):
        page = raw_get(service.base, path)
        assert page.status == 200 and page.headers["Content-Type"].startswith("text/html"), path
    assert raw_get(service.base, "/docs/").headers["Location"] == "/docs"
    for method, path, status, allowed in (
        ("POST", "/", 405, "GET"),
        ("POST", "/docs", 405, "GET"),
        ("GET", "/docs/static/nothing.css", 404, None),
        ("GET", "/docs/no/such/page", 404, None),
        ("GET", "/v2/crawl", 405, "POST"),
        ("GET", "/v3/crawl", 404, None),
    ):
        reply = raw_get(service.base, path, method=method)
        assert reply.status == status, (method, path, reply.status)
        assert reply.headers["Content-Type"] == "application/json", (method, path)
        assert reply.headers["X-Error-Code"] == ERROR_CODES[status], (method, path)
        assert allowed is None or allowed in reply.headers["Allow"].split(", "), (method, path)


API_ANSWERS = (
    ("GET", "/pricing", 200),
    ("GET", "/openapi.json", 200),
    ("GET", "/metrics", 200),
    ("GET", "/healthz", 200),
    ("GET", "/nowhere", 404),
    ("GET", "/scrape", 405),
    ("POST", "/scrape", 400),
    ("POST", "/credits/buy", 400),
    ("POST", "/webhooks/stripe", 503),
)
ERROR_CODES = {
    400: "invalid_request",
    404: "not_found",
    405: "method_not_allowed",
    503: "unavailable",
}


def test_every_api_answer_says_nosniff_and_no_hsts_over_http(service):
    for method, path, status in API_ANSWERS:
        reply = raw_get(service.base, path, method=method)
        assert reply.status == status, (method, path, reply.status, reply.body)
        assert reply.headers.get("X-Content-Type-Options") == "nosniff", (method, path)
        assert "Strict-Transport-Security" not in reply.headers, (method, path)
        if status >= 400:  # every error says what it is to a program too
            assert reply.headers["X-Error-Code"] == ERROR_CODES[status], (method, path)
            assert list(json.loads(reply.body)) == ["error"], (method, path)
    scrape = call("POST", service.url("/scrape"), {"url": "http://127.0.0.1:9/"}, key="spy_x")
    assert scrape.status == 401
    assert scrape.headers["X-Content-Type-Options"] == "nosniff"
    for path in ("/", "/dashboard/login", "/dashboard//usage"):
        assert "Strict-Transport-Security" not in raw_get(service.base, path).headers


@pytest.fixture(scope="module")
def https_service(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    workdir: Path = tmp_path_factory.mktemp("https-service")
    proc = ServiceProcess(
        database_url,
        workdir,
        env={
            "SCRAPESPY_PUBLIC_URL": "https://scrapespy.example",
            "SCRAPESPY_METRICS_TOKEN": METRICS_TOKEN,
        },
    ).start()
    yield proc
    proc.stop()


def test_every_answer_says_strict_transport_security_when_the_public_url_is_https(
    https_service,
):
    answers = [(method, path) for method, path, _ in API_ANSWERS] + [
        ("GET", "/"),
        ("GET", "/dashboard"),
        ("GET", "/dashboard/login"),
        ("GET", "/dashboard/nowhere"),
        ("GET", "/dashboard//usage"),
        ("POST", "/dashboard/login"),
    ]
    for method, path in answers:
        reply = raw_get(https_service.base, path, method=method)
        assert reply.headers.get("Strict-Transport-Security") == "max-age=31536000", (method, path)
        assert reply.headers.get("X-Content-Type-Options") == "nosniff", (method, path)


def test_metrics_needs_the_token_when_one_is_set(https_service):
    refused = (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Bearer {METRICS_TOKEN}x"},
        {"Authorization": f"Basic {METRICS_TOKEN}"},
        {"Authorization": METRICS_TOKEN},
        {"X-API-Key": METRICS_TOKEN},
    )
    for headers in refused:
        reply = raw_get(https_service.base, "/metrics", headers)
        assert reply.status == 401, headers
        assert reply.headers["Content-Type"] == "application/json"
        assert reply.headers["WWW-Authenticate"] == "Bearer"
        assert "error" in json.loads(reply.body)
        assert b"scrapespy_http_requests_total" not in reply.body
    for scheme in ("Bearer", "bearer"):
        authorization = {"Authorization": f"{scheme} {METRICS_TOKEN}", "X-Request-Id": scheme}
        reply = raw_get(https_service.base, "/metrics", authorization)
        assert reply.status == 200
        assert b"scrapespy_http_requests_total" in reply.body
    # the other routes do not ask for it
    assert raw_get(https_service.base, "/healthz").status == 200
    log_lines_of(https_service, {"Bearer", "bearer"})
    assert METRICS_TOKEN not in https_service.log_text()


def test_metrics_stays_open_without_a_token(service):
    reply = raw_get(service.base, "/metrics")
    assert reply.status == 200
    assert b"scrapespy_http_requests_total" in reply.body


def test_no_answer_advertises_the_servers_version(service):
    """Twisted's ``Server: TwistedWeb/<version>`` told anyone which release to look up; every
    answer (the API's, its errors, the dashboard's, ``OPTIONS *``) says ``scrapespy`` alone."""
    answers = [raw_get(service.base, path, method=method) for method, path, _ in API_ANSWERS]
    answers += [
        raw_get(service.base, path)
        for path in ("/", "/dashboard/login", "/dashboard//usage", "/no/such/page")
    ]
    answers.append(raw_get(service.base, "*", method="OPTIONS"))
    answers.append(call("POST", service.url("/scrape"), {"url": "http://127.0.0.1:9/"}, key="x"))
    for reply in answers:
        assert reply.headers.get("Server") == "scrapespy", (reply.status, reply.headers)


def test_the_start_logs_no_warning_of_scrapys_redirect_middlewares(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, accounts: Any, site: Any
) -> None:
    """Scrapy's redirect middlewares warned at every start that, without its RefererMiddleware,
    "the Referer header will be removed on redirects"; middlewares.redirects keeps it as a
    browser does, and the start says nothing of it. (A service of its own, which scrapes once,
    so that its engine has started, and stops before its log is read.)"""
    proc = ServiceProcess(database_url, tmp_path_factory.mktemp("quiet-start")).start()
    try:
        _, key = accounts.create(credits=10)
        assert proc.scrape(key, {"url": site.url("/")}).status == 200
    finally:
        proc.stop()
    deadline = time.monotonic() + 30  # the output is read by a thread of its own
    while not any('"event":"stopped"' in line for line in list(proc.output)):
        assert time.monotonic() < deadline, list(proc.output)[-5:]
        time.sleep(0.1)
    warnings = [line for line in list(proc.output) if '"level":"warning"' in line]
    assert not [line for line in warnings if "redirect" in line or "Referer" in line], warnings
