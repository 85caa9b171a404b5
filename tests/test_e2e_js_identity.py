"""End to end: the js engine presents one consistent browser identity (service.browser.identity).

A local target records the headers of every request in the order they came, and its page writes
what the browser says of itself in JavaScript (navigator, userAgentData, time zone, window) into
the DOM; both are read back through ``POST /scrape``, with the headless shell (the shared
service) and the full Chromium.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.service import ServiceProcess

pytestmark = pytest.mark.browser

FULL_CHROMIUM = "/usr/bin/chromium"

PAGE = b"""<!doctype html><html><head><title>Who</title><script src="/sub.js"></script></head>
<body><pre id="probe">waiting</pre><script>
(async () => {
  const data = navigator.userAgentData;
  const high = await data.getHighEntropyValues(["platform", "fullVersionList", "architecture"]);
  const said = {
    userAgent: navigator.userAgent, platform: navigator.platform, webdriver: navigator.webdriver,
    languages: navigator.languages, brands: data.brands, mobile: data.mobile,
    uaPlatform: high.platform, fullVersionList: high.fullVersionList,
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    intlLocale: Intl.DateTimeFormat().resolvedOptions().locale,
    inner: [innerWidth, innerHeight], outer: [outerWidth, outerHeight],
    screen: [screen.width, screen.height],
    notification: Notification.permission,
    permission: (await navigator.permissions.query({name: "notifications"})).state,
  };
  document.getElementById("probe").textContent = JSON.stringify(said);
})();
</script></body></html>"""

# The headers of a top-level navigation, in the order Chrome sends them (the full Chromium's
# own, unautomated; Accept-Language last, added by its network stack)
NAVIGATION_ORDER = [
    "host",
    "connection",
    "sec-ch-ua",
    "sec-ch-ua-mobile",
    "sec-ch-ua-platform",
    "upgrade-insecure-requests",
    "user-agent",
    "accept",
    "sec-fetch-site",
    "sec-fetch-mode",
    "sec-fetch-user",
    "sec-fetch-dest",
    "accept-encoding",
    "accept-language",
]


class Echo:
    """The target: records each request's headers (in order) by path."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[str, str]]] = {}
        echo = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                echo.seen[path] = list(self.headers.items())
                if path == "/sub.js":
                    body, kind = b"window.loadedSub = true;", "text/javascript"
                elif path in ("/", "/page"):
                    body, kind = PAGE, "text/html"
                else:
                    body, kind = b"", "text/plain"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def headers(self, path: str) -> dict[str, str]:
        return {name.lower(): value for name, value in self.seen[path]}

    def names(self, path: str) -> list[str]:
        return [name.lower() for name, _ in self.seen[path]]


@pytest.fixture(scope="module")
def echo() -> Iterator[Echo]:
    made = Echo()
    yield made
    made.server.shutdown()


@pytest.fixture(scope="module")
def full_chromium(database_url: str, tmp_path_factory: pytest.TempPathFactory):
    if not Path(FULL_CHROMIUM).exists():
        pytest.skip("no full Chromium")
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("full"),
        env={"SCRAPESPY_CHROMIUM_PATH": FULL_CHROMIUM},
    ).start()
    yield proc
    proc.stop()


@pytest.fixture(params=["shell", "full"])
def browser_service(request: pytest.FixtureRequest, service: ServiceProcess) -> ServiceProcess:
    return service if request.param == "shell" else request.getfixturevalue("full_chromium")


def said(reply: Any) -> dict[str, Any]:
    assert reply.json["success"], reply.json
    found = re.search(r'<pre id="probe">(.*?)</pre>', reply.json["raw_html"], re.S)
    assert found and found.group(1) != "waiting", reply.json["raw_html"][:500]
    return json.loads(found.group(1).replace("&amp;", "&"))


def sec_ch_ua(brands: list[dict[str, str]]) -> str:
    return ", ".join(f'"{b["brand"]}";v="{b["version"]}"' for b in brands)


def scrape(proc: ServiceProcess, key: str, echo: Echo, **more: Any) -> Any:
    body = {"url": echo.url("/page"), "engine": "js", "formats": ["raw_html"], **more}
    return proc.scrape(key, body)


