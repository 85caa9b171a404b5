"""wait_for, actions, device, cookies and headers in the js engine's download handler, in the
real Chromium, on real local pages.

The job puts ``scrapespy_wait_for``, ``scrapespy_actions``, ``scrapespy_device`` and
``scrapespy_cookies`` in the request's meta; here the requests carry them themselves.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from collections.abc import Iterator
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from scrapy.http import Request

from harness.site import TargetSite
from service.browser import handler as handler_module
from service.browser.actions import MAX_EVALUATE_BYTES, ActionFailed
from service.browser.failures import BrowserError
from service.browser.settle import PageWatch
from service.scrape import scrapy_settings
from tests.test_browser_screenshot import all_let_go, on_asyncio, png_size
from tests.test_browser_screenshot import rendering as screenshot_rendering

pytestmark = pytest.mark.browser

HTML = {"Content-Type": "text/html; charset=utf-8"}
SCRAPY_UA = "Mozilla/5.0 (compatible; scrapespy/0.1)"  # what UserAgentMiddleware sets

LOAD_MORE = """<!doctype html><html><head><title>Load more</title></head><body>
<ul id="items"><li>item 1</li><li>item 2</li></ul>
<button id="more">Load more</button>
<script>
document.getElementById("more").addEventListener("click", async () => {
  const items = await (await fetch("/act/more-items")).json();
  for (const text of items) {
    const li = document.createElement("li");
    li.textContent = text;
    document.getElementById("items").appendChild(li);
  }
});
</script></body></html>"""

SEARCH = """<!doctype html><html><head><title>Search</title></head><body>
<form action="/act/results" method="get"><input id="q" name="q"></form>
</body></html>"""

INFINITE = """<!doctype html><html><head><title>Infinite</title></head><body>
<div id="list"></div>
<script>
let next = 1, loading = false;
function add(n) {
  for (let i = 0; i < n; i++) {
    const div = document.createElement("div");
    div.className = "row"; div.id = "row-" + next; div.textContent = "row " + next++;
    div.style.height = "200px";
    document.getElementById("list").appendChild(div);
  }
}
add(10);
window.addEventListener("scroll", async () => {
  const root = document.scrollingElement;
  if (loading || root.scrollTop + innerHeight < root.scrollHeight - 50) return;
  loading = true;
  await fetch("/act/more-items");
  add(10);
  loading = false;
});
</script></body></html>"""

COOKIE_WALL = """<!doctype html><html><head><title>Cookie wall</title></head><body>
<div id="wall" style="position:fixed;inset:0;background:#fff">
  <p>We use cookies</p><button id="accept">Accept</button></div>
<main id="main"></main>
<script>
document.getElementById("accept").addEventListener("click", () => {
  document.getElementById("wall").remove();
  document.getElementById("main").innerHTML = "<p id='article'>the article itself</p>";
});
</script></body></html>"""

PHONES_ONLY = """<!doctype html><html><head><title>Phones</title>
<meta name="viewport" content="width=device-width"></head><body><p id="server">{server}</p>
<p id="client"></p>
<script>
const small = window.innerWidth < 500, touch = navigator.maxTouchPoints > 0;
document.getElementById("client").textContent =
  small && touch ? "phone layout " + window.devicePixelRatio : "desktop layout";
</script></body></html>"""

DIALOGS = """<!doctype html><html><head><title>Before</title></head><body><p id="log"></p>
<script>
alert("hello");
const answer = confirm("sure?");
const typed = prompt("name?");
document.getElementById("log").textContent = "confirm=" + answer + " prompt=" + typed;
document.title = "After the dialogs";
</script></body></html>"""

POPUP = """<!doctype html><html><head><title>Popup</title></head><body>
<a id="open" href="/act/popup-target" target="_blank">open</a></body></html>"""

MANY = """<!doctype html><html><head><title>Many</title></head><body>
<div style="height:1500px"></div>
<button class="expand" data-n="1">1</button><button class="expand" data-n="2">2</button>
<button class="expand" data-n="3" style="display:none">3</button>
<button class="expand" data-n="4">4</button>
<ul id="opened"></ul>
<button id="off" disabled>off</button>
<div style="position:relative"><button id="under">under</button>
  <div style="position:absolute;inset:0;background:#fff"></div></div>
