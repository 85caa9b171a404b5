"""End to end: ``proxy_type: "auto"``, ``engine: "auto"`` and ``max_credits`` on the real service.

The service runs with real forward proxies on loopback, each stamping what it forwards with its
pool's name (tests.proxies), and the target has a page that answers an anti-bot page (a
Cloudflare challenge, 403) to direct and datacenter traffic and the page itself to residential
traffic. The JavaScript shell is the harness's ``/js-only`` page, rendered by real Chromium.
What is billed is read from the ledger, as the account's owner reads it (``GET /ledger``).
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from socketserver import BaseRequestHandler, ThreadingTCPServer
from typing import Any

import pytest
from sqlalchemy import update

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from service.billing import accounts as service_accounts
from service.db.tables import accounts as accounts_table
from tests.proxies import ForwardProxy

COST = {"none": 1, "datacenter": 2, "residential": 10}  # static engine defaults
JS_COST = {"none": 5, "datacenter": 6, "residential": 25}
GUARDED = "/escalate/guarded"
GUARDED_TITLE = "the residential page"


def guarded(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """A page behind an anti-bot vendor that lets only residential traffic through."""
    if handler.headers.get("X-Test-Proxy") == "residential":
        body = f"<html><head><title>{GUARDED_TITLE}</title></head><body><p>in</p></body></html>"
        return 200, {"Content-Type": "text/html"}, body.encode()
    challenge = b"<html><head><title>Just a moment...</title></head><body></body></html>"
    return 403, {"Content-Type": "text/html", "CF-Mitigated": "challenge"}, challenge


class ResettingSite:
    """A target that resets connections that do not come through a proxy (no X-Test-Proxy)."""

    def __init__(self) -> None:
        self.hits = 0

        class _Handler(BaseRequestHandler):
            def handle(handler) -> None:  # noqa: N805 - the site is self
                sock: socket.socket = handler.request
                sock.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = sock.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                self.hits += 1
                if b"\r\nx-test-proxy:" not in data.lower():
                    # An RST rather than a FIN: the client sees the connection reset.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()
                    return
                body = b"<html><head><title>through a proxy</title></head><body>in</body></html>"
                sock.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                )

        self.server = ThreadingTCPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/page"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def resetting() -> Iterator[ResettingSite]:
    target = ResettingSite()
    yield target
    target.stop()


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.routes[GUARDED] = guarded
    for name in ("plain", "capped", "trial", "no-trial"):
        site.routes[f"{GUARDED}-{name}"] = guarded
    return site


@pytest.fixture(scope="module")
def pools() -> Iterator[dict[str, ForwardProxy]]:
    proxies = {
        "datacenter": ForwardProxy("dc", "dc-pw", stamp="datacenter").start(),
        "residential": ForwardProxy("resi", "resi-pw", stamp="residential").start(),
    }
    yield proxies
    for proxy in proxies.values():
        proxy.stop()


@pytest.fixture(scope="module")
def laddered(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, pools: dict[str, ForwardProxy]
) -> Iterator[ServiceProcess]:
    env = {
        "SCRAPESPY_PROXIES_DATACENTER": pools["datacenter"].url,
        "SCRAPESPY_PROXIES_RESIDENTIAL": pools["residential"].url,
    }
    proc = ServiceProcess(database_url, tmp_path_factory.mktemp("laddered"), env=env).start()
    yield proc
    proc.stop()


def unlocked_account(accounts: Accounts, credits: int = 100) -> tuple[int, str]:
    account_id, key = accounts.create(credits=credits)
    accounts.database.run_sync(service_accounts.unlock_residential, account_id)
    return account_id, key


def scrape_ok(service: ServiceProcess, key: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = service.scrape(key, body, timeout=90)
    assert reply.status == 200, reply.body
    return reply.json


def charges(service: ServiceProcess, key: str) -> list[int]:
    """The scrape entries of the key's ledger, oldest first: what the account was billed."""
    reply = call("GET", service.url("/ledger"), key=key)
    assert reply.status == 200, reply.body
    return [item["amount"] for item in reversed(reply.json["items"]) if item["kind"] == "scrape"]


def usage(service: ServiceProcess, key: str) -> list[dict[str, Any]]:
    reply = call("GET", service.url("/usage"), key=key)
    assert reply.status == 200, reply.body
    return list(reversed(reply.json["items"]))


