"""End to end: when the ``js`` engine reads a page that keeps changing after ``load``.

The real service and Chromium, pages served on 127.0.0.1. After ``load`` the page is read at
once unless it still has work under way: a request in flight, a short timer pending
(service.browser.settle), or a DOM that changed after the load event ended.
"""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

import pytest

from harness.service import Accounts
from harness.site import TargetSite

pytestmark = [pytest.mark.browser, pytest.mark.engine]

# Fills itself 50 ms and 300 ms after load, each from a timer the load listener set.
LATE_DOM = """<!doctype html><html><head><title>Late DOM</title></head><body>
<main><h1>Late DOM</h1><p>there from the start</p></main>
<script>
addEventListener("load", () => {
  const add = (id, text) => {
    const p = document.createElement("p");
    p.id = id;
    p.textContent = text;
    document.querySelector("main").append(p);
  };
  setTimeout(() => add("fifty", "added 50 ms after load"), 50);
  setTimeout(() => add("three-hundred", "added 300 ms after load"), 300);
});
</script></body></html>"""

# Fills itself 3 s after load: what a read right after load must not see, with room for a busy
# machine between the load event and the read.
LATER_DOM = LATE_DOM.replace('50 ms after load"), 50)', '3 s after load"), 3000)')

ON_LOAD = """<!doctype html><html><head><title>On load</title></head><body>
<article><h1>On load</h1><p>first paragraph</p></article>
<script>addEventListener("load", () => {
  const p = document.createElement("p");
  p.textContent = "inserted on load";
  document.querySelector("article").append(p);
});</script></body></html>"""

XHR_AFTER_LOAD = """<!doctype html><html><head><title>XHR</title></head><body>
<ul id="items"></ul>
<script>addEventListener("load", () => {
  const xhr = new XMLHttpRequest();
  xhr.open("GET", "/settle/items.json");
  xhr.onload = () => {
    for (const item of JSON.parse(xhr.responseText)) {
      const li = document.createElement("li");
      li.textContent = item;
      document.getElementById("items").append(li);
    }
  };
  xhr.send();
});</script></body></html>"""


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.page("/settle/late-dom", LATE_DOM)
    site.page("/settle/later-dom", LATER_DOM)
    site.page("/settle/on-load", ON_LOAD)
    site.page("/settle/xhr", XHR_AFTER_LOAD)

    def items(_h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        time.sleep(0.3)
        return 200, {"Content-Type": "application/json"}, b'["from the server", "and more"]'

    site.routes["/settle/items.json"] = items
    return site


@pytest.fixture
def key(accounts: Accounts) -> str:
    return accounts.create(credits=100)[1]


def scrape(service, key: str, url: str, **fields):  # type: ignore[no-untyped-def]
    result = service.scrape(key, {"url": url, "engine": "js", "formats": ["markdown"], **fields})
    assert result.status == 200, result.body
    body = result.json
    assert body["success"] is True, body["error"]
    return body


def test_a_paragraph_a_load_listener_inserts_is_read(service, pages, key):
    body = scrape(service, key, pages.url("/settle/on-load"))
    assert "inserted on load" in body["markdown"]
    assert "first paragraph" in body["markdown"]


def test_by_default_the_timers_a_page_set_on_load_have_run(service, pages, key):
    body = scrape(service, key, pages.url("/settle/late-dom"))
    assert "added 50 ms after load" in body["markdown"]
    assert "added 300 ms after load" in body["markdown"]


def test_wait_for_a_selector_reads_what_it_waited_for(service, pages, key):
    url = pages.url("/settle/late-dom")
    body = scrape(service, key, url, wait_for={"selector": "#three-hundred"})
    assert "added 300 ms after load" in body["markdown"]


def test_settle_ms_0_reads_the_page_right_after_load(service, pages, key):
    body = scrape(service, key, pages.url("/settle/later-dom"), settle_ms=0)
    assert "there from the start" in body["markdown"]
    assert "added 3 s after load" not in body["markdown"]
    on_load = scrape(service, key, pages.url("/settle/on-load"), settle_ms=0)
    assert "inserted on load" in on_load["markdown"]


def test_data_a_page_fetches_after_load_is_read(service, pages, key):
    body = scrape(service, key, pages.url("/settle/xhr"), selectors={"li": "li::text"})
    assert body["extracted"] == {"li": ["from the server", "and more"]}
