"""End to end: the static engine's network fingerprint (issue 45, service.impersonation).

A TLS site on 127.0.0.1 (harness.fingerprints) computes the JA4 of each ClientHello and the
HTTP/2 fingerprint of each connection and shows them in its page, which the scrape reads back
with selectors. The system Chromium, unautomated, opens the same site for the reference. The
static engine with the ``chrome`` fingerprint must present Chromium's JA4 and HTTP/2
fingerprint, and keep every guarantee of the static engine: the egress guard, proxies, the size
cap, decompression bombs, redirects, cookies per request. With the default (``scrapy``), an
``auto`` request blocked for its fingerprint tries Chrome's on the same tier.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.fingerprints import CHROMIUMS, FingerprintSite, Hello, chromium_hello
from harness.service import Accounts, ServiceProcess
from service.egress.addresses import BLOCKED_MESSAGE
from tests.proxies import ForwardProxy

pytestmark = [pytest.mark.browser, pytest.mark.engine]

CELLS = {"ja4": "#ja4", "http2": "#http2", "ua": "#user-agent", "cookie": "#cookie"}
FULL_CHROMIUM = CHROMIUMS[-1]  # the desktop browser; the headless shell is compared in 0037


@pytest.fixture(scope="module")
def fp_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FingerprintSite]:
    site = FingerprintSite(tmp_path_factory.mktemp("fingerprints"))
    yield site
    site.close()


@pytest.fixture(scope="module")
def chromium(fp_site: FingerprintSite) -> Hello:
    if not os.access(FULL_CHROMIUM, os.X_OK):
        pytest.skip("no system Chromium")
    return chromium_hello(fp_site, "/reference", FULL_CHROMIUM)


@pytest.fixture(scope="module")
def proxy() -> Iterator[ForwardProxy]:
    forward = ForwardProxy("fp-user", "fp-pass").start()
    yield forward
    forward.server.shutdown()


def _service(database_url: str, workdir: Path, **env: str) -> ServiceProcess:
    return ServiceProcess(database_url, workdir, env=env).start()


@pytest.fixture(scope="module")
def chrome(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, proxy: ForwardProxy
) -> Iterator[ServiceProcess]:
    # the guard off (the harness's default) to reach 127.0.0.1
    proc = _service(
        database_url,
        tmp_path_factory.mktemp("chrome"),
        SCRAPESPY_STATIC_FINGERPRINT="chrome",
        SCRAPESPY_PROXIES_DATACENTER=proxy.url,
    )
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def scrapy(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    proc = _service(database_url, tmp_path_factory.mktemp("scrapy"))  # the default fingerprint
    yield proc
    proc.stop()


def scrape(proc: ServiceProcess, key: str, url: str, **extra: Any) -> dict[str, Any]:
    body = {"url": url, "respect_robots": False, "selectors": CELLS, **extra}
    reply = proc.scrape(key, body, timeout=60)
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.json
    result["extracted"] = {k: "".join(v) for k, v in (result.get("extracted") or {}).items()}
    return result


def test_the_static_engine_presents_chromiums_tls_and_http2_fingerprint(
    chrome: ServiceProcess, fp_site: FingerprintSite, chromium: Hello, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=10)
    result = scrape(chrome, key, fp_site.url("/static"))
    assert result["success"] is True, result
    seen = result["extracted"]
    assert seen["ja4"] == chromium.ja4
    assert seen["http2"] == chromium.http2
    assert "Chrome/" in seen["ua"] and "scrapespy" not in seen["ua"]
    # Chrome's request headers, in Chrome's order, not Scrapy's
    sent = fp_site.last("/static")
    assert sent.header_names[: len(chromium.header_names) - 1] == chromium.header_names[:-1]
    assert sent.header("accept-encoding") == chromium.header("accept-encoding")


def test_scrapys_own_fingerprint_is_not_chromiums(
    scrapy: ServiceProcess, fp_site: FingerprintSite, chromium: Hello, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=10)
    result = scrape(scrapy, key, fp_site.url("/scrapy"))
    assert result["success"] is True, result
    assert result["extracted"]["ja4"] != chromium.ja4
    assert fp_site.last("/scrapy").alpn == "http/1.1"


def test_auto_blocked_with_scrapys_fingerprint_tries_chromes_on_the_same_tier(
    scrapy: ServiceProcess, fp_site: FingerprintSite, chromium: Hello, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    url = fp_site.url(f"/guarded?ja4={chromium.ja4}")
    result = scrape(scrapy, key, url, proxy_type="auto")
    assert (result["success"], result["blocked"], result["status_code"]) == (True, False, 200)
    steps = [(a["tier"], a["fingerprint"], a["blocked"]) for a in result["attempts"]]
    assert steps == [("none", "scrapy", True), ("none", "chrome", False)]
    assert accounts.summary(account_id)["balance"] == 9


def test_a_proxy_carries_the_browsers_fingerprint_end_to_end(
    chrome: ServiceProcess,
    fp_site: FingerprintSite,
    chromium: Hello,
    proxy: ForwardProxy,
    accounts: Accounts,
) -> None:
    _, key = accounts.create(credits=10)
    before = len(proxy.seen)
    result = scrape(chrome, key, fp_site.url("/proxied"), proxy_type="datacenter")
    assert (result["success"], result["proxy_used"]) == (True, True), result
    assert result["extracted"]["ja4"] == chromium.ja4
    tunnel = proxy.seen[before:]
    assert [(s.method, s.credentials, s.authorized) for s in tunnel] == [
        ("CONNECT", ("fp-user", "fp-pass"), True)
    ]


def test_redirects_are_followed_by_the_service_and_a_loop_fails(
    chrome: ServiceProcess, fp_site: FingerprintSite, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=10)
    result = scrape(chrome, key, fp_site.url("/redirect"))
    assert (result["success"], result["title"]) == (True, "landing"), result
    assert result["final_url"] == fp_site.url("/landing")
    loop = scrape(chrome, key, fp_site.url("/loop"))
    assert (loop["success"], loop["error_code"]) == (False, "redirect_failed")


def test_a_target_slower_than_the_timeout_times_out_unbilled(
    chrome: ServiceProcess, fp_site: FingerprintSite, accounts: Accounts
) -> None:
    account_id, key = accounts.create(credits=10)
    result = scrape(chrome, key, fp_site.url("/slow"), timeout=2)
    assert (result["success"], result["error_code"]) == (False, "timeout"), result
    assert accounts.summary(account_id)["balance"] == 10


@pytest.mark.parametrize("path", ["/huge", "/bomb"])
def test_a_body_over_the_cap_and_a_bomb_are_too_large(
    chrome: ServiceProcess, fp_site: FingerprintSite, accounts: Accounts, path: str
) -> None:
    account_id, key = accounts.create(credits=10)
    result = scrape(chrome, key, fp_site.url(path))
    assert (result["success"], result["error_code"]) == (False, "too_large"), result
    assert str(16 * 1024 * 1024) in result["error"]
    assert accounts.summary(account_id)["balance"] == 10


def test_cookies_are_the_requests_own(
    chrome: ServiceProcess, fp_site: FingerprintSite, accounts: Accounts
) -> None:
    _, key = accounts.create(credits=10)
    set_by_site = scrape(chrome, key, fp_site.url("/set-cookie"))
    assert set_by_site["success"] is True
    given = [{"name": "mine", "value": "1", "domain": "127.0.0.1"}]
    result = scrape(chrome, key, fp_site.url("/cookies"), cookies=given)
    # the caller's cookie, and nothing the site set for another scrape
    assert result["extracted"]["cookie"] == "mine=1"
    assert scrape(chrome, key, fp_site.url("/cookies-2"))["extracted"]["cookie"] == ""


@pytest.fixture(scope="module")
def guarded(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    proc = _service(
        database_url,
        tmp_path_factory.mktemp("guarded"),
        SCRAPESPY_ALLOW_PRIVATE_TARGETS="0",
        SCRAPESPY_STATIC_FINGERPRINT="chrome",
    )
    yield proc
    proc.stop()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]"])
def test_the_egress_guard_still_refuses_private_addresses(
    guarded: ServiceProcess, fp_site: FingerprintSite, accounts: Accounts, host: str
) -> None:
    account_id, key = accounts.create(credits=10)
    before = len(fp_site.seen)
    result = scrape(guarded, key, f"https://{host}:{fp_site.port}/private")
    assert (result["success"], result["error_code"]) == (False, "egress_blocked"), result
    assert result["error"] == BLOCKED_MESSAGE
    assert len(fp_site.seen) == before
    assert accounts.summary(account_id)["balance"] == 10