def test_the_headers_and_the_javascript_tell_one_desktop_chrome(browser_service, echo, accounts):
    _, key = accounts.create(credits=50)
    js = said(scrape(browser_service, key, echo))
    sent = echo.headers("/page")

    # the user agent: the real version, reduced as Chrome sends it, no Headless anywhere
    agent = sent["user-agent"]
    assert agent == js["userAgent"]
    assert "Headless" not in agent and "scrapespy" not in agent
    major = js["fullVersionList"][-1]["version"].split(".")[0]
    assert f"Chrome/{major}.0.0.0 Safari/537.36" in agent and "X11; Linux x86_64" in agent
    # client hints: the same brands in the headers and in userAgentData, Chromium's, no Headless
    assert sent["sec-ch-ua"] == sec_ch_ua(js["brands"])
    assert "Headless" not in json.dumps(js["brands"]) + json.dumps(js["fullVersionList"])
    assert {"brand": "Chromium", "version": major} in js["brands"]
    assert sent["sec-ch-ua-platform"] == '"Linux"' == f'"{js["uaPlatform"]}"'
    assert sent["sec-ch-ua-mobile"] == "?0" and js["mobile"] is False
    assert js["platform"] == "Linux x86_64"
    # languages: the default visitor's, the same in the header, the navigator and Intl
    assert sent["accept-language"] == "en-US,en;q=0.9"
    assert js["languages"] == ["en-US", "en"] and js["intlLocale"] == "en-US"
    assert js["timeZone"] == "America/New_York"
    # Chrome's own headers, in its order: none of Scrapy's
    assert sent["accept"].startswith("text/html,application/xhtml+xml,application/xml;q=0.9")
    assert sent["upgrade-insecure-requests"] == "1" and sent["sec-fetch-user"] == "?1"
    # (the egress guard closes a plain-HTTP connection after one exchange: its Connection
    # header comes last, as "close"; through an HTTPS tunnel the browser's go untouched. Its
    # header; the emulated languages go out right after User-Agent, not last: docs/stealth.md)
    order = [name for name in NAVIGATION_ORDER if name not in ("connection", "accept-language")]
    assert [name for name in echo.names("/page") if name in order] == [
        name for name in order if name in sent
    ]
    # the cache as a browser's: nothing asks the target to skip it (an intercepted page does)
    sub = echo.headers("/sub.js")
    assert not {"pragma", "cache-control"} & (set(sent) | set(sub)), (sent, sub)
    # a sub-resource says the same
    assert sub["user-agent"] == agent and sub["sec-ch-ua"] == sent["sec-ch-ua"]
    assert sub["accept-language"] == "en-US,en;q=0.9" and sub["sec-fetch-dest"] == "script"
    # no automation flag; a window with a frame around the page, on a real screen size
    assert js["webdriver"] is False
    assert js["outer"][0] >= js["inner"][0] and js["outer"][1] > js["inner"][1]
    assert js["screen"] == [1366, 768] and js["inner"] == [1366, 654]
    # notifications: the permission and the query agree
    assert {"granted": "granted", "default": "prompt", "denied": "denied"}[
        js["notification"]
    ] == js["permission"]


def test_a_location_s_languages_are_the_browser_s_everywhere(browser_service, echo, accounts):
    _, key = accounts.create(credits=50)
    js = said(scrape(browser_service, key, echo, location={"languages": ["de-DE"]}))
    sent = echo.headers("/page")
    assert sent["accept-language"] == "de-DE,de;q=0.9"
    assert echo.headers("/sub.js")["accept-language"] == "de-DE,de;q=0.9"
    assert js["languages"] == ["de-DE", "de"] and js["intlLocale"] == "de-DE"
    assert "Headless" not in sent["user-agent"]


def test_the_caller_s_headers_are_added_to_the_browser_s(service, echo, accounts):
    _, key = accounts.create(credits=50)
    said(scrape(service, key, echo, headers={"X-Trace": "abc", "Authorization": "Bearer t"}))
    sent = echo.headers("/page")
    assert sent["x-trace"] == "abc" and sent["authorization"] == "Bearer t"
    assert "Headless" not in sent["user-agent"] and "sec-ch-ua" in sent


def test_a_session_presents_the_same_identity_on_every_call(service, echo, accounts):
    _, key = accounts.create(credits=50)
    first = said(scrape(service, key, echo, session="me", location={"languages": ["fr-FR"]}))
    first_agent = echo.headers("/page")["user-agent"]
    again = said(scrape(service, key, echo, session="me"))
    assert again["languages"] == first["languages"] == ["fr-FR", "fr"]
    assert again["timeZone"] == first["timeZone"]
    assert again["userAgent"] == first["userAgent"] == first_agent
    assert echo.headers("/page")["accept-language"] == "fr-FR,fr;q=0.9"


def test_an_auto_attempt_says_which_fingerprint_it_used(service, site, accounts):
    _, key = accounts.create(credits=50)
    reply = service.scrape(key, {"url": site.url("/js-only"), "engine": "auto"})
    assert reply.json["success"], reply.json
    attempts = reply.json["attempts"]
    assert attempts[0]["engine"] == "static" and attempts[0]["fingerprint"] == "scrapy"
    assert attempts[-1]["engine"] == "js"
    assert re.fullmatch(r"chrome-\d+-linux", attempts[-1]["fingerprint"])


def test_the_honest_identity_names_the_service(database_url, tmp_path, echo, accounts):
    proc = ServiceProcess(
        database_url, tmp_path, env={"SCRAPESPY_BROWSER_IDENTITY": "honest"}
    ).start()
    try:
        _, key = accounts.create(credits=50)
        js = said(scrape(proc, key, echo))
        sent = echo.headers("/page")
        assert "scrapespy" in sent["user-agent"] and sent["user-agent"] == js["userAgent"]
        assert echo.headers("/sub.js")["user-agent"] == sent["user-agent"]
    finally:
        proc.stop()


def test_a_phone_is_a_phone_everywhere(service, echo, accounts):
    _, key = accounts.create(credits=50)
    js = said(scrape(service, key, echo, device="mobile"))
    sent = echo.headers("/page")
    assert sent["user-agent"] == js["userAgent"] and "Mobile Safari" in sent["user-agent"]
    assert "Android" in sent["user-agent"] and "Headless" not in sent["user-agent"]
    assert sent["sec-ch-ua-mobile"] == "?1" and js["mobile"] is True
    assert sent["sec-ch-ua-platform"] == '"Android"' == f'"{js["uaPlatform"]}"'
    assert sent["sec-ch-ua"] == sec_ch_ua(js["brands"])
    # (its page has no viewport meta: a phone lays it out 980 px wide, as a real one does)
    assert js["screen"] == [412, 915]
