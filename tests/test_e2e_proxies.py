"""End to end: proxy tiers through the real service, with real forward proxies on loopback.

Two services run for this module. ``pooled`` has live proxies that demand credentials and gives
new accounts 3 residential trials; ``failing`` has a datacenter pool of one dead and one live
proxy and a residential pool where every proxy is dead (refused, dropping, wrong credentials).
An https target served with a self-signed certificate shows the CONNECT path end to end.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from harness.service import SCRAPESPY, Accounts, ServiceProcess
from harness.site import TargetSite
from harness.tls import self_signed
from middlewares.proxy_pool import ProxyPoolMiddleware
from service.billing import accounts as service_accounts
from service.billing import keys, ledger
from service.core.errors import RESIDENTIAL_LOCKED
from service.scrape.scrapy_settings import default_settings
from tests.proxies import DroppingProxy, ForwardProxy, closed_port

DC_USER, DC_PASSWORD = "dc-user", "dc-pw-9f1c2e"
DC2_USER, DC2_PASSWORD = "dc-user-2", "dc-pw-77ab01"
RESI_USER, RESI_PASSWORD = "resi-user", "resi-pw-c0ffee"
SECRETS = (DC_PASSWORD, DC2_PASSWORD, RESI_PASSWORD, "wrong-pw-123456")
TRIALS = 3
COST = {"none": 1, "datacenter": 2, "residential": 10}  # static engine defaults
JS_COST = {"none": 5, "datacenter": 6, "residential": 25}
JS_PAGE = (
    "<html><head><title>static title</title></head><body>"
    "<script>document.title = 'rendered through a proxy'</script></body></html>"
)


def headers_page(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """Shows the request headers the target received, so a leaked header is visible."""
    names = " ".join(sorted(name.lower() for name in handler.headers.keys()))
    body = f"<html><head><title>headers</title></head><body><p>{names}</p></body></html>"
    return 200, {"Content-Type": "text/html"}, body.encode()


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.routes["/proxies/headers"] = headers_page
    for name in ("rotation", "dead-pool", "one-dead", "revived", "trial", "unlocked", "secret"):
        site.page(f"/proxies/{name}", f"<html><head><title>{name}</title></head></html>")
    return site


# ---------------------------------------------------------------------------------------------
# An https target with a self-signed certificate (Scrapy does not verify certificates)


class TlsSite:
    def __init__(self, workdir: Path) -> None:
        cert_path, key_path = self_signed(workdir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        self.hits = 0
        tls_site = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/secure":
                    tls_site.hits += 1
                    status, _, body = headers_page(self)
                    body = body.replace(b"<title>headers", b"<title>secure headers")
                else:
                    status, body = 404, b"<html><title>Not here</title></html>"
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsSite]:
    target = TlsSite(tmp_path_factory.mktemp("tls"))
    yield target
    target.stop()


# ---------------------------------------------------------------------------------------------
# Proxies and services


@pytest.fixture(scope="module")
def dc_proxies() -> Iterator[list[ForwardProxy]]:
    proxies = [ForwardProxy(DC_USER, DC_PASSWORD).start(), ForwardProxy(DC2_USER, DC2_PASSWORD)]
    proxies[1].start()
    yield proxies
    for proxy in proxies:
        proxy.stop()


@pytest.fixture(scope="module")
def resi_proxy() -> Iterator[ForwardProxy]:
    proxy = ForwardProxy(RESI_USER, RESI_PASSWORD).start()
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def pooled(
    database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    dc_proxies: list[ForwardProxy],
    resi_proxy: ForwardProxy,
) -> Iterator[ServiceProcess]:
    env = {
        "SCRAPESPY_PROXIES_DATACENTER": ",".join(p.url for p in dc_proxies),
        "SCRAPESPY_PROXIES_RESIDENTIAL": resi_proxy.url,
        "SCRAPESPY_RESIDENTIAL_TRIALS": str(TRIALS),
        "SCRAPESPY_LOG_LEVEL": "DEBUG",
    }
    proc = ServiceProcess(database_url, tmp_path_factory.mktemp("pooled"), env=env).start()
    yield proc
    proc.stop()


class Failing:
    def __init__(self) -> None:
        self.dead_dc_port = closed_port()
        self.live_dc = ForwardProxy().start()
        self.dead_resi_port = closed_port()
        self.dropping = DroppingProxy().start()
        self.refusing = ForwardProxy(RESI_USER, RESI_PASSWORD).start()
        self.revived: ForwardProxy | None = None

    def env(self, workdir: Path) -> dict[str, str]:
        wrong_credentials = f"http://{RESI_USER}:wrong-pw-123456@{self.refusing.address}"
        # The residential pool comes from a file of URLs, one a line.
        pool_file = workdir / "residential-proxies.txt"
        pool_file.write_text(
            f"# every one of these is dead\nhttp://127.0.0.1:{self.dead_resi_port}\n"
            f"{self.dropping.url}\n\n{wrong_credentials}\n"
        )
        return {
            "SCRAPESPY_PROXIES_DATACENTER": f"127.0.0.1:{self.dead_dc_port},{self.live_dc.url}",
            "SCRAPESPY_PROXIES_RESIDENTIAL_FILE": str(pool_file),
            "SCRAPESPY_PROXY_BENCH_SECONDS": "1",
        }

    def stop(self) -> None:
        for proxy in (self.live_dc, self.dropping, self.refusing, self.revived):
            if proxy is not None:
                proxy.stop()


@pytest.fixture(scope="module")
def failing_proxies() -> Iterator[Failing]:
    proxies = Failing()
    yield proxies
    proxies.stop()


@pytest.fixture(scope="module")
def failing(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, failing_proxies: Failing
) -> Iterator[ServiceProcess]:
    workdir = tmp_path_factory.mktemp("failing")
    proc = ServiceProcess(database_url, workdir, env=failing_proxies.env(workdir)).start()
    yield proc
    proc.stop()


def cli(database_url: str, *args: str) -> str:
    done = subprocess.run(
        [SCRAPESPY, *args],
        env={
            **os.environ,
            "SCRAPESPY_DATABASE_URL": database_url,
            "SCRAPESPY_RESIDENTIAL_TRIALS": str(TRIALS),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def show(database_url: str, email: str) -> dict[str, Any]:
    return json.loads(cli(database_url, "accounts", "show", email, "--json"))


def scrape_ok(service: ServiceProcess, key: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = service.scrape(key, body)
    assert reply.status == 200, reply.body
    return reply.json


# ---------------------------------------------------------------------------------------------
# Through the pools


def test_datacenter_scrape_goes_through_a_proxy_and_bills_datacenter(
    pooled: ServiceProcess, pages: TargetSite, accounts: Accounts, dc_proxies: list[ForwardProxy]
) -> None:
    account_id, key = accounts.create(credits=100)
    before = sum(p.count() for p in dc_proxies)
    result = scrape_ok(
        pooled, key, {"url": pages.url("/proxies/headers"), "proxy_type": "datacenter"}
    )
    assert result["success"] is True and result["proxy_used"] is True
    assert result["title"] == "headers"
    assert sum(p.count() for p in dc_proxies) == before + 1
    # The proxy passes the request on without its own header: the target never sees it.
    assert "proxy-authorization" not in result["text"]
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (100 - COST["datacenter"], 0)
    assert accounts.entries_sum(account_id) == summary["balance"]


def test_the_pool_rotates(
    pooled: ServiceProcess, pages: TargetSite, accounts: Accounts, dc_proxies: list[ForwardProxy]
) -> None:
    _, key = accounts.create(credits=100)
    url = pages.url("/proxies/rotation")
    for _ in range(4):
        result = scrape_ok(pooled, key, {"url": url, "proxy_type": "datacenter"})
        assert result["proxy_used"] is True
    assert [p.targets().count(url) for p in dc_proxies] == [2, 2]


def test_credentials_reach_the_proxy_and_nowhere_else(
    pooled: ServiceProcess, pages: TargetSite, accounts: Accounts, dc_proxies: list[ForwardProxy]
) -> None:
    _, key = accounts.create(credits=100)
    url = pages.url("/proxies/secret")
    replies = [pooled.scrape(key, {"url": url, "proxy_type": "datacenter"}) for _ in range(2)]
    seen = [s for p in dc_proxies for s in p.seen if s.target == url]
    assert sorted(s.credentials for s in seen if s.credentials) == [
        (DC_USER, DC_PASSWORD),
        (DC2_USER, DC2_PASSWORD),
    ]
    assert all(s.authorized for s in seen)
    encoded = [
        base64.b64encode(f"{user}:{pw}".encode()).decode()
        for user, pw in ((DC_USER, DC_PASSWORD), (DC2_USER, DC2_PASSWORD))
    ]
    log = pooled.log_text()
    assert f"127.0.0.1:{dc_proxies[0].port}" in log  # proxies are named by host:port
    for reply in replies:
        assert reply.status == 200 and reply.json["proxy_used"] is True
        for secret in (*SECRETS, *encoded):
            assert secret not in reply.body.decode()
    for secret in (*SECRETS, *encoded):
        assert secret not in log


def test_https_target_through_a_connect_tunnel(
    pooled: ServiceProcess, tls_site: TlsSite, accounts: Accounts, dc_proxies: list[ForwardProxy]
) -> None:
    account_id, key = accounts.create(credits=100)
    authority = f"127.0.0.1:{tls_site.port}"
    result = scrape_ok(
        pooled,
        key,
        {"url": f"https://{authority}/secure", "proxy_type": "datacenter", "respect_robots": False},
    )
    assert result["success"] is True and result["proxy_used"] is True
    assert result["title"] == "secure headers"
    # Inside the tunnel the target gets no proxy header either.
    assert "proxy-authorization" not in result["text"]
    tunnels = [s for p in dc_proxies for s in p.seen if s.method == "CONNECT"]
    assert [s.target for s in tunnels] == [authority]
    assert tunnels[0].authorized and tunnels[0].credentials in (
        (DC_USER, DC_PASSWORD),
        (DC2_USER, DC2_PASSWORD),
    )
    assert tls_site.hits == 1
    assert accounts.summary(account_id)["balance"] == 100 - COST["datacenter"]


def test_a_proxy_field_is_refused(
    pooled: ServiceProcess, pages: TargetSite, accounts: Accounts, dc_proxies: list[ForwardProxy]
) -> None:
    account_id, key = accounts.create(credits=100)
    before = sum(p.count() for p in dc_proxies), pages.count("/proxies/headers")
    reply = pooled.scrape(
        key,
        {"url": pages.url("/proxies/headers"), "proxy": f"http://{dc_proxies[0].address}"},
    )
    assert reply.status == 400
    assert reply.headers["X-Error-Code"] == "invalid_request"
    assert list(reply.json) == ["error"] and "proxy" in reply.json["error"]
    assert (sum(p.count() for p in dc_proxies), pages.count("/proxies/headers")) == before
    assert accounts.summary(account_id)["balance"] == 100


# ---------------------------------------------------------------------------------------------
# Residential trials


def test_residential_trials_then_403_then_unlock(
    pooled: ServiceProcess,
    pages: TargetSite,
    database_url: str,
    accounts: Accounts,
    resi_proxy: ForwardProxy,
) -> None:
    # Made by the operator's command, so SCRAPESPY_RESIDENTIAL_TRIALS sets the allowance.
    email = f"trial-{time.monotonic_ns()}@example.com"
    cli(database_url, "accounts", "create", email)
    run = accounts.database.run_sync
    account_id = run(service_accounts.find_id, email)
    run(ledger.credit, account_id, 100, kind="grant", reference="test")
    key = run(keys.regenerate, account_id)
    assert accounts.summary(account_id)["residential_trials_left"] == TRIALS

    url = pages.url("/proxies/trial")
    # A failed scrape through the residential pool is free and uses no trial.
    result = scrape_ok(pooled, key, {"url": pages.url("/status/404"), "proxy_type": "residential"})
    assert result["success"] is False and result["proxy_used"] is True
    assert accounts.summary(account_id)["residential_trials_left"] == TRIALS

    for left in range(TRIALS - 1, -1, -1):
        result = scrape_ok(pooled, key, {"url": url, "proxy_type": "residential"})
        assert result["success"] is True and result["proxy_used"] is True
        summary = accounts.summary(account_id)
        assert summary["residential_trials_left"] == left
        assert (summary["balance"], summary["held"]) == (100, 0)
    assert resi_proxy.targets().count(url) == TRIALS

    hits, through_proxy = pages.count("/proxies/trial"), resi_proxy.count()
    reply = pooled.scrape(key, {"url": url, "proxy_type": "residential"})
    assert reply.status == 403
    assert reply.error_answer == ({"error": RESIDENTIAL_LOCKED}, "residential_locked")
    assert "trials" in RESIDENTIAL_LOCKED and "unlock at launch" in RESIDENTIAL_LOCKED
    assert (pages.count("/proxies/trial"), resi_proxy.count()) == (hits, through_proxy)
    summary = show(database_url, email)
    assert (summary["balance"], summary["held"], summary["residential_trials_left"]) == (100, 0, 0)

    # The other tiers still work, as the message suggests.
    result = scrape_ok(pooled, key, {"url": url, "proxy_type": "datacenter"})
    assert result["success"] is True
    assert accounts.summary(account_id)["balance"] == 100 - COST["datacenter"]

    cli(database_url, "accounts", "unlock-residential", email)
    result = scrape_ok(
        pooled, key, {"url": pages.url("/proxies/unlocked"), "proxy_type": "residential"}
    )
    assert result["success"] is True and result["proxy_used"] is True
    summary = show(database_url, email)
    assert summary["residential_unlocked"] is True
    assert summary["balance"] == 100 - COST["datacenter"] - COST["residential"]
    assert (summary["held"], summary["residential_trials_left"]) == (0, 0)


# ---------------------------------------------------------------------------------------------
# Dead proxies


def test_one_dead_one_live_succeeds_through_the_live_one(
    failing: ServiceProcess, pages: TargetSite, accounts: Accounts, failing_proxies: Failing
) -> None:
    account_id, key = accounts.create(credits=100)
    url = pages.url("/proxies/one-dead")
    for _ in range(2):
        result = scrape_ok(failing, key, {"url": url, "proxy_type": "datacenter"})
        assert result["success"] is True and result["proxy_used"] is True
    assert failing_proxies.live_dc.targets().count(url) == 2
    assert accounts.summary(account_id)["balance"] == 100 - 2 * COST["datacenter"]


def test_a_pool_of_dead_proxies_falls_back_to_direct_and_bills_none(
    failing: ServiceProcess, pages: TargetSite, accounts: Accounts, failing_proxies: Failing
) -> None:
    # Not unlocked for residential: each request is a trial, held at the `none` cost.
    trial_id, trial_key = accounts.create(credits=100)
    url = pages.url("/proxies/headers")
    for _ in range(4):
        hits = pages.count("/proxies/headers")
        result = scrape_ok(failing, trial_key, {"url": url, "proxy_type": "residential"})
        assert result["success"] is True and result["proxy_used"] is False
        assert pages.count("/proxies/headers") == hits + 1
        # Straight from the service to the target, with no proxy's credentials on it.
        assert "proxy-authorization" not in result["text"]
    # Every kind of dead proxy was tried: refused, dropped mid-request, wrong credentials.
    assert failing_proxies.dropping.count() >= 1
    refused = [s for s in failing_proxies.refusing.seen if s.target == url]
    assert refused and not any(s.authorized for s in refused)
    # Billed at the `none` rate, and a direct fetch uses no residential trial.
    summary = accounts.summary(trial_id)
    assert (summary["balance"], summary["held"]) == (100 - 4 * COST["none"], 0)
    assert summary["residential_trials_left"] == accounts.trials
    log = failing.log_text()
    assert "benched" in log
    assert "wrong-pw-123456" not in log


def test_a_benched_proxy_is_tried_again_later(
    failing: ServiceProcess, pages: TargetSite, accounts: Accounts, failing_proxies: Failing
) -> None:
    _, key = accounts.create(credits=100)
    url = pages.url("/proxies/revived")
    # Make sure the dead datacenter proxy has been tried (and benched) at least once ...
    for _ in range(2):
        assert scrape_ok(failing, key, {"url": url, "proxy_type": "datacenter"})["proxy_used"]
    # ... then bring it back on its port and let its bench (1 s) run out.
    failing_proxies.revived = ForwardProxy(port=failing_proxies.dead_dc_port).start()
    time.sleep(1.2)
    for _ in range(3):
        assert scrape_ok(failing, key, {"url": url, "proxy_type": "datacenter"})["proxy_used"]
    assert failing_proxies.revived.targets().count(url) >= 1


def test_a_bad_proxy_url_stops_the_service_without_showing_its_password(
    database_url: str, tmp_path: Path
) -> None:
    env = {"SCRAPESPY_PROXIES_DATACENTER": "http://ok.example:3128,socks5://u:hush-hush@h:1080"}
    proc = ServiceProcess(database_url, tmp_path, env=env)
    with pytest.raises(RuntimeError):
        proc.start()  # the process exits by itself; the wait ends there
    assert proc.process is not None and proc.process.returncode == 2
    log = proc.log_text()
    assert "SCRAPESPY_PROXIES_DATACENTER: entry #2" in log
    assert "only http:// proxies are supported" in log
    assert "hush-hush" not in log


# ---------------------------------------------------------------------------------------------
# The js engine: Playwright takes the proxy per browser context


def fetch_in_chromium(context_kwargs: dict[str, Any], url: str) -> tuple[int, str]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            context = browser.new_context(**context_kwargs)
            page = context.new_page()
            response = page.goto(url, timeout=15000)
            assert response is not None
            return response.status, page.title()
        finally:
            browser.close()


@pytest.mark.browser
def test_js_context_settings_take_chromium_through_the_proxy(
    pages: TargetSite, resi_proxy: ForwardProxy
) -> None:
    crawler = get_crawler(
        settings_dict={**default_settings(), "SCRAPESPY_PROXIES_RESIDENTIAL": [resi_proxy.url]}
    )
    mw = build_from_crawler(ProxyPoolMiddleware, crawler)
    url = pages.url("/proxies/headers")
    request = Request(url, meta={"scrapespy_proxy_tier": "residential", "playwright": True})
    mw.process_request(request)
    assert request.meta["scrapespy_tier_used"] == "residential"
    # Playwright's sync API wants a thread without a running event loop.
    with ThreadPoolExecutor(1) as pool:
        status, title = pool.submit(
            fetch_in_chromium, request.meta["playwright_context_kwargs"], url
        ).result(timeout=60)
    assert (status, title) == (200, "headers")
    seen = [s for s in resi_proxy.seen if s.target == url]
    assert seen and seen[-1].authorized and seen[-1].credentials == (RESI_USER, RESI_PASSWORD)


@pytest.mark.browser
def test_js_scrape_goes_through_the_pool_and_bills_js_datacenter(
    pooled: ServiceProcess, pages: TargetSite, accounts: Accounts, dc_proxies: list[ForwardProxy]
) -> None:
    account_id, key = accounts.create(credits=100)
    url = pages.url("/proxies/js")
    pages.page("/proxies/js", JS_PAGE)
    result = scrape_ok(pooled, key, {"url": url, "engine": "js", "proxy_type": "datacenter"})
    assert result["success"] is True and result["proxy_used"] is True, result
    assert result["engine"] == "js" and result["title"] == "rendered through a proxy"
    seen = [s for p in dc_proxies for s in p.seen if s.target == url]
    assert len(seen) == 1 and seen[0].authorized
    assert accounts.summary(account_id)["balance"] == 100 - JS_COST["datacenter"]
    for secret in SECRETS:
        assert secret not in pooled.log_text()


@pytest.mark.browser
def test_js_scrape_with_a_dead_pool_goes_direct_and_bills_js_none(
    failing: ServiceProcess, pages: TargetSite, accounts: Accounts, failing_proxies: Failing
) -> None:
    account_id, key = accounts.create(credits=100)
    url = pages.url("/proxies/js-direct")
    pages.page("/proxies/js-direct", JS_PAGE)
    result = scrape_ok(failing, key, {"url": url, "engine": "js", "proxy_type": "residential"})
    assert result["success"] is True and result["proxy_used"] is False, result
    assert result["title"] == "rendered through a proxy"  # the page's script ran all the same
    assert pages.count("/proxies/js-direct") == 1
    summary = accounts.summary(account_id)
    assert (summary["balance"], summary["held"]) == (100 - JS_COST["none"], 0)
