"""End to end: a page rendered by the ``js`` engine sees nothing of the service.

The real service and Chromium, a page served on 127.0.0.1 that looks for the service the way a
bot detector does: every own property of its ``window`` (names and symbols) that a fresh
iframe's window does not have, and every function on ``window``, ``Window.prototype``,
``EventTarget.prototype``, ``XMLHttpRequest.prototype``, ``navigator`` and
``Navigator.prototype`` (values, getters and setters) whose source text is not the browser's
own (``function name() { [native code] }``) or differs from the fresh window's. It writes what
it found when it loads, and each time a key is pressed (the probe): after the page settled and
after each kind of step (type, press, scroll, wait, wait_for, evaluate, screenshot, click and
click all). Every report must find nothing.
"""

from __future__ import annotations

import pytest

from harness.service import Accounts
from harness.site import TargetSite

pytestmark = [pytest.mark.browser, pytest.mark.engine]

# The page's own script is an IIFE: the page adds no global of its own to confuse the search.
LOOKOUT = """<!doctype html><html><head><title>Lookout</title></head><body>
<h1>Lookout</h1><button id="button">button</button><input id="field" value="">
<ol id="reports"></ol><div style="height: 3000px"></div><p id="bottom">bottom</p>
<script>(() => {
  const nativeText = (fn) => {
    const text = Function.prototype.toString.call(fn);
    return text === `function ${fn.name}() { [native code] }` ? null : text;
  };
  const search = () => {
    const found = [];
    const frame = document.createElement("iframe");
    document.body.append(frame);
    const fresh = frame.contentWindow;
    const known = new Set(Reflect.ownKeys(fresh));
    for (const key of Reflect.ownKeys(window)) {
      const frameIndex = typeof key === "string" && /^[0-9]+$/.test(key);  // window[0]: the iframe
      if (!known.has(key) && !frameIndex) found.push(`global ${String(key)}`);
    }
    const places = {
      window, "Window.prototype": Window.prototype, "EventTarget.prototype":
      EventTarget.prototype, "XMLHttpRequest.prototype": XMLHttpRequest.prototype,
      navigator, "Navigator.prototype": Navigator.prototype,
    };
    const freshPlaces = {
      window: fresh, "Window.prototype": fresh.Window.prototype, "EventTarget.prototype":
      fresh.EventTarget.prototype, "XMLHttpRequest.prototype": fresh.XMLHttpRequest.prototype,
      navigator: fresh.navigator, "Navigator.prototype": fresh.Navigator.prototype,
    };
    for (const [where, object] of Object.entries(places)) {
      for (const key of Reflect.ownKeys(object)) {
        const own = Object.getOwnPropertyDescriptor(object, key);
        const theirs = Object.getOwnPropertyDescriptor(freshPlaces[where], key) || {};
        for (const part of ["value", "get", "set"]) {
          const fn = own[part];
          if (typeof fn !== "function") continue;
          const text = Function.prototype.toString.call(fn);
          const freshFn = theirs[part];
          const differs = typeof freshFn === "function" &&
            Function.prototype.toString.call(freshFn) !== text;
          if (nativeText(fn) !== null || differs) {
            found.push(`${where}.${String(key)} (${part}): ${text.slice(0, 40)}`);
          }
        }
      }
    }
    frame.remove();
    return found;
  };
  let probes = 0;
  const report = (label) => {
    const found = search();
    const li = document.createElement("li");
    li.textContent = `${label}: ${found.length ? found.join("; ") : "nothing"}`;
    document.getElementById("reports").append(li);
  };
  addEventListener("load", () => report("load"));
  document.addEventListener("keydown", (event) => {
    if (event.key === "F2") report(`probe ${++probes}`);
  });
})();</script></body></html>"""

# a key the page listens for: it reports what it finds (quick clicks on one button as the probe
# went unheard, a few in eleven, with the previous code too)
PROBE = {"type": "press", "key": "F2"}
# each kind of step, then the probe
STEPS = [
    PROBE,  # after the page settled
    {"type": "click", "selector": "#button"},
    PROBE,
    {"type": "type", "selector": "#field", "text": "hello"},
    PROBE,
    {"type": "press", "key": "End"},
    PROBE,
    {"type": "scroll", "direction": "down", "amount": 400},
    PROBE,
    {"type": "scroll", "to": "bottom"},
    PROBE,
    {"type": "wait", "ms": 100},
    PROBE,
    {"type": "wait_for", "selector": "#bottom"},
    PROBE,
    {"type": "wait_for", "selector": "#button"},
    PROBE,
    {"type": "evaluate", "script": "document.title"},
    PROBE,
    # a script that sets globals and wraps a function sets them where only it runs
    {
        "type": "evaluate",
        "script": "() => { window.mine = 1; globalThis.fetch = () => 0; return typeof mine; }",
    },
    PROBE,
    {"type": "screenshot"},
    PROBE,
    {"type": "click", "selector": "#button", "all": True},
    PROBE,
]
PROBES = STEPS.count(PROBE)


@pytest.fixture(scope="module")
def pages(site: TargetSite) -> TargetSite:
    site.page("/invisible/lookout", LOOKOUT)
    return site


@pytest.fixture
def key(accounts: Accounts) -> str:
    return accounts.create(credits=100)[1]


def reports(service, key: str, url: str, **fields):  # type: ignore[no-untyped-def]
    body = {"url": url, "engine": "js", "selectors": {"reports": "#reports li::text"}, **fields}
    result = service.scrape(key, {**body, "timeout": 30})
    assert result.status == 200, result.body
    answer = result.json
    assert answer["success"] is True, answer["error"]
    return answer


def test_a_page_finds_nothing_of_the_service_on_load(service, pages, key):
    answer = reports(service, key, pages.url("/invisible/lookout"))
    assert answer["extracted"]["reports"] == ["load: nothing"]


def test_a_page_finds_nothing_of_the_service_after_each_kind_of_step(service, pages, key):
    answer = reports(service, key, pages.url("/invisible/lookout"), actions=STEPS)
    assert [a["ok"] for a in answer["actions"]] == [True] * len(STEPS)
    expected = ["load: nothing"] + [f"probe {n}: nothing" for n in range(1, PROBES + 1)]
    assert answer["extracted"]["reports"] == expected
    evaluated = [r["value"] for r in answer["action_results"] if r["type"] == "evaluate"]
    assert evaluated == ["Lookout", "number"]  # the script ran, in a world of its own