def steps(result: dict[str, Any]) -> list[tuple[str, str, int, bool, str | None, str | None]]:
    return [
        (a["tier"], a["engine"], a["status_code"], a["blocked"], a["block_reason"], a["error_code"])
        for a in result["attempts"]
    ]


BLOCKED_DIRECT = ("none", "static", 403, True, "cloudflare", "blocked")
# the default fingerprint is Scrapy's: blocked with it, an attempt tries Chrome's on the same
# tier before the next tier (docs/decisions/0037)
BLOCKED_DATACENTER = ("datacenter", "static", 403, True, "cloudflare", "blocked")


def test_auto_climbs_to_residential_and_bills_residential_once(
    laddered: ServiceProcess, pages: TargetSite, accounts: Accounts, pools: dict[str, ForwardProxy]
) -> None:
    account_id, key = unlocked_account(accounts)
    url = pages.url(GUARDED)
    result = scrape_ok(laddered, key, {"url": url, "proxy_type": "auto"})
    assert result["success"] is True and result["blocked"] is False
    assert result["title"] == GUARDED_TITLE and result["proxy_used"] is True
    assert result["engine"] == "static" and "block_reason" not in result
    assert steps(result) == [
        BLOCKED_DIRECT,
        BLOCKED_DIRECT,
        BLOCKED_DATACENTER,
        ("residential", "static", 200, False, None, None),
    ]
    assert [a["fingerprint"] for a in result["attempts"]] == ["scrapy"] + ["chrome"] * 3
    assert all(a["elapsed_ms"] >= 0 for a in result["attempts"])
    assert sum(a["elapsed_ms"] for a in result["attempts"]) <= result["elapsed_ms"] + 5
    assert pages.count(GUARDED) == 4
    assert [p.targets().count(url) for p in pools.values()] == [1, 1]
    # Only the attempt that answered is billed, at its tier, once.
    assert charges(laddered, key) == [-COST["residential"]]
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (100 - COST["residential"], 0)
    [row] = usage(laddered, key)
    assert (row["engine"], row["tier_requested"]) == ("static", "auto")
    assert row["tier_used"] == "residential"
    assert (row["credits"], row["success"]) == (COST["residential"], True)