<textarea id="notes">old notes</textarea><input id="name" value="old name">
<input id="when" type="date"><input id="box" type="checkbox">
<script>
for (const button of document.querySelectorAll(".expand")) {
  button.addEventListener("click", (e) => {
    const li = document.createElement("li");
    li.textContent = button.dataset.n + (e.isTrusted ? " trusted" : " synthetic");
    document.getElementById("opened").appendChild(li);
  });
}
</script></body></html>"""

DOWNLOAD_LINK = """<!doctype html><html><head><title>Downloads</title></head><body>
<a id="file" href="/act/file">file</a></body></html>"""


def echo(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """Prints the request's X-Caller header, its cookies and its User-Agent."""
    jar = SimpleCookie(handler.headers.get("Cookie") or "")
    cookies = ";".join(f"{name}={jar[name].value}" for name in sorted(jar))
    body = (
        "<html><head><title>Echo</title></head><body>"
        f"<p id='header'>{handler.headers.get('X-Caller', '')}</p>"
        f"<p id='cookies'>{cookies}</p>"
        f"<p id='ua'>{handler.headers.get('User-Agent', '')}</p></body></html>"
    )
    return 200, HTML, body.encode()


def results(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    query = parse_qs(urlsplit(handler.path).query).get("q", [""])[0]
    body = f"<html><head><title>Results</title></head><body><h1 id='found'>results for {query}"
    return 200, HTML, (body + "</h1></body></html>").encode()


def phones_only(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    phone = "Mobile" in (handler.headers.get("User-Agent") or "")
    server = "content for phones" if phone else "please use your phone"
    return 200, HTML, PHONES_ONLY.replace("{server}", server).encode()


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.page("/act/load-more", LOAD_MORE)
    site.page("/act/more-items", '["item 3", "item 4"]', **{"Content-Type": "application/json"})
    site.page("/act/search", SEARCH)
    site.routes["/act/results"] = results
    site.page("/act/infinite", INFINITE)
    site.page("/act/cookie-wall", COOKIE_WALL)
    site.routes["/act/phones-only"] = phones_only
    site.routes["/act/echo"] = echo
    site.page("/act/dialogs", DIALOGS)
    site.page("/act/popup", POPUP)
    site.page("/act/popup-target", "<html><title>popup target</title></html>")
    site.page("/act/many", MANY)
    site.page("/act/downloads", DOWNLOAD_LINK)
    # a download that is no document (a PDF is one: the documents' tests read it)
    site.page(
        "/act/file",
        b"PK\x03\x04 an archive",
        **{"Content-Type": "application/zip", "Content-Disposition": "attachment; name=a.zip"},
    )
    site.page("/act/secret", "<html><title>secret</title></html>")
    return site


def rendering(**settings: Any) -> Any:
    """The handler with the service's header hook, as service.scrape.scrapy_settings names it."""
    return screenshot_rendering(
        PLAYWRIGHT_PROCESS_REQUEST_HEADERS=scrapy_settings.PLAYWRIGHT_PROCESS_REQUEST_HEADERS,
        **settings,
    )


async def scrape(handler: Any, url: str, *, timeout: float = 60.0, **meta: Any) -> Any:
    # a success returns as soon as it is done: the long timeout only gives a loaded machine room
    request = Request(
        url, meta={"playwright": True, "scrapespy_deadline": time.monotonic() + timeout, **meta}
    )
    return request, await handler.download_request(request)


async def failing(handler: Any, url: str, *, timeout: float = 10.0, **meta: Any) -> Any:
    request = Request(
        url, meta={"playwright": True, "scrapespy_deadline": time.monotonic() + timeout, **meta}
    )
    with pytest.raises(ActionFailed) as failure:
        await handler.download_request(request)
    return request, str(failure.value)


def steps_given(monkeypatch: Any, seconds: float) -> None:
    """The steps get ``seconds`` from the moment they begin, whatever loading the page took: the
    request's deadline is set there (the steps' budget reads it as they go), while the render as
    a whole keeps the request's own, far longer, timeout. A test of what happens when a step runs
    out of time then races no page load on a busy machine."""
    run_actions = handler_module.run_actions

    async def run_with_seconds_left(page: Any, meta: dict[str, Any], **kwargs: Any) -> None:
        meta["scrapespy_deadline"] = time.monotonic() + seconds + handler_module.READ_RESERVE
        await run_actions(page, meta, **kwargs)

    monkeypatch.setattr(handler_module, "run_actions", run_with_seconds_left)


# ---------------------------------------------------------------------------------------------
# What a user asks for arrives


@on_asyncio
async def test_load_more_clicked_then_waited_for(pages):
    async with rendering() as handler:
        request, response = await scrape(
            handler,
            pages.url("/act/load-more"),
            scrapespy_actions=[
                {"type": "click", "selector": "#more", "all": False},
                {"type": "wait_for", "selector": "li:nth-child(4)"},
            ],
        )
    assert response.css("#items li::text").getall() == ["item 1", "item 2", "item 3", "item 4"]
    outcomes = request.meta["scrapespy_action_outcomes"]
    assert [(o["index"], o["type"], o["ok"]) for o in outcomes] == [
        (0, "click", True),
        (1, "wait_for", True),
    ]
    assert all(isinstance(o["elapsed_ms"], int) and "error" not in o for o in outcomes)
    assert request.meta["scrapespy_action_results"] == []


@on_asyncio
async def test_a_click_that_fetches_is_waited_for_without_a_wait_step(pages):
    async with rendering() as handler:
        _, response = await scrape(
            handler,
            pages.url("/act/load-more"),
            scrapespy_actions=[{"type": "click", "selector": "#more", "all": False}],
        )
    assert response.css("#items li::text").getall()[-1] == "item 4"


class LateWatch(PageWatch):
    """Hears of the requests the steps make 0.3 s late, as a busy machine may: the browser
    reports a routed request when its route has it, which can be after the page went on."""

    def __init__(self, *args: Any) -> None:
        self.late: set[str] = set()  # the ids of the requests heard late
        super().__init__(*args)

    def _delay(self, event: dict[str, Any]) -> float:
        url = (event.get("request") or {}).get("url", "")
        if "/act/more-items" in url or "/act/results" in url:
            self.late.add(event["requestId"])
        return 0.3 if event["requestId"] in self.late else 0.0

    def _began(self, event: dict[str, Any]) -> None:
        asyncio.get_running_loop().call_later(self._delay(event), super()._began, event)

    def _ended(self, event: dict[str, Any]) -> None:
        asyncio.get_running_loop().call_later(self._delay(event), super()._ended, event)


async def scrape_heard_late(monkeypatch: Any, url: str, steps: list[dict[str, Any]]) -> Any:
    """The page at ``url`` after ``steps``, the requests they make reported late."""
    monkeypatch.setattr(handler_module, "PageWatch", LateWatch)
    async with rendering() as handler:
        _, response = await scrape(handler, url, scrapespy_actions=steps)
    return response


@on_asyncio
async def test_a_click_whose_fetch_is_reported_late_is_still_waited_for(pages, monkeypatch):
    click = [{"type": "click", "selector": "#more", "all": False}]
    response = await scrape_heard_late(monkeypatch, pages.url("/act/load-more"), click)
    assert response.css("#items li::text").getall() == [f"item {n}" for n in range(1, 5)]


@on_asyncio
async def test_a_form_whose_navigation_is_reported_late_is_still_followed(pages, monkeypatch):
    search = [
        {"type": "type", "selector": "#q", "text": "red hats"},
        {"type": "press", "key": "Enter"},
    ]
    response = await scrape_heard_late(monkeypatch, pages.url("/act/search"), search)
    assert response.css("#found::text").get() == "results for red hats"


@on_asyncio
async def test_a_search_form_typed_into_and_submitted_with_enter(pages):
    async with rendering() as handler:
        _, response = await scrape(
            handler,
            pages.url("/act/search"),
            scrapespy_actions=[
                {"type": "type", "selector": "#q", "text": "blue shoes"},
                {"type": "press", "key": "Enter"},
            ],
        )
    assert response.css("#found::text").get() == "results for blue shoes"


@on_asyncio
async def test_an_infinite_list_scrolled_to_the_bottom_loads_more(pages):
    async with rendering() as handler:
        _, plain = await scrape(handler, pages.url("/act/infinite"))
        _, response = await scrape(
            handler,
            pages.url("/act/infinite"),
            scrapespy_actions=[
                {"type": "scroll", "to": "bottom"},
                {"type": "wait_for", "selector": "#row-20"},
                {"type": "scroll", "direction": "up", "amount": 300},
            ],
        )
    assert len(plain.css(".row")) == 10
    assert len(response.css(".row")) == 20


@on_asyncio
async def test_a_cookie_wall_accepted_shows_the_content(pages):
    async with rendering() as handler:
        _, walled = await scrape(handler, pages.url("/act/cookie-wall"))
        _, response = await scrape(
            handler,
            pages.url("/act/cookie-wall"),
            scrapespy_wait_for={"selector": "#accept"},
            scrapespy_actions=[{"type": "click", "selector": "#accept", "all": True}],
        )
    assert walled.css("#article").get() is None
    assert response.css("#article::text").get() == "the article itself"
    assert response.css("#wall").get() is None


@on_asyncio
async def test_a_page_for_phones_only_shows_its_content_to_the_mobile_device(pages):
    async with rendering(USER_AGENT=SCRAPY_UA) as handler:
        _, desktop = await scrape(handler, pages.url("/act/phones-only"))
        _, phone = await scrape(handler, pages.url("/act/phones-only"), scrapespy_device="mobile")
        # Scrapy's own User-Agent gives way to the phone's; a caller's does not
        request = Request(
            pages.url("/act/echo"),
            headers={"User-Agent": SCRAPY_UA},
            meta={
                "playwright": True,
                "scrapespy_deadline": time.monotonic() + 10,
                "scrapespy_device": "mobile",
            },
        )
        default_ua = await handler.download_request(request)
        _, callers = await scrape(handler, pages.url("/act/echo"), scrapespy_device="mobile")
        caller_request = Request(
            pages.url("/act/echo"),
            headers={"User-Agent": "my-agent/1.0"},
            meta={
                "playwright": True,
                "scrapespy_deadline": time.monotonic() + 10,
                "scrapespy_device": "mobile",
            },
        )
        caller_ua = await handler.download_request(caller_request)
    assert desktop.css("#server::text").get() == "please use your phone"
    assert desktop.css("#client::text").get() == "desktop layout"
    assert phone.css("#server::text").get() == "content for phones"
    assert phone.css("#client::text").get() == "phone layout 2.625"
    assert "Mobile" in default_ua.css("#ua::text").get()
    assert "Mobile" in callers.css("#ua::text").get()
    assert caller_ua.css("#ua::text").get() == "my-agent/1.0"


@on_asyncio
async def test_a_callers_header_and_cookies_reach_the_server(pages):
    async with rendering() as handler:
        request = Request(
            pages.url("/act/echo"),
            headers={"X-Caller": "from the caller"},
            meta={
                "playwright": True,
                "scrapespy_deadline": time.monotonic() + 10,
                "scrapespy_cookies": [
                    {"name": "session", "value": "abc"},
                    {"name": "pref", "value": "dark", "domain": "127.0.0.1", "path": "/act"},
                    {"name": "elsewhere", "value": "no", "path": "/other"},
                ],
            },
        )
        response = await handler.download_request(request)
        _, next_one = await scrape(handler, pages.url("/act/echo"))
        with pytest.raises(BrowserError, match="the browser refused the cookies"):
            await scrape(
                handler, pages.url("/act/echo"), scrapespy_cookies=[{"name": "a;b", "value": "x"}]
            )
    assert response.css("#header::text").get() == "from the caller"
    assert response.css("#cookies::text").get() == "pref=dark;session=abc"
    # nothing of it carries over to the next request
    assert next_one.css("#header::text").get() is None
    assert next_one.css("#cookies::text").get() is None


@on_asyncio
async def test_a_callers_headers_stay_on_the_targets_own_navigations(pages):
    seen: list[tuple[str, str, str]] = []

    def record(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        host = (handler.headers.get("Host") or "").split(":")[0]
        seen.append((host, urlsplit(handler.path).path, handler.headers.get("X-Caller", "")))
        return 200, HTML, b"<html><title>seen</title><p>seen</p></html>"

    port = pages.port
    pages.routes["/act/seen"] = record
    pages.routes["/act/seen-image"] = record
    pages.page(
        "/act/framed",
        f"""<html><head><title>Framed</title></head><body>
        <img src="/act/seen-image"><iframe src="http://localhost:{port}/act/seen"></iframe>
        <a id="away" href="http://localhost:{port}/act/seen">away</a></body></html>""",
    )
    async with rendering() as handler:
        request = Request(
            pages.url("/act/framed"),
            headers={"X-Caller": "secret"},
            meta={
                "playwright": True,
                "scrapespy_deadline": time.monotonic() + 10,
                "scrapespy_actions": [{"type": "click", "selector": "#away", "all": False}],
            },
        )
        response = await handler.download_request(request)
    assert response.css("title::text").get() == "seen"  # the click went to the other host
    assert sorted(seen) == [
        ("127.0.0.1", "/act/seen-image", ""),
        ("localhost", "/act/seen", ""),
        ("localhost", "/act/seen", ""),
    ]


@on_asyncio
async def test_screenshot_and_evaluate_steps_produce_results(pages):
    async with rendering() as handler:
        request, _ = await scrape(
            handler,
            pages.url("/act/load-more"),
            scrapespy_actions=[
                {"type": "evaluate", "script": "document.title"},
                {"type": "screenshot", "full_page": False},
                {"type": "evaluate", "script": "async () => { const n = 2; return {n: n * 2}; }"},
                {"type": "evaluate", "script": "undefined"},
                {"type": "evaluate", "script": "[...document.querySelectorAll('li')].length"},
            ],
        )
    results = request.meta["scrapespy_action_results"]
    assert [(r["index"], r["type"]) for r in results] == [
        (0, "evaluate"),
        (1, "screenshot"),
        (2, "evaluate"),
        (3, "evaluate"),
        (4, "evaluate"),
    ]
    assert results[0]["value"] == "Load more"
    assert png_size(base64.b64decode(results[1]["screenshot"])) == (1366, 654)
    assert results[2]["value"] == {"n": 4}
    assert results[3]["value"] is None
    assert results[4]["value"] == 2


@on_asyncio
async def test_click_all_clicks_every_visible_match_and_fields_are_replaced(pages):
    async with rendering() as handler:
        _, response = await scrape(
            handler,
            pages.url("/act/many"),
            scrapespy_actions=[
                {"type": "click", "selector": ".expand", "all": True},
                {"type": "type", "selector": "#notes", "text": "new notes"},
                {"type": "type", "selector": "#name", "text": ""},
                {"type": "type", "selector": "#when", "text": "2024-05-06"},
                {
                    "type": "evaluate",
                    "script": "() => { for (const id of ['notes', 'name', 'when'])"
                    " document.getElementById(id).setAttribute('data-v',"
                    " document.getElementById(id).value); }",
                },
            ],
        )
    # real (trusted) clicks, on the matches scrolled to, the hidden one left alone
    assert response.css("#opened li::text").getall() == ["1 trusted", "2 trusted", "4 trusted"]
    assert response.css("#notes::attr(data-v)").get() == "new notes"
    assert response.css("#name::attr(data-v)").get() == ""
    assert response.css("#when::attr(data-v)").get() == "2024-05-06"


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            {"type": "click", "selector": "#under", "all": False},
            '"#under" could not be clicked within the timeout: another element covers it',
        ),
        (
            {"type": "click", "selector": "#off", "all": False},
            '"#off" could not be clicked within the timeout: it stayed disabled',
        ),
        (
            {"type": "type", "selector": "#box", "text": "x"},
            '"#box" is an input of type checkbox, which cannot be filled',
        ),
        (
            {"type": "type", "selector": "#under", "text": "x"},
            '"#under" is not an input, a textarea or editable content',
        ),
        (
            {"type": "wait_for", "selector": "p[["},
            '"p[[" is not a valid CSS selector',
        ),
    ],
)
@on_asyncio
async def test_what_cannot_be_clicked_or_filled_is_said(pages, monkeypatch, step, message):
    # the step's 1.5 s begin with the steps: a slow launch or load on a busy machine takes none
    steps_given(monkeypatch, 1.5)
    async with rendering() as handler:
        _, said = await failing(
            handler, pages.url("/act/many"), timeout=60, scrapespy_actions=[step]
        )
    assert said == f"action 0 ({step['type']}) failed: {message}"


