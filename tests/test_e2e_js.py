"""End to end for ``engine: "js"``: the real service, the real Chromium, real local servers.

Most tests use the shared service (private targets allowed, as in every end-to-end test). The
egress tests start one more service with private targets refused; its test page is served from
127.0.0.2 under the name ``page.test``, which that service alone is told to treat as public
(``SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS``, test only). A canary on 127.0.0.1 counts every TCP
connection it gets: anything the browser reached on loopback shows there.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from harness.service import Accounts, ServiceProcess
from harness.site import JS_ONLY, TargetSite
from service.egress.addresses import BLOCKED_MESSAGE

pytestmark = [pytest.mark.browser, pytest.mark.engine]

JS_PRICE, STATIC_PRICE = 5, 1


def balance(accounts: Accounts, account_id: int) -> tuple[int, int]:
    summary = accounts.summary(account_id)
    return summary["balance"], summary["held"]


def browser_processes(pid: int) -> list[int]:
    """Main Chromium processes (not its helpers) among the descendants of ``pid``."""
    children: dict[int, list[int]] = {}
    commands: dict[int, list[bytes]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                parent = int(fh.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                # split on spaces too: Chromium's helpers rewrite their argv into one string
                commands[int(entry)] = fh.read().replace(b"\0", b" ").split()
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            argv = commands.get(child) or [b""]
            browser = argv[0].endswith((b"/chromium", b"/chromium-headless-shell"))
            if browser and not any(a.startswith(b"--type=") for a in argv):
                found.append(child)
    return found


# ---------------------------------------------------------------------------------------------
# The shared service (private targets allowed)

DATA_LATER = """<!doctype html><html><head><title>Data later</title></head><body>
<ul id="items"></ul>
<script>
window.addEventListener("load", () => setTimeout(() =>
  fetch("/js/data.json").then(r => r.json()).then(items => {
    for (const item of items) {
      const li = document.createElement("li");
      li.textContent = item;
      document.getElementById("items").appendChild(li);
    }
  }), 30));
</script></body></html>"""

STATE_WRITER = """<html><head><title>writer</title></head><body><script>
document.cookie = "who=first; path=/";
localStorage.setItem("who", "first");
</script></body></html>"""

STATE_READER = """<html><head><title>reader</title></head><body><p id="state"></p><script>
document.getElementById("state").textContent =
  "cookie=[" + document.cookie + "] storage=[" + (localStorage.getItem("who") || "") + "]";
