"""Hostile targets and requests against the static engine and ``POST /map`` (issue 32), through
the real service: a cookie that must not fetch the Public Suffix List, a caller who goes away,
decompression bombs, redirect loops and unfollowable redirects, credentials in a URL.

Every failure here is a clean one (its ``error_code``, a message for people) and unbilled: the
balance, the ledger and the usage rows say so.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite

SECRET = "pa55-hunter2-xyz"
BOMB_BYTES = 64 * 1024 * 1024  # four times the static engine's 16 MiB download cap


class SilentHost:
    """A host that accepts connections and never answers, counting them: where the Public
    Suffix List would be fetched from, unreachable in the way that froze the service."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            self._held.append(conn)

    def close(self) -> None:
        self.listener.close()
        for conn in self._held:
            conn.close()


class Stall:
    """A page that answers only when the test lets it: ``entered`` is set once it is asked."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, _h: BaseHTTPRequestHandler) -> tuple[int, dict[str, Any], bytes]:
        self.entered.set()
        self.release.wait(60)
        return 200, {"Content-Type": "text/html"}, b"<html><title>late</title><p>late</p></html>"


@pytest.fixture(scope="module")
def silent_host() -> Iterator[SilentHost]:
    host = SilentHost()
    yield host
    host.close()


@pytest.fixture(scope="module")
def hostile() -> Iterator[TargetSite]:
    site = TargetSite().start()
    site.page("/bomb", gzip.compress(b"\0" * BOMB_BYTES), **{"Content-Encoding": "gzip"})
    site.page("/huge", b"<html><body>" + b"x" * (17 * 1024 * 1024))
    site.routes["/loop"] = lambda _h: (302, {"Location": "/loop"}, b"")
    for step in range(30):
        site.routes[f"/chain/{step}"] = lambda _h, n=step + 1: (
            302,
            {"Location": f"/chain/{n}"},
            b"",
        )
    redirects = {
        "/to-javascript": (302, "javascript:alert(1)"),
        "/to-file": (302, "file:///etc/passwd"),
        "/to-gopher": (307, "gopher://127.0.0.1:70/_x"),
        "/to-data": (302, "data:text/html,<title>data</title>"),
    }
    for path, (status, location) in redirects.items():
        site.routes[path] = lambda _h, s=status, loc=location: (s, {"Location": loc}, b"")
    site.routes["/to-credentials"] = lambda _h: (
        302,
        {"Location": f"http://user:{SECRET}@127.0.0.1:{site.port}/cookie"},
        b"",
    )
    refresh = '<html><head><title>refresh</title><meta http-equiv="refresh" content="0;url={}">'
    site.page("/refresh-to-javascript", refresh.format("javascript:alert(1)"))
    site.page("/refresh-loop", refresh.format("/refresh-loop"))
    site.routes["/cookie"] = lambda _h: (
        200,
        {"Content-Type": "text/html", "Set-Cookie": "session=1; Path=/"},
        b"<html><title>cookie</title><p>a cookie</p></html>",
    )
    yield site
    site.stop()


@pytest.fixture(scope="module")
def static(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, silent_host: SilentHost
) -> Iterator[ServiceProcess]:
    """The service with tldextract's cache empty and its list's address the silent host: any
    fetch of the list would hang on it, and be counted."""
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("static"),
        env={
            "TLDEXTRACT_CACHE": str(tmp_path_factory.mktemp("tldextract-cache")),
            "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": (
                f"http://127.0.0.1:{silent_host.port}/public_suffix_list.dat"
            ),
        },
    ).start()
    yield proc
    proc.stop()


def listing(proc: ServiceProcess, key: str, name: str) -> list[dict[str, Any]]:
    reply = call("GET", proc.url(f"/{name}?limit=100"), key=key)
    assert reply.status == 200, reply.body
    items: list[dict[str, Any]] = reply.json["items"]
    return items


def assert_unbilled(proc: ServiceProcess, accounts: Accounts, account_id: int, key: str) -> None:
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (10, 0)
    assert accounts.entries_sum(account_id) == 10
    assert [entry["kind"] for entry in listing(proc, key, "ledger")] == ["grant"]
    assert all(row["credits"] == 0 for row in listing(proc, key, "usage"))


def failed(proc: ServiceProcess, key: str, url: str, code: str) -> dict[str, Any]:
    reply = proc.scrape(key, {"url": url, "respect_robots": False}, timeout=40)
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.json
    assert (result["success"], result["error_code"]) == (False, code), result
    assert result["credits_charged"] == 0
    return result


# 1. a cookie, the Public Suffix List and a caller who went away ---------------------------------


def test_a_cookie_is_read_with_the_bundled_suffix_list(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts, silent_host: SilentHost
) -> None:
    account_id, key = accounts.create(credits=10)
    reply = static.scrape(key, {"url": hostile.url("/cookie")}, timeout=40)
    assert reply.status == 200
    assert (reply.json["success"], reply.json["title"]) == (True, "cookie")
    assert call("GET", static.url("/healthz"), timeout=10).status == 200
    assert silent_host.connections == 0
    assert accounts.summary(account_id)["balance"] == 9


def _post_and_hang_up(proc: ServiceProcess, key: str, url: str, stall: Stall) -> None:
    """Sends ``POST /scrape`` of ``url`` and closes the connection once the target is asked."""
    body = json.dumps({"url": url, "respect_robots": False}).encode()
    host, port = proc.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        head = (
            f"POST /scrape HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"X-API-Key: {key}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        conn.sendall(head.encode() + body)
        assert stall.entered.wait(30), "the target was never asked"


def _settled(accounts: Accounts, account_id: int, within: float = 30) -> dict[str, Any]:
    """The account once nothing is held any more (the late scrape settled)."""
    deadline = time.monotonic() + within
    while True:
        summary = accounts.summary(account_id)
        if summary["held"] == 0 or time.monotonic() > deadline:
            return summary
        time.sleep(0.1)


def test_a_scrape_whose_caller_went_away_is_not_billed(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    stall = Stall()
    hostile.routes["/stall"] = stall
    _post_and_hang_up(static, key, hostile.url("/stall"), stall)
    assert accounts.summary(account_id)["held"] == 1
    stall.release.set()  # the page now answers, a success nobody is waiting for
    summary = _settled(accounts, account_id)
    assert (summary["balance"], summary["held"]) == (10, 0)
    assert_unbilled(static, accounts, account_id, key)
    assert [row["success"] for row in listing(static, key, "usage")] == [False]
    # the service answers the next caller as before
    assert static.scrape(key, {"url": hostile.url("/cookie")}).json["success"] is True


# 6. the codes of decompression bombs and redirect chains ---------------------------------------


def test_a_decompression_bomb_is_too_large_with_a_clean_message(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    result = failed(static, key, hostile.url("/bomb"), "too_large")
    assert "DOWNLOAD_MAXSIZE" not in result["error"]
    assert "Ignored response" not in result["error"]
    assert str(16 * 1024 * 1024) in result["error"]
    assert_unbilled(static, accounts, account_id, key)


def test_a_body_over_the_download_cap_is_too_large_with_a_clean_message(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    result = failed(static, key, hostile.url("/huge"), "too_large")
    assert (
        result["error"] == f"the page is larger than the download limit of {16 * 1024 * 1024} bytes"
    )
    assert_unbilled(static, accounts, account_id, key)


def test_a_map_of_a_bomb_says_too_large_cleanly(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    reply = call(
        "POST", static.url("/map"), {"url": hostile.url("/bomb"), "sitemap": "skip"}, key=key
    )
    assert reply.status == 200
    assert reply.json["count"] == 0
    assert "Ignored response" not in reply.json["error"]
    assert "DOWNLOAD_MAXSIZE" not in reply.json["error"]
    assert "larger than" in reply.json["error"]
    assert_unbilled(static, accounts, account_id, key)


@pytest.mark.parametrize(
    ("path", "said"),
    [("/loop", "loop"), ("/chain/0", "more than 10 times"), ("/to-javascript", "javascript:")],
)
def test_a_redirect_loop_chain_or_javascript_is_redirect_failed(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts, path: str, said: str
) -> None:
    account_id, key = accounts.create(credits=10)
    result = failed(static, key, hostile.url(path), "redirect_failed")
    assert said in result["error"]
    assert "ValueError" not in result["error"]
    assert_unbilled(static, accounts, account_id, key)


# 7. redirects the service does not follow -------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "scheme"), [("/to-file", "file:"), ("/to-gopher", "gopher:"), ("/to-data", "data:")]
)
def test_an_unfollowed_redirect_is_a_failure_and_unbilled(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts, path: str, scheme: str
) -> None:
    account_id, key = accounts.create(credits=10)
    before = hostile.count(path)
    result = failed(static, key, hostile.url(path), "redirect_failed")
    assert scheme in result["error"]
    assert "does not follow" in result["error"]
    assert hostile.count(path) == before + 1
    assert_unbilled(static, accounts, account_id, key)


def test_a_redirect_to_a_url_with_credentials_is_not_followed(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    before = hostile.count("/cookie")
    result = failed(static, key, hostile.url("/to-credentials"), "redirect_failed")
    assert "credentials" in result["error"]
    assert SECRET not in json.dumps(result)
    assert hostile.count("/cookie") == before
    assert_unbilled(static, accounts, account_id, key)
    assert SECRET not in static.log_text()


def test_a_meta_refresh_loop_is_redirect_failed(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    result = failed(static, key, hostile.url("/refresh-loop"), "redirect_failed")
    assert "more than 10 times" in result["error"]
    assert_unbilled(static, accounts, account_id, key)


def test_a_meta_refresh_to_javascript_leaves_the_page_as_it_is(
    static: ServiceProcess, hostile: TargetSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    reply = static.scrape(key, {"url": hostile.url("/refresh-to-javascript")})
    result = reply.json
    assert (result["success"], result["status_code"], result["title"]) == (True, 200, "refresh")
    assert accounts.summary(account_id)["balance"] == 9


# 8. credentials in a target URL -----------------------------------------------------------------


def _with_credentials(site: TargetSite, path: str = "/cookie") -> str:
    return f"http://user:{SECRET}@127.0.0.1:{site.port}{path}"


@pytest.mark.parametrize(
    ("endpoint", "body", "field"),
    [
        ("/scrape", lambda url: {"url": url}, "'url'"),
        ("/batch", lambda url: {"urls": ["http://127.0.0.1/", url]}, "'urls[1]'"),
        ("/crawl", lambda url: {"url": url}, "'url'"),
        ("/map", lambda url: {"url": url}, "'url'"),
    ],
)
def test_credentials_in_a_target_url_are_refused_and_never_echoed(
    static: ServiceProcess,
    hostile: TargetSite,
    accounts: Accounts,
    endpoint: str,
    body: Any,
    field: str,
) -> None:
    account_id, key = accounts.create(credits=10)
    before = hostile.count("/cookie")
    reply = call("POST", static.url(endpoint), body(_with_credentials(hostile)), key=key)
    assert reply.status == 400, reply.body
    message = reply.json["error"]
    assert field in message and "credentials" in message, message
    assert SECRET not in reply.body.decode()
    assert hostile.count("/cookie") == before
    assert_unbilled(static, accounts, account_id, key)
    assert SECRET not in static.log_text()