# ---------------------------------------------------------------------------------------------
# A failed step is named


@on_asyncio
async def test_a_missing_selector_fails_its_step_by_index_and_type(pages):
    async with rendering() as handler:
        await scrape(handler, pages.url("/act/load-more"))  # the browser is up
        request, message = await failing(
            handler,
            pages.url("/act/load-more"),
            timeout=8,
            scrapespy_actions=[
                {"type": "scroll", "direction": "down", "amount": 100},
                {"type": "click", "selector": "#nope", "all": False},
                {"type": "press", "key": "Enter"},
            ],
        )
        failed_at = time.monotonic()
    assert message == 'action 1 (click) failed: no element matches "#nope" within the timeout'
    outcomes = request.meta["scrapespy_action_outcomes"]
    assert [(o["index"], o["type"], o["ok"]) for o in outcomes] == [
        (0, "scroll", True),
        (1, "click", False),
    ]
    assert outcomes[1]["error"] == 'no element matches "#nope" within the timeout'
    # the click waited for what was left of the 8 s (less the time kept for reading the page),
    # not for a shorter time of its own; how much that was depends on how fast the page loaded
    assert failed_at >= request.meta["scrapespy_deadline"] - handler_module.READ_RESERVE
    assert 0 < outcomes[1]["elapsed_ms"] <= 8000