</script></body></html>"""

# A page that breaks the DOM methods the service reads the rendered HTML with in the page's own
# world; the service then falls back to Playwright's reading, from a world of its own.
BROKEN_SERIALIZER = """<!doctype html><html><head><title>Broken serializer</title></head><body>
<h1>Still read</h1><script>
Object.defineProperty(Element.prototype, "outerHTML", {get() { throw new Error("no"); }});
document.body.insertAdjacentHTML("beforeend", "<p class='late'>written by script</p>");
</script></body></html>"""

HANGING_FETCH = """<html><head><title>Hanging fetch</title></head><body>
<h1>Ready</h1><script>fetch("/slow");</script></body></html>"""


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.page("/js/data-later", DATA_LATER)

    def data(_h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        time.sleep(0.3)
        return 200, {"Content-Type": "application/json"}, b'["first item", "second item"]'

    site.routes["/js/data.json"] = data
    site.page("/js/write-state", STATE_WRITER, **{"Set-Cookie": "server=first; Path=/"})
    site.page("/js/read-state", STATE_READER)
    site.page("/js/hanging-fetch", HANGING_FETCH)
    site.page("/js/broken-serializer", BROKEN_SERIALIZER)
    site.page(
        "/js/challenge",
        "<html><head><title>Just a moment...</title></head><body>Checking</body></html>",
        status=403,
        **{"cf-mitigated": "challenge"},
    )
    return site


@pytest.fixture
def paying(accounts: Accounts) -> tuple[int, str]:
    return accounts.create(credits=100)


def test_client_side_content_is_empty_with_static_and_complete_with_js(
    service, pages, accounts, paying
):
    account_id, key = paying
    body = {"url": pages.url("/js-only"), "selectors": {"made": "p.made::text"}}
    static = service.scrape(key, body).json
    assert static["success"] is True and static["engine"] == "static"
    assert static["title"] == "Loading"
    assert static["headings"] == {} and static["extracted"] == {"made": []}
    assert balance(accounts, account_id) == (100 - STATIC_PRICE, 0)

    js = service.scrape(key, {**body, "engine": "js"}).json
    assert js["success"] is True and js["error"] is None and js["blocked"] is False
    assert js["engine"] == "js" and js["proxy_used"] is False
    assert js["status_code"] == 200 and js["final_url"] == pages.url("/js-only")
    assert js["title"] == "Rendered by JS"
    assert js["headings"] == {"h1": ["Client side"]}
    assert js["links"] == [{"text": "after", "href": pages.url("/after")}]
    assert "made by javascript" in js["text"]
    assert "document.title" not in js["text"]
    assert js["extracted"] == {"made": ["made by javascript"]}
    assert balance(accounts, account_id) == (100 - STATIC_PRICE - JS_PRICE, 0)
    assert accounts.entries_sum(account_id) == 100 - STATIC_PRICE - JS_PRICE


def test_js_markdown_and_raw_html_are_of_the_rendered_page(service, pages, accounts, paying):
    account_id, key = paying
    body = {"url": pages.url("/js-only"), "formats": ["markdown", "raw_html"]}
    static = service.scrape(key, body).json
    assert "made by javascript" not in static["markdown"]
    assert static["raw_html"] == JS_ONLY
    js = service.scrape(key, {**body, "engine": "js"}).json
    assert js["success"] is True
    assert "# Client side" in js["markdown"] and "made by javascript" in js["markdown"]
    assert f"[after]({pages.url('/after')})" in js["markdown"]
    assert "document.title" not in js["markdown"]
    assert '<p class="made">made by javascript</p>' in js["raw_html"]
    assert balance(accounts, account_id) == (100 - STATIC_PRICE - JS_PRICE, 0)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_a_screenshot_is_a_base64_png_of_the_viewport_or_the_page(service, pages, accounts, paying):
    account_id, key = paying
    body = {"url": pages.url("/js-only"), "engine": "js", "formats": ["screenshot"]}
    shot = service.scrape(key, body).json
    assert shot["success"] is True, shot["error"]
    assert "made by javascript" in shot["text"]
    assert png_size(base64.b64decode(shot["screenshot"])) == (1366, 654)
    assert "markdown" not in shot and "raw_html" not in shot
    tall = "<p style='height: 3000px'>top</p><p>bottom</p>"
    pages.page("/tall", f"<!doctype html><html><body style='margin:0'>{tall}</body></html>")
    whole = {"url": pages.url("/tall"), "engine": "js", "formats": ["screenshot"]}
    full = service.scrape(key, {**whole, "screenshot_full_page": True}).json
    width, height = png_size(base64.b64decode(full["screenshot"]))
    assert width == 1366 and height > 3000
    # the same js price as a scrape without a screenshot
    assert balance(accounts, account_id) == (100 - 2 * JS_PRICE, 0)


def test_js_reads_the_page_after_it_settled(service, pages, paying):
    _, key = paying
    body = {"url": pages.url("/js/data-later"), "engine": "js", "selectors": {"li": "li::text"}}
    result = service.scrape(key, body).json
    assert result["success"] is True
    assert result["extracted"] == {"li": ["first item", "second item"]}


def test_a_page_that_breaks_its_dom_methods_is_still_read_whole(service, pages, paying):
    _, key = paying
    body = {"url": pages.url("/js/broken-serializer"), "engine": "js", "selectors": {"p": "p.late"}}
    result = service.scrape(key, body).json
    assert result["success"] is True, result["error"]
    assert result["title"] == "Broken serializer"
    assert result["headings"] == {"h1": ["Still read"]}
    assert result["extracted"] == {"p": ["written by script"]}


def test_a_request_that_never_ends_does_not_hold_the_result_past_the_timeout(
    service, pages, paying
):
    _, key = paying
    started = time.monotonic()
    body = {"url": pages.url("/js/hanging-fetch"), "engine": "js", "timeout": 3}
    result = service.scrape(key, body).json
    took = time.monotonic() - started
    assert result["success"] is True and result["headings"] == {"h1": ["Ready"]}
    assert took < 3.5, took


def test_js_slow_page_times_out_unbilled(service, pages, accounts, paying):
    account_id, key = paying
    started = time.monotonic()
    result = service.scrape(key, {"url": pages.url("/slow"), "engine": "js", "timeout": 1}).json
    took = time.monotonic() - started
    assert result["success"] is False and result["status_code"] == 0
    assert result["error"] == "timed out after 1 s"
    assert took < 2.5, took
    assert balance(accounts, account_id) == (100, 0)


def test_js_obeys_robots_txt_and_bills_like_static(service, pages, accounts, paying):
    account_id, key = paying
    before = pages.count("/private/secret")
    url = pages.url("/private/secret")
    result = service.scrape(key, {"url": url, "engine": "js"}).json
    assert result["success"] is False
    assert result["error"] == "forbidden by the target's robots.txt"
    assert pages.count("/private/secret") == before
    assert balance(accounts, account_id) == (100, 0)

    result = service.scrape(key, {"url": url, "engine": "js", "respect_robots": False}).json
    assert result["success"] is True and result["title"] == "secret"
    assert pages.count("/private/secret") == before + 1
    assert balance(accounts, account_id) == (100 - JS_PRICE, 0)


def test_js_failures_and_blocks_are_not_billed(service, pages, accounts, paying):
    account_id, key = paying
    missing = service.scrape(key, {"url": pages.url("/status/404"), "engine": "js"}).json
    assert missing["success"] is False and missing["status_code"] == 404
    assert missing["title"] == "Gone" and "404" in missing["error"]

    challenge = service.scrape(key, {"url": pages.url("/js/challenge"), "engine": "js"}).json
    assert challenge["blocked"] is True and challenge["block_reason"] == "cloudflare"

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    refused = service.scrape(key, {"url": f"http://127.0.0.1:{port}/", "engine": "js"}).json
    assert refused["success"] is False and refused["status_code"] == 0
    assert refused["error"] == "the target refused the connection"

    redirected = service.scrape(key, {"url": pages.url("/redirect"), "engine": "js"}).json
    assert redirected["success"] is True and redirected["final_url"] == pages.url("/article")
    assert balance(accounts, account_id) == (100 - JS_PRICE, 0)


def test_an_unavailable_proxy_pool_falls_back_and_bills_the_direct_js_price(
    service, pages, accounts, paying
):
    account_id, key = paying
    body = {"url": pages.url("/js-only"), "engine": "js", "proxy_type": "datacenter"}
    result = service.scrape(key, body).json
    assert result["success"] is True and result["proxy_used"] is False
    assert balance(accounts, account_id) == (100 - JS_PRICE, 0)


def test_no_cookie_or_storage_crosses_from_one_request_to_the_next(service, pages, paying):
    _, key = paying
    written = service.scrape(key, {"url": pages.url("/js/write-state"), "engine": "js"}).json
    assert written["success"] is True
    read = service.scrape(
        key, {"url": pages.url("/js/read-state"), "engine": "js", "selectors": {"s": "#state"}}
    ).json
    assert read["extracted"] == {"s": ["cookie=[] storage=[]"]}


# ---------------------------------------------------------------------------------------------
# A service that refuses private targets, a test page on 127.0.0.2 and a canary on 127.0.0.1

PAGE_ADDRESS = "127.0.0.2"
HTML = {"Content-Type": "text/html; charset=utf-8"}

CANARY_PAGE = """<!doctype html><html><head><title>Canary page</title>
<link rel="stylesheet" href="http://127.0.0.1:{c}/style.css">
<script src="http://localhost:{c}/script.js"></script>
</head><body><h1>Guarded</h1>
<img src="http://127.0.0.1:{c}/pixel.png">
<iframe src="http://127.0.0.1:{c}/frame"></iframe>
<ul id="log"></ul>
<script>
function tried(what) {{
  const li = document.createElement("li");
  li.textContent = what + " tried";
  document.getElementById("log").appendChild(li);
}}
fetch("http://127.0.0.1:{c}/fetch", {{mode: "no-cors"}}).finally(() => tried("fetch"));
fetch("https://127.0.0.1:{c}/tls", {{mode: "no-cors"}}).finally(() => tried("tls"));
const xhr = new XMLHttpRequest();
xhr.open("GET", "http://[::ffff:7f00:1]:{c}/xhr");
xhr.onloadend = () => tried("xhr");
xhr.send();
const ws = new WebSocket("ws://127.0.0.1:{c}/ws");
ws.onclose = () => tried("websocket");
</script></body></html>"""


class Canary(socketserver.ThreadingTCPServer):
    """Counts every TCP connection on 127.0.0.1 and answers a bare 200."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.connections = 0
        canary = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                canary.connections += 1
                self.request.settimeout(2)
                try:
                    self.request.recv(65536)
                    self.request.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                    )
                except OSError:
                    pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


