"""``SCRAPESPY_BROWSER_ENDPOINTS``: the js engine renders on a pool of ``scrapespy browser``
servers (real subprocesses, real Chromium), and every guarantee holds there.

The service refuses private targets; its test pages are served from 127.0.0.2 under the name
``page.test``, which it alone is told to treat as public. A canary on 127.0.0.1 counts every
connection it gets: a browser server that reached loopback directly would show there.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.balancer import free_port
from harness.browsers import TOKEN, BrowserServer
from harness.service import Accounts, ServiceProcess, call
from harness.site import JS_ONLY
from service.egress.addresses import BLOCKED_MESSAGE
from tests.test_e2e_js import CANARY_PAGE, PAGE_ADDRESS, Canary, browser_processes

pytestmark = [pytest.mark.browser, pytest.mark.engine, pytest.mark.long(minutes=1)]

JS_PRICE = 5

WRONG = "wrong-token-a41b77c2"
HTML = {"Content-Type": "text/html; charset=utf-8"}
SLOW_SECONDS = 4.0
# what the page finds of earlier scrapes (cookie, storage), and the languages it is shown
STATE = """<!doctype html><html><head><title>State</title></head><body>
<p id="before"></p><p id="languages"></p><script>
document.getElementById("before").textContent =
  "cookie=[" + document.cookie + "] storage=[" + (localStorage.getItem("who") || "") + "]";