@on_asyncio
async def test_a_throwing_script_fails_with_its_error(pages):
    async with rendering() as handler:
        request, message = await failing(
            handler,
            pages.url("/act/load-more"),
            scrapespy_actions=[
                {"type": "wait", "ms": 10},
                {"type": "evaluate", "script": "x.y"},
            ],
        )
    assert message == (
        "action 1 (evaluate) failed: the script threw: ReferenceError: x is not defined"
    )
    assert [o["ok"] for o in request.meta["scrapespy_action_outcomes"]] == [True, False]


@on_asyncio
async def test_a_step_that_runs_out_of_time_is_named_not_a_timeout(pages, monkeypatch):
    # The steps (and the wait_for) get 1.5 s from the moment they begin; the request's own 60 s
    # would have ended the render as a timeout of the page had a step not been cut in time.
    steps_given(monkeypatch, 1.5)
    async with rendering() as handler:
        _, message = await failing(
            handler,
            pages.url("/act/load-more"),
            timeout=60,
            scrapespy_actions=[{"type": "evaluate", "script": "new Promise(() => {})"}],
        )
        _, late = await failing(
            handler,
            pages.url("/act/load-more"),
            timeout=60,
            scrapespy_actions=[{"type": "wait_for", "selector": "#never"}],
        )
        _, sleepy = await failing(
            handler,
            pages.url("/act/load-more"),
            timeout=60,
            scrapespy_actions=[{"type": "wait", "ms": 5000}],
        )
        _, top = await failing(
            handler,
            pages.url("/act/load-more"),
            timeout=60,
            scrapespy_wait_for={"selector": "#prices"},
        )
        monkeypatch.undo()  # the request's own 10 s again
        _, big = await failing(
            handler,
            pages.url("/act/load-more"),
            scrapespy_actions=[{"type": "evaluate", "script": f"'x'.repeat({MAX_EVALUATE_BYTES})"}],
        )
        await all_let_go(handler)
        assert handler.browser.contexts == []
    assert message == (
        "action 0 (evaluate) failed: the step's time ran out (the request's timeout)"
    )
    assert late == 'action 0 (wait_for) failed: "#never" did not appear within the timeout'
    assert sleepy.startswith("action 0 (wait) failed: 5000 ms is more than the time left")
    assert top == 'wait_for failed: "#prices" did not become visible within the timeout'
    assert big.startswith("action 0 (evaluate) failed: the script's value is larger than")
    assert isinstance(ActionFailed("x"), BrowserError)