class UpstreamProxy(socketserver.ThreadingTCPServer):
    """An operator's plain-http forward proxy: knows page.test, records what it was asked."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.heads: list[bytes] = []
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = self.rfile.readline()
                    if not line:
                        return
                    head += line
                proxy.heads.append(head)
                method, target, version = head.split(b"\r\n", 1)[0].split(b" ")
                url = urlsplit(target.decode())
                lines = [
                    line
                    for line in head.split(b"\r\n")[1:]
                    if line and not line.lower().startswith((b"proxy-", b"connection"))
                ]
                path = (url.path or "/") + (f"?{url.query}" if url.query else "")
                with socket.create_connection((PAGE_ADDRESS, url.port or 80), timeout=5) as up:
                    request = b" ".join([method, path.encode(), version])
                    up.sendall(b"\r\n".join([request, *lines, b"Connection: close", b"", b""]))
                    while chunk := up.recv(65536):
                        self.wfile.write(chunk)

        super().__init__(("127.0.0.1", 0), Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture(scope="module")
def canary() -> Iterator[Canary]:
    server = Canary()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def upstream() -> Iterator[UpstreamProxy]:
    server = UpstreamProxy()
    yield server
    server.shutdown()
    server.server_close()


class PageSite(ThreadingHTTPServer):
    """The test pages of the guarded service, on 127.0.0.2 (``page.test`` to that service)."""

    daemon_threads = True

    def __init__(self, canary_port: int) -> None:
        routes: dict[str, tuple[int, dict[str, str], bytes]] = {
            "/canary": (200, HTML, CANARY_PAGE.format(c=canary_port).encode()),
            "/js-only": (200, HTML, JS_ONLY.encode()),
            "/to-canary": (302, {"Location": f"http://127.0.0.1:{canary_port}/landing"}, b""),
        }

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/slow":
                    time.sleep(3)
                status, headers, body = routes.get(self.path, (404, HTML, b"<h1>404</h1>"))
                try:
                    self.send_response(status)
                    for name, value in {**headers, "Content-Length": str(len(body))}.items():
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
def page_site(canary: Canary) -> Iterator[PageSite]:
    server = PageSite(canary.port)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def guarded(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, upstream: UpstreamProxy
) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(
        database_url,
        Path(tmp_path_factory.mktemp("js-guarded")),
        env={
            "SCRAPESPY_ALLOW_PRIVATE_TARGETS": "0",
            "SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS": f"page.test={PAGE_ADDRESS}",
            "SCRAPESPY_MAX_PAGES": "1",
            "SCRAPESPY_PROXIES_DATACENTER": f"http://scraper:s3cret@127.0.0.1:{upstream.port}",
        },
    ).start()
    yield proc
    proc.stop()


def test_browser_traffic_to_loopback_is_refused(guarded, page_site, canary, accounts):
    account_id, key = accounts.create(credits=100)
    body = {
        "url": page_site.url("/canary"),
        "engine": "js",
        "respect_robots": False,
        "selectors": {"log": "#log li::text"},
    }
    before = canary.connections
    result = guarded.scrape(key, body).json
    assert result["success"] is True, result["error"]
    assert result["title"] == "Canary page" and result["headings"] == {"h1": ["Guarded"]}
    # the page did try each way out (the canary below says none of them got there)
    assert sorted(result["extracted"]["log"]) == [
        "fetch tried",
        "tls tried",
        "websocket tried",
        "xhr tried",
    ]
    time.sleep(0.2)
    assert canary.connections == before
    assert balance(accounts, account_id) == (100 - JS_PRICE, 0)


@pytest.mark.parametrize("path_or_url", ["/to-canary", "http://localhost:{c}/"])
def test_navigating_to_loopback_is_refused_like_static(
    guarded, page_site, canary, accounts, path_or_url
):
    account_id, key = accounts.create(credits=100)
    url = path_or_url.format(c=canary.port)
    if url.startswith("/"):
        url = page_site.url(url)
    before = canary.connections
    body = {"url": url, "engine": "js", "respect_robots": False}
    result = guarded.scrape(key, body).json
    assert result["success"] is False
    assert result["error"] == BLOCKED_MESSAGE
    assert canary.connections == before
    assert balance(accounts, account_id) == (100, 0)


def test_a_timeout_frees_the_only_page_slot(guarded, page_site, accounts):
    _, key = accounts.create(credits=100)
    started = time.monotonic()
    body = {"url": page_site.url("/slow"), "engine": "js", "timeout": 1}
    slow = guarded.scrape(key, {**body, "respect_robots": False}).json
    assert slow["error"] == "timed out after 1 s"
    assert time.monotonic() - started < 2.5
    # SCRAPESPY_MAX_PAGES=1: had the context or its slot leaked, this would wait and time out
    body = {"url": page_site.url("/js-only"), "engine": "js", "timeout": 3}
    after = guarded.scrape(key, {**body, "respect_robots": False}).json
    assert after["success"] is True and after["title"] == "Rendered by JS"


def test_js_through_a_datacenter_proxy_bills_its_tier(guarded, page_site, upstream, accounts):
    account_id, key = accounts.create(credits=100)
    asked = len(upstream.heads)
    body = {
        "url": page_site.url("/js-only"),
        "engine": "js",
        "proxy_type": "datacenter",
        "respect_robots": False,
    }
    result = guarded.scrape(key, body).json
    assert result["success"] is True and result["title"] == "Rendered by JS"
    assert result["proxy_used"] is True
    assert balance(accounts, account_id) == (100 - 6, 0)
    head = upstream.heads[asked]
    assert head.startswith(f"GET {page_site.url('/js-only')} HTTP/1.1".encode())
    assert b"Proxy-Authorization: Basic c2NyYXBlcjpzM2NyZXQ=" in head  # scraper:s3cret


def test_one_browser_for_the_service_and_a_new_one_after_a_crash(guarded, page_site, accounts):
    _, key = accounts.create(credits=100)
    body = {"url": page_site.url("/js-only"), "engine": "js", "respect_robots": False}
    assert guarded.scrape(key, body).json["success"] is True
    assert guarded.process is not None
    (browser,) = browser_processes(guarded.process.pid)
    # Debian's headless shell, which make test installs, rather than the full browser
    with open(f"/proc/{browser}/cmdline", "rb") as fh:
        assert fh.read().split(b"\0")[0].endswith(b"/chromium-headless-shell")
    os.kill(browser, signal.SIGKILL)
    result = guarded.scrape(key, body).json
    assert result["success"] is True and result["title"] == "Rendered by JS", result["error"]
    (relaunched,) = browser_processes(guarded.process.pid)
    assert relaunched != browser


def test_without_a_browser_js_fails_fast_and_unbilled(
    database_url, tmp_path_factory, pages, accounts
):
    proc = ServiceProcess(
        database_url,
        Path(tmp_path_factory.mktemp("js-no-browser")),
        env={"SCRAPESPY_CHROMIUM_PATH": "/nonexistent/chromium"},
    ).start()
    try:
        account_id, key = accounts.create(credits=100)
        started = time.monotonic()
        result = proc.scrape(key, {"url": pages.url("/js-only"), "engine": "js"}).json
        assert result["success"] is False
        assert result["error"] == "the js engine's browser could not be started"
        assert time.monotonic() - started < 10
        assert proc.scrape(key, {"url": pages.url("/article")}).json["success"] is True
        assert balance(accounts, account_id) == (100 - STATIC_PRICE, 0)
    finally:
        proc.stop()


def test_control_the_canary_hears_the_page_where_private_targets_are_allowed(
    service, page_site, canary, paying
):
    """Without the guard's refusal the same page does reach the canary: the tests above can fail.

    Last in the module, so that late connections cannot land in another test's count.
    """
    _, key = paying
    before = canary.connections
    url = f"http://{PAGE_ADDRESS}:{page_site.port}/canary"
    result = service.scrape(key, {"url": url, "engine": "js", "respect_robots": False}).json
    assert result["success"] is True and result["title"] == "Canary page"
    assert canary.connections > before