document.getElementById("languages").textContent = navigator.languages.join(",");
document.cookie = "who=first; path=/";
localStorage.setItem("who", "first");
</script></body></html>"""


class PoolSite(ThreadingHTTPServer):
    """The pages, on 127.0.0.2; counts the slow page's requests as they arrive."""

    daemon_threads = True

    def __init__(self, canary_port: int) -> None:
        self.slow_hits = 0
        site = self
        routes = {
            "/js-only": JS_ONLY.encode(),
            "/canary": CANARY_PAGE.format(c=canary_port).encode(),
            "/slow": JS_ONLY.encode(),
            "/state": STATE.encode(),
        }

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/slow":
                    site.slow_hits += 1
                    time.sleep(SLOW_SECONDS)
                body = routes.get(self.path, b"<h1>404</h1>")
                try:
                    self.send_response(200 if self.path in routes else 404)
                    for name, value in {**HTML, "Content-Length": str(len(body))}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

        super().__init__((PAGE_ADDRESS, 0), Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://page.test:{self.port}{path}"


@pytest.fixture(scope="module")
def canary() -> Iterator[Canary]:
    server = Canary()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def pool_site(canary: Canary) -> Iterator[PoolSite]:
    server = PoolSite(canary.port)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def servers() -> Iterator[list[BrowserServer]]:
    started = [BrowserServer(free_port()).start(), BrowserServer(free_port()).start()]
    yield started
    for server in started:
        server.stop()


def pool_service(
    database_url: str, workdir: Path, endpoints: list[str], token: str = TOKEN
) -> ServiceProcess:
    return ServiceProcess(
        database_url,
        workdir,
        env={
            "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "0",
            "SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS": f"page.test={PAGE_ADDRESS}",
            "SCRAPESPY_BROWSER_ENDPOINTS": ",".join(endpoints),
            "SCRAPESPY_BROWSER_ENDPOINT_TOKEN": token,
            "SCRAPESPY_BROWSER_ENDPOINT_RETRY_SECONDS": "1",
        },
    ).start()


@pytest.fixture(scope="module")
def service(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, servers: list[BrowserServer]
) -> Iterator[ServiceProcess]:
    proc = pool_service(
        database_url,
        Path(tmp_path_factory.mktemp("pool")),
        [server.endpoint for server in servers],
    )
    yield proc
    proc.stop()


def metrics(proc: ServiceProcess) -> dict[tuple[str, str], float]:
    """The pool's series by (sample name, endpoint)."""
    text = call("GET", proc.url("/metrics")).body.decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "endpoint" in sample.labels:
                found[sample.name, sample.labels["endpoint"]] = sample.value
    return found


def renders(proc: ServiceProcess, server: BrowserServer) -> float:
    return metrics(proc).get(("scrapespy_browser_endpoint_renders_total", server.endpoint), 0.0)


def is_up(proc: ServiceProcess, server: BrowserServer) -> bool:
    return metrics(proc).get(("scrapespy_browser_endpoint_up", server.endpoint)) == 1.0


def balance(accounts: Accounts, account_id: int) -> tuple[int, int]:
    summary = accounts.summary(account_id)
    return summary["balance"], summary["held"]


def js(url: str, **more: Any) -> dict[str, Any]:
    return {"url": url, "engine": "js", "respect_robots": False, **more}


def settled(accounts: Accounts, account_id: int) -> tuple[int, int]:
    """The balance once no hold is left (a hold is released just after the answer)."""
    for _ in range(100):
        found = balance(accounts, account_id)
        if found[1] == 0:
            return found
        time.sleep(0.1)
    return balance(accounts, account_id)


def test_js_scrapes_are_spread_over_both_servers(service, servers, pool_site, accounts):
    account_id, key = accounts.create(credits=100)
    before = [renders(service, s) for s in servers]
    for _ in range(4):
        result = service.scrape(key, js(pool_site.url("/js-only"))).json
        assert result["success"] is True, result["error"]
        assert result["title"] == "Rendered by JS"
        assert result["headings"] == {"h1": ["Client side"]}
    after = [renders(service, s) for s in servers]
    assert [a - b for a, b in zip(after, before, strict=True)] == [2, 2]
    assert settled(accounts, account_id) == (100 - 4 * JS_PRICE, 0)
    # the service launched no browser of its own
    assert service.process is not None
    assert browser_processes(service.process.pid) == []


def test_a_remote_browser_is_still_held_by_the_guard(service, pool_pages, canary, accounts):
    account_id, key = accounts.create(credits=100)
    site = pool_pages
    before = canary.connections
    body = js(site.url("/canary"), selectors={"log": "#log li::text"})
    result = service.scrape(key, body).json
    assert result["success"] is True, result["error"]
    assert result["title"] == "Canary page"
    # the page tried each way out on its browser server; none got to loopback
    assert sorted(result["extracted"]["log"]) == [
        "fetch tried",
        "tls tried",
        "websocket tried",
        "xhr tried",
    ]
    # and a navigation straight to loopback is refused as a static scrape's is, unbilled
    refused = service.scrape(key, js(f"http://localhost:{canary.port}/")).json
    assert refused["success"] is False and refused["error"] == BLOCKED_MESSAGE
    time.sleep(0.2)
    assert canary.connections == before
    assert settled(accounts, account_id) == (100 - JS_PRICE, 0)


def test_isolation_sessions_location_and_timeouts_hold_on_the_pool(
    service, servers, pool_site, accounts
):
    account_id, key = accounts.create(credits=100)
    fields = {"selectors": {"before": "#before::text", "languages": "#languages::text"}}
    before = [renders(service, s) for s in servers]
    # no cookie or storage crosses from one scrape to the next, whichever server renders it
    for _ in range(2):
        result = service.scrape(key, js(pool_site.url("/state"), **fields)).json
        assert result["success"] is True, result["error"]
        assert result["extracted"]["before"] == ["cookie=[] storage=[]"]
    # a session's cookie and storage go with it from one server to the other
    first = service.scrape(key, js(pool_site.url("/state"), session="pool", **fields)).json
    assert first["extracted"]["before"] == ["cookie=[] storage=[]"], first["error"]
    again = service.scrape(key, js(pool_site.url("/state"), session="pool", **fields)).json
    assert again["extracted"]["before"] == ["cookie=[who=first] storage=[first]"], again["error"]
    after = [renders(service, s) for s in servers]
    assert [a - b for a, b in zip(after, before, strict=True)] == [2, 2]
    # a location's languages are the remote browser's
    located = js(pool_site.url("/state"), location={"languages": ["de-DE"]}, **fields)
    result = service.scrape(key, located).json
    assert result["extracted"]["languages"] == ["de-DE,de"], result["error"]
    # the timeout bounds a render on a server too, unbilled
    slow = service.scrape(key, js(pool_site.url("/slow"), timeout=1)).json
    assert slow["success"] is False and slow["error"] == "timed out after 1 s"
    assert settled(accounts, account_id) == (100 - 5 * JS_PRICE, 0)


@pytest.fixture
def pool_pages(pool_site: PoolSite) -> PoolSite:
    return pool_site


def test_a_server_killed_mid_scrape_is_taken_out_and_back(service, servers, pool_site, accounts):
    account_id, key = accounts.create(credits=100)
    hits = pool_site.slow_hits
    results: list[dict[str, Any]] = []

    def slow() -> None:
        results.append(service.scrape(key, js(pool_site.url("/slow"), timeout=60)).json)

    # two at once: one on each server (the fewest contexts open)
    threads = [threading.Thread(target=slow) for _ in range(2)]
    for thread in threads:
        thread.start()
    for _ in range(600):  # both pages are being fetched, through each server's browser
        if pool_site.slow_hits >= hits + 2:
            break
        time.sleep(0.05)
    assert pool_site.slow_hits >= hits + 2
    victim, survivor = servers
    victim.kill()
    for thread in threads:
        thread.join(120)
    # the scrape on the killed server failed cleanly (unbilled) or was rendered again on the
    # other one; the other scrape went on
    assert len(results) == 2
    for result in results:
        assert result["success"] is True or result["error_code"] == "unavailable", result
        if not result["success"]:
            assert result["error"] == "the browser rendering the page went away; retry later"
    succeeded = sum(1 for r in results if r["success"])
    assert succeeded >= 1
    assert not is_up(service, victim)

    # later scrapes render on the survivor
    on_survivor = renders(service, survivor)
    for _ in range(2):
        result = service.scrape(key, js(pool_site.url("/js-only"))).json
        assert result["success"] is True, result["error"]
    assert renders(service, survivor) == on_survivor + 2

    # the killed server back on its port: taken back (retried every second at most)
    servers[0] = BrowserServer(victim.port).start()
    for _ in range(600):
        if is_up(service, servers[0]):
            break
        time.sleep(0.1)
    assert is_up(service, servers[0])
    on_victim = renders(service, servers[0])
    for _ in range(2):
        result = service.scrape(key, js(pool_site.url("/js-only"))).json
        assert result["success"] is True, result["error"]
    assert renders(service, servers[0]) == on_victim + 1
    assert settled(accounts, account_id) == (100 - (succeeded + 4) * JS_PRICE, 0)
    log = service.log_text()
    assert f"browser endpoint {victim.endpoint} down" in log
    assert log.count(f"browser endpoint {victim.endpoint} up") >= 2


def test_the_only_server_killed_mid_scrape_answers_unavailable_unbilled(
    database_url, tmp_path_factory, pool_site, accounts
):
    lone = BrowserServer(free_port()).start()
    proc = pool_service(database_url, Path(tmp_path_factory.mktemp("pool-lone")), [lone.endpoint])
    try:
        account_id, key = accounts.create(credits=100)
        hits = pool_site.slow_hits
        results: list[dict[str, Any]] = []

        def slow() -> None:
            results.append(proc.scrape(key, js(pool_site.url("/slow"), timeout=60)).json)

        thread = threading.Thread(target=slow)
        thread.start()
        for _ in range(600):
            if pool_site.slow_hits > hits:
                break
            time.sleep(0.05)
        assert pool_site.slow_hits > hits
        lone.kill()
        thread.join(120)
        # not the 60 s timeout: the render ends when its server goes, with nowhere else to go
        (result,) = results
        assert result["success"] is False and result["error_code"] == "unavailable", result
        assert result["error"] in (
            "the browser rendering the page went away; retry later",
            "no browser of the js engine is reachable; retry later",
        )
        assert settled(accounts, account_id) == (100, 0)
    finally:
        proc.stop()
        lone.stop()


def test_a_wrong_token_is_refused_and_never_shown(
    database_url, tmp_path_factory, servers, pool_site, accounts
):
    # the server refuses a connection without the token, or with another one
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import asyncio, sys\n"
            "from patchright.async_api import async_playwright\n"
            "async def main():\n"
            "    async with async_playwright() as p:\n"
            "        for headers in (None, {'Authorization': 'Bearer " + WRONG + "'}):\n"
            "            try:\n"
            "                await p.chromium.connect(\n"
            "                    sys.argv[1], headers=headers, timeout=20000)\n"
            "                print('connected')\n"
            "            except Exception as e:\n"
            "                print('refused' if '401' in str(e) else repr(e))\n"
            "asyncio.run(main())\n",
            servers[1].endpoint,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.stdout.split() == ["refused", "refused"], probe.stdout + probe.stderr

    # a service with the wrong token: js scrapes fail at once, unbilled, and the token is in
    # neither the answer nor the log
    proc = pool_service(
        database_url,
        Path(tmp_path_factory.mktemp("pool-wrong-token")),
        [server.endpoint for server in servers],
        token=WRONG,
    )
    try:
        account_id, key = accounts.create(credits=100)
        reply = proc.scrape(key, js(pool_site.url("/js-only")))
        result = reply.json
        assert result["success"] is False
        assert result["error_code"] == "unavailable"
        assert result["error"] == "no browser of the js engine is reachable; retry later"
        assert WRONG not in reply.body.decode()
        assert settled(accounts, account_id) == (100, 0)
        log = proc.log_text()
        assert f"browser endpoint {servers[1].endpoint} down" in log
        assert "401" in log
    finally:
        proc.stop()
    assert WRONG not in proc.log_text()
    assert TOKEN not in proc.log_text()