@on_asyncio
async def test_a_top_level_wait_for_in_ms_waits(pages):
    async with rendering() as handler:
        started = time.monotonic()
        _, response = await scrape(
            handler, pages.url("/act/load-more"), scrapespy_wait_for={"ms": 700}
        )
        assert time.monotonic() - started >= 0.7
    assert response.css("title::text").get() == "Load more"


# ---------------------------------------------------------------------------------------------
# Safety, in every js context


@on_asyncio
async def test_dialogs_are_dismissed_and_do_not_hang_the_page(pages):
    async with rendering() as handler:
        # a dialog left open would hold the page's script, and the title, until the timeout
        _, response = await scrape(handler, pages.url("/act/dialogs"), timeout=30)
    assert response.css("title::text").get() == "After the dialogs"
    assert response.css("#log::text").get() == "confirm=false prompt=null"


@on_asyncio
async def test_popups_are_closed_and_a_download_is_read_only_as_the_address(pages):
    opened = """async () => {
      const popup = window.open("/act/popup-target");
      for (let i = 0; i < 50 && !popup.closed; i++) await new Promise((r) => setTimeout(r, 20));
      return popup.closed;
    }"""
    async with rendering() as handler:
        request, response = await scrape(
            handler,
            pages.url("/act/popup"),
            scrapespy_actions=[
                {"type": "click", "selector": "#open", "all": False},
                {"type": "evaluate", "script": opened},
            ],
        )
        _, downloads = await scrape(
            handler,
            pages.url("/act/downloads"),
            scrapespy_actions=[
                {"type": "click", "selector": "#file", "all": False},
                {"type": "wait", "ms": 300},
            ],
        )
        # a click's download is not kept; the address itself is read as the file it is
        _, archive = await scrape(handler, pages.url("/act/file"))
    assert response.css("title::text").get() == "Popup"
    assert request.meta["scrapespy_action_results"][0]["value"] is True
    assert downloads.css("title::text").get() == "Downloads"
    assert archive.body == b"PK\x03\x04 an archive"


