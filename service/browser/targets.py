"""Finding the element an action step is about, in one evaluation in the page's isolated world.

Playwright's own ``click``, ``fill`` and ``wait_for_selector`` set up its utility world in the
page on first use (20 ms), wait for an element's box to stay put over two animation frames and
check the hit target on another (``click`` took 36-46 ms on a local page, ``fill`` 18,
``wait_for_selector`` 15, where one evaluation takes 2-3 ms): five of them alone were more than
the 50 ms that a five-step script may add. Here one evaluation waits, in the page, until the
selector (standard CSS, ``document.querySelectorAll``) has a visible match that can take the
action; the click itself is then Playwright's mouse (real, trusted events at the element's
centre), the text goes in through its keyboard.

An element is visible when its box is not empty and it is not hidden by CSS
(``checkVisibility``). It can be clicked when it is visible, not disabled and is what is found
at its centre once scrolled into view (nothing covers it). It can be filled when it is a text
input, a ``textarea`` or editable content, enabled and not read-only. Unlike Playwright's click,
no wait for the element to stop moving: a step racing an animation should wait for its end.
"""

from __future__ import annotations

import json
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from patchright.async_api import Error as PlaywrightError

if TYPE_CHECKING:
    from patchright.async_api import Page

    from service.browser.world import PageWorld

# ([selector, purpose, timeout ms, arg]) -> the first visible match made ready for purpose:
#   "visible": {}; "click": {x, y}; "fill" (arg: the text): {done} (a date, colour ... input,
#   set) or {insert} (selected and focused, for the keyboard to replace); "collect": {count}
#   (every visible match, kept on the window for "nth"); "nth" (arg: which): {x, y} or {skip}
#   (gone or hidden); or {timeout, matched, why} once the time is up, or {error} when it
#   never can be.
FIND = """([selector, purpose, timeout, arg]) => new Promise((resolve) => {
  const KEY = Symbol.for("scrapespy.targets");
  const end = performance.now() + timeout;
  let matched = false, why = "hidden", timer, pending = false, observer;
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && el.checkVisibility({visibilityProperty: true});
  };
  const point = (el) => {
    if (el.matches(":disabled")) { why = "disabled"; return null; }
    let r = el.getBoundingClientRect();
    if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) {
      el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
      r = el.getBoundingClientRect();
    }
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    let hit = document.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    if (!hit || !(hit === el || el.contains(hit))) { why = "covered"; return null; }
    return {x, y};
  };
  const fill = (el) => {
    const tag = el.nodeName.toLowerCase();
    if (tag === "input") {
      const type = el.type.toLowerCase();
      const set = ["color", "date", "time", "datetime-local", "month", "range", "week"];
      const typed = ["", "email", "number", "password", "search", "tel", "text", "url"];
      if (!set.includes(type) && !typed.includes(type)) return {error: "type " + type};
      if (el.disabled || el.readOnly) { why = "disabled"; return null; }
      if (set.includes(type)) {
        const value = arg.trim();
        el.focus(); el.value = value;
        if (el.value !== value) return {error: "malformed"};
        el.dispatchEvent(new Event("input", {bubbles: true, composed: true}));
        el.dispatchEvent(new Event("change", {bubbles: true}));
        return {done: true};
      }
      el.select(); el.focus();
      return {insert: true};
    }
    if (tag === "textarea") {
      if (el.disabled || el.readOnly) { why = "disabled"; return null; }
      el.selectionStart = 0; el.selectionEnd = el.value.length; el.focus();
      return {insert: true};
    }
    if (!el.isContentEditable) return {error: "not editable"};
    const range = document.createRange();
    range.selectNodeContents(el);
    const selection = getSelection();
    selection.removeAllRanges(); selection.addRange(range); el.focus();
    return {insert: true};
  };
  const attempt = () => {
    if (purpose === "nth") {
      const el = (window[KEY] || [])[arg];
      if (!el || !el.isConnected || !visible(el)) return {skip: true};
      matched = true;
      return point(el);
    }
    let all;
    try { all = document.querySelectorAll(selector); }
    catch (e) { return {error: "selector"}; }
    matched = matched || all.length > 0;
    const shown = [...all].filter(visible);
    if (!shown.length) return null;
    if (purpose === "visible") return {};
    if (purpose === "collect") { window[KEY] = shown; return {count: shown.length}; }
    for (const el of shown) {
      const ready = purpose === "fill" ? fill(el) : point(el);
      if (ready) return ready;
    }
    return null;
  };
  // scheduler.postTask, not setTimeout: timer ids are the window's, shared with the page
  const cancel = () => { if (timer) timer.abort(); };
  const later = (callback, ms) => {
    timer = new AbortController();
    scheduler.postTask(callback, {delay: ms, signal: timer.signal}).catch(() => {});
  };
  const done = (value) => {
    cancel();
    if (observer) observer.disconnect();
    resolve(value);
  };
  const tick = () => {
    const found = attempt();
    if (found) return done(found);
    if (performance.now() >= end) return done({timeout: true, matched, why});
    cancel();
    later(tick, Math.min(50, Math.max(0, end - performance.now())));
  };
  observer = new MutationObserver(() => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => { pending = false; tick(); });
  });
  observer.observe(document, {subtree: true, childList: true, attributes: true});
  tick();
})"""

FORGET = "() => { delete window[Symbol.for('scrapespy.targets')]; }"


class NotFound(Exception):
    """The element could not be had within the time (or ever); the message says why."""


async def find(
    world: PageWorld, page: Page, selector: str, purpose: str, left: float, arg: int | str = 0
) -> dict[str, Any]:
    """What :data:`FIND` gives for ``purpose``, within ``left`` seconds, across navigations
    (a document that goes away is searched again once the next one is there)."""
    deadline = time.monotonic() + left
    while True:
        remaining = max(deadline - time.monotonic(), 0.0)
        try:
            found: dict[str, Any] = await world.evaluate(
                FIND, [selector, purpose, remaining * 1000, arg]
            )
        except PlaywrightError as error:
            if "context was destroyed" not in error.message or remaining <= 0:
                raise
            with suppress(PlaywrightError):
                await page.wait_for_load_state("domcontentloaded", timeout=max(remaining, 0.001))
            continue
        if "timeout" in found:
            raise NotFound(_why(selector, purpose, found))
        if "error" in found:
            raise NotFound(_never(selector, found["error"]))
        return found


def quote(selector: str) -> str:
    return json.dumps(selector, ensure_ascii=False)


def _why(selector: str, purpose: str, found: dict[str, Any]) -> str:
    if not found.get("matched"):
        return f"no element matches {quote(selector)} within the timeout"
    reason = {
        "hidden": "no match became visible",
        "disabled": "it stayed disabled"
        if purpose == "click"
        else "it stayed disabled or read-only",
        "covered": "another element covers it",
    }[found.get("why") or "hidden"]
    action = "filled" if purpose == "fill" else "clicked"
    return f"{quote(selector)} could not be {action} within the timeout: {reason}"


def _never(selector: str, error: str) -> str:
    if error == "selector":
        return f"{quote(selector)} is not a valid CSS selector"
    if error.startswith("type "):
        return f"{quote(selector)} is an input of {error}, which cannot be filled"
    if error == "malformed":
        return f"the text is not a valid value for {quote(selector)}"
    return f"{quote(selector)} is not an input, a textarea or editable content"