def test_max_credits_leaves_residential_out_and_the_block_is_unbilled(
    laddered: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    account_id, key = unlocked_account(accounts)
    path = f"{GUARDED}-capped"
    body = {"url": pages.url(path), "proxy_type": "auto", "max_credits": COST["residential"] - 1}
    result = scrape_ok(laddered, key, body)
    assert result["success"] is False and result["blocked"] is True
    assert result["block_reason"] == "cloudflare" and result["status_code"] == 403
    assert steps(result) == [BLOCKED_DIRECT, BLOCKED_DIRECT, BLOCKED_DATACENTER]
    assert pages.count(path) == 3
    assert charges(laddered, key) == []
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (100, 0)
    [row] = usage(laddered, key)
    assert (row["tier_used"], row["credits"], row["blocked"]) == ("datacenter", 0, True)


def test_max_credits_under_the_price_is_refused_before_anything(
    laddered: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    account_id, key = unlocked_account(accounts)
    hits = pages.count("/article"), pages.count(GUARDED), pages.count("/robots.txt")
    for body, cost, cap in (
        ({"engine": "js", "max_credits": 4}, JS_COST["none"], 4),
        ({"proxy_type": "residential", "max_credits": 9}, COST["residential"], 9),
        ({"proxy_type": "auto", "max_credits": 0}, COST["none"], 0),
        ({"engine": "auto", "proxy_type": "auto", "max_credits": 0}, COST["none"], 0),
    ):
        reply = laddered.scrape(key, {"url": pages.url("/article"), **body})
        assert reply.status == 402, (body, reply.body)
        assert reply.error_answer == (
            {
                "error": f"this request may cost {cost} credits, more than its max_credits of "
                f"{cap}; raise max_credits or ask for a cheaper engine or proxy_type"
            },
            "max_credits_exceeded",
        )
    assert (pages.count("/article"), pages.count(GUARDED), pages.count("/robots.txt")) == hits
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (100, 0)
    assert usage(laddered, key) == [] and charges(laddered, key) == []
    # At the price exactly, it goes through.
    result = scrape_ok(laddered, key, {"url": pages.url("/article"), "max_credits": COST["none"]})
    assert result["success"] is True and "attempts" not in result
    assert charges(laddered, key) == [-COST["none"]]


def test_a_residential_trial_ends_the_climb_free(
    laddered: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=100)  # not unlocked: residential is a trial
    trials = accounts.summary(account_id)["residential_trials_left"]
    path = f"{GUARDED}-trial"
    result = scrape_ok(laddered, key, {"url": pages.url(path), "proxy_type": "auto"})
    assert result["success"] is True and result["title"] == GUARDED_TITLE
    assert [a["tier"] for a in result["attempts"]] == ["none", "none", "datacenter", "residential"]
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (100, 0)
    assert summary["residential_trials_left"] == trials - 1
    assert charges(laddered, key) == []
    # A page that answers directly gives the reserved trial back and bills the direct price.
    result = scrape_ok(laddered, key, {"url": pages.url("/article"), "proxy_type": "auto"})
    assert steps(result) == [("none", "static", 200, False, None, None)]
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["residential_trials_left"]) == (99, trials - 1)


def test_without_trials_auto_stops_before_residential(
    laddered: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=100)
    accounts.database.run_sync(
        lambda conn: conn.execute(
            update(accounts_table)
            .where(accounts_table.c.id == account_id)
            .values(residential_trials_left=0)
        )
    )
    path = f"{GUARDED}-no-trial"
    result = scrape_ok(laddered, key, {"url": pages.url(path), "proxy_type": "auto"})
    assert result["success"] is False
    assert steps(result) == [BLOCKED_DIRECT, BLOCKED_DIRECT, BLOCKED_DATACENTER]
    assert pages.count(path) == 3
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"], summary["residential_trials_left"]) == (100, 0, 0)


def test_a_reset_connection_climbs_and_the_proxy_that_answered_is_billed(
    laddered: ServiceProcess, resetting: ResettingSite, accounts: Accounts
) -> None:
    account_id, key = unlocked_account(accounts)
    body = {"url": resetting.url, "proxy_type": "auto", "respect_robots": False}
    result = scrape_ok(laddered, key, body)
    assert result["success"] is True and result["title"] == "through a proxy"
    assert steps(result) == [
        ("none", "static", 0, False, None, "connection_error"),
        ("none", "static", 0, False, None, "connection_error"),
        ("datacenter", "static", 200, False, None, None),
    ]
    assert charges(laddered, key) == [-COST["datacenter"]]
    assert accounts.summary(account_id)["balance"] == 100 - COST["datacenter"]
    # Without auto the same reset is the answer, unbilled.
    result = scrape_ok(laddered, key, {"url": resetting.url, "respect_robots": False})
    assert result["success"] is False and result["status_code"] == 0
    assert resetting.hits == 4
    assert "attempts" not in result and charges(laddered, key) == [-COST["datacenter"]]


def test_engine_auto_renders_a_javascript_shell_and_bills_js(
    laddered: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    account_id, key = unlocked_account(accounts)
    result = scrape_ok(laddered, key, {"url": pages.url("/js-only"), "engine": "auto"})
    assert result["success"] is True and result["engine"] == "js"
    assert result["title"] == "Rendered by JS" and "made by javascript" in result["text"]
    assert steps(result) == [
        ("none", "static", 200, False, None, None),
        ("none", "js", 200, False, None, None),
    ]
    assert charges(laddered, key) == [-JS_COST["none"]]
    assert accounts.summary(account_id)["balance"] == 100 - JS_COST["none"]
    [row] = usage(laddered, key)
    assert (row["engine"], row["tier_used"], row["credits"]) == ("js", "none", JS_COST["none"])


def test_engine_auto_keeps_a_plain_page_static(
    laddered: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    account_id, key = unlocked_account(accounts)
    hits = pages.count("/article")
    result = scrape_ok(laddered, key, {"url": pages.url("/article"), "engine": "auto"})
    assert result["success"] is True and result["engine"] == "static"
    assert steps(result) == [("none", "static", 200, False, None, None)]
    assert pages.count("/article") == hits + 1
    assert charges(laddered, key) == [-COST["none"]]
    assert accounts.summary(account_id)["balance"] == 100 - COST["none"]


def test_a_request_without_auto_has_no_attempts(
    laddered: ServiceProcess, pages: TargetSite, accounts: Accounts
) -> None:
    _, key = unlocked_account(accounts)
    result = scrape_ok(laddered, key, {"url": pages.url("/article")})
    assert "attempts" not in result and result["engine"] == "static"