# A private address, as seen by a service that refuses them: the page is served from 127.0.0.2
# under the name page.test, which the handler alone is told to treat as public.
PAGE_ADDRESS = "127.0.0.2"


@pytest.fixture(scope="module")
def public_page() -> Iterator[ThreadingHTTPServer]:
    body = b"<html><head><title>Public</title></head><body><p>hello</p></body></html>"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer((PAGE_ADDRESS, 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@on_asyncio
async def test_a_script_that_fetches_a_private_address_gets_nothing(pages, public_page):
    secret = pages.url("/act/secret")
    script = f"""async () => {{
      try {{ const r = await fetch({secret!r}, {{mode: "no-cors"}}); return "got " + r.type; }}
      catch (e) {{ return "failed: " + e.message; }}
    }}"""
    before = pages.count("/act/secret")
    async with rendering(
        SCRAPESPY_ALLOW_PRIVATE_TARGETS=False,
        SCRAPESPY_EGRESS_TEST_PUBLIC_HOSTS=[f"page.test={PAGE_ADDRESS}"],
    ) as handler:
        request, response = await scrape(
            handler,
            f"http://page.test:{public_page.server_address[1]}/",
            scrapespy_actions=[{"type": "evaluate", "script": script}],
        )
        blocked = handler.stats.get_value("scrapespy/browser_egress/blocked")
    assert response.css("title::text").get() == "Public"
    (result,) = request.meta["scrapespy_action_results"]
    # an opaque answer is all no-cors could ever give; what matters is that nothing got there
    assert result["value"].startswith(("failed", "got opaque"))
    assert pages.count("/act/secret") == before
    assert blocked and blocked >= 1


@on_asyncio
async def test_two_requests_share_no_cookies_or_storage(pages):
    async with rendering() as handler:
        first, _ = await scrape(
            handler,
            pages.url("/act/echo"),
            scrapespy_actions=[
                {
                    "type": "evaluate",
                    "script": "() => { document.cookie = 'mine=1; path=/';"
                    " localStorage.setItem('k', 'v'); return document.cookie; }",
                }
            ],
        )
        second, response = await scrape(
            handler,
            pages.url("/act/echo"),
            scrapespy_actions=[
                {"type": "evaluate", "script": "[document.cookie, localStorage.getItem('k')]"}
            ],
        )
    assert first.meta["scrapespy_action_results"][0]["value"] == "mine=1"
    assert second.meta["scrapespy_action_results"][0]["value"] == ["", None]
    assert response.css("#cookies::text").get() is None
