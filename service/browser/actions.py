"""A request's ``wait_for`` and ``actions``, run on the rendered page before its DOM is read.

The API side validates them and puts them in the request's meta (``scrapespy_wait_for``: one
``{"selector": S}`` or ``{"ms": N}``; ``scrapespy_actions``: the steps, in order). They run
after the page has loaded and settled; each outcome goes to
``meta["scrapespy_action_outcomes"]`` as the step ends (``index``, ``type``, ``ok``,
``elapsed_ms``, and ``error`` when it failed), and what screenshot and evaluate steps produce to
``meta["scrapespy_action_results"]``. A step that fails raises :class:`ActionFailed`, which names
its index and type, and ends the scrape.

Every step is bounded by what is left of the request's deadline minus what reading the page
needs (``budget``); a step that runs out of it fails as that step, not as a timeout of the page.
Selectors are standard CSS, matched in the page's document (not inside frames); waiting for
one survives a navigation.

What the steps do:

* ``wait``: sleeps ``ms``; more than the time left fails at once;
* ``wait_for``: until an element matching the CSS selector is visible;
* ``click``: a real mouse click at the centre of the first visible match that can be clicked
  (:mod:`service.browser.targets` says when one can), scrolled into view; with ``all``, every
  match visible when the step starts, in document order (one that an earlier click removed or
  hid is skipped);
* ``type``: replaces the matching field's content with ``text``, as typed (``input`` events)
  and leaves the focus in it, so that a following ``press`` goes to it;
* ``press``: presses ``key`` (Playwright's key names: ``Enter``, ``ArrowDown``, ``Control+a``)
  on whatever has the focus;
* ``scroll``: by ``amount`` CSS pixels up or down, or ``to`` the document's current bottom (an
  infinite list loads more once it is there: follow with a ``wait_for`` of what it loads);
* ``screenshot``: a PNG as :mod:`service.browser.screenshot` takes it (same size cap and
  full-page height bound), base64 in the results;
* ``evaluate``: the script is a JavaScript **expression**, evaluated in the page's isolated
  world (:mod:`service.browser.world`): it sees and changes the page's DOM, cookies and
  storage, not the page's JavaScript variables, and the page does not see it. If its value
  is a function, the function is called with no arguments; a promise is awaited. The result
  is that value, serialised with
  ``JSON.stringify`` (``undefined`` gives ``null``), at most :data:`MAX_EVALUATE_BYTES` bytes
  and :data:`MAX_EVALUATE_DEPTH` levels deep, both checked in the page.
  Statements need a function: ``() => { const n = 2; return n * 2; }``, not ``return 4``.
  A throw fails the step with the script's own error message.

After the last step, if the steps made the page navigate or fetch, the page is given until its
requests have finished (then the handler's short quiet period) before it is read; steps that
fetched nothing cost no wait.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from patchright.async_api import Error as PlaywrightError
from patchright.async_api import TimeoutError as PlaywrightTimeoutError

from service.browser.failures import BrowserError
from service.browser.screenshot import ScreenshotLimits, take_screenshot
from service.browser.targets import FORGET, NotFound, find, quote
from service.scrape.meta import ACTION_OUTCOMES, ACTION_RESULTS, ACTIONS, WAIT_FOR

if TYPE_CHECKING:
    from patchright.async_api import Page

    from service.browser.settle import PageWatch
    from service.browser.world import PageWorld

MAX_EVALUATE_BYTES = 64 * 1024
# Arrays and objects within one another in an evaluate step's value: the answer's JSON writer
# (orjson) stops at 255 levels, and the value sits a few levels down in a result or a job's page.
MAX_EVALUATE_DEPTH = 64
# A step given ``left`` seconds waits that long in the page, which then says what it did not
# find; this much longer, the step is cut short whatever it does (the handler's reserve for
# reading the page is larger).
GRACE = 0.2

# An evaluate step in one evaluation: the script (an argument, evaluated as an expression in the
# isolated world's global scope), its value called if a function and
# awaited, then JSON text, checked in the page: only text under the caps, or why not, crosses to
# the service (a 100 MB string sent back whole killed the browser's connection).
_EVALUATE = """async ([script, cap, deepest]) => {
  let value = globalThis.eval(script);
  if (typeof value === "function") value = value();
  value = await value;
  let text;
  try { text = JSON.stringify(value); } catch (e) { return {error: String(e)}; }
  if (text === undefined) return "null";
  if (typeof text !== "string") return {error: "JSON.stringify gave no text"};
  if (text.length > cap) return {tooLarge: text.length};
  let depth = 0, quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (quoted) { if (c === 92) i++; else if (c === 34) quoted = false; }
    else if (c === 34) quoted = true;
    else if (c === 91 || c === 123) { if (++depth > deepest) return {tooDeep: true}; }
    else if (c === 93 || c === 125) depth--;
  }
  return text;
}"""
# the page's next task (scheduler.postTask, not setTimeout: timer ids are the window's, and a
# timer of the service's would show as a gap in the page's own)
_NEXT_TASK = "() => scheduler.postTask(() => 0)"
_SCROLL_BY = "(dy) => window.scrollBy({top: dy, left: 0, behavior: 'instant'})"
_SCROLL_TO_BOTTOM = """() => {
  const root = document.scrollingElement || document.documentElement;
  window.scrollTo({top: root.scrollHeight, left: 0, behavior: 'instant'});
}"""


class ActionFailed(BrowserError):
    """A ``wait_for`` or a step failed; the message names which and why (shown to the caller)."""


class _StepFailed(Exception):
    """Why a step failed, before it is told with its index and type."""


def wants_actions(meta: dict[str, Any]) -> bool:
    return bool(meta.get(WAIT_FOR) or meta.get(ACTIONS))


async def run_actions(
    page: Page,
    meta: dict[str, Any],
    *,
    world: PageWorld,
    budget: Callable[[], float],
    screenshot_limits: ScreenshotLimits,
) -> None:
    """The request's ``wait_for``, then its steps; ``budget()`` is the time they may still use.
    The service's scripts run in the page's isolated ``world``, the clicks and keys are the
    browser's own input."""
    wait_for = meta.get(WAIT_FOR)
    if wait_for:
        try:
            await _bounded(_top_wait_for(page, world, wait_for, budget()), budget())
        except _StepFailed as failure:
            raise ActionFailed(f"wait_for failed: {failure}") from None
    steps = meta.get(ACTIONS) or []
    if not steps:
        return
    outcomes: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    with suppress(PlaywrightError):  # the requests the steps make, as the page makes them
        await world.count_requests()
    meta[ACTION_OUTCOMES] = outcomes
    meta[ACTION_RESULTS] = results
    for index, step in enumerate(steps):
        kind = step["type"]
        started = time.monotonic()
        try:
            left = budget()
            if left <= 0:
                raise _StepFailed("the request's time ran out before the step began")
            produced = await _bounded(
                _STEPS[kind](page, world, step, left, screenshot_limits), left
            )
        except _StepFailed as failure:
            outcomes.append(_outcome(index, kind, started, error=str(failure)))
            raise ActionFailed(f"action {index} ({kind}) failed: {failure}") from None
        outcomes.append(_outcome(index, kind, started))
        if produced is not None:
            results.append({"index": index, "type": kind, **produced})


async def after_actions(
    page: Page, watch: PageWatch, *, since: float, quiet: float, limit: float
) -> None:
    """Let what the steps started (a navigation, a fetch) finish, within ``limit`` seconds."""
    if limit <= 0:
        return
    try:
        # A navigation or fetch the last step started reaches the page's task queue first
        # (a form submitted by Enter is scheduled, not begun, when the key press returns).
        async with asyncio.timeout(limit):
            await watch.world.evaluate(_NEXT_TASK)
    except (PlaywrightError, TimeoutError):
        pass  # a navigation replaced the page's document
    if watch.world.requests:  # requests the page made that its route may not have reported yet
        await watch.first_change(since=since, limit=limit)
    if watch.navigated_since(since):
        try:
            await page.wait_for_load_state("load", timeout=limit * 1000)
        except PlaywrightError:
            return  # read as it is
    await watch.network_quiet(since=since, quiet=quiet, limit=limit)


def _outcome(index: int, kind: str, started: float, *, error: str | None = None) -> dict[str, Any]:
    outcome: dict[str, Any] = {
        "index": index,
        "type": kind,
        "ok": error is None,
        "elapsed_ms": round((time.monotonic() - started) * 1000),
    }
    if error is not None:
        outcome["error"] = error
    return outcome


async def _bounded(step: Any, left: float) -> Any:
    """Run ``step`` within ``left`` seconds (and the grace for its own timeout to be told); the
    browser's own failures become _StepFailed."""
    try:
        async with asyncio.timeout(max(left, 0.0) + GRACE):
            return await step
    except (TimeoutError, PlaywrightTimeoutError):
        raise _StepFailed("the step's time ran out (the request's timeout)") from None
    except BrowserError as error:  # the screenshot's size cap
        raise _StepFailed(str(error)) from None
    except PlaywrightError as error:
        raise _StepFailed(_browser_message(error)) from None


async def _top_wait_for(
    page: Page, world: PageWorld, wait_for: dict[str, Any], left: float
) -> None:
    if "ms" in wait_for:
        await _sleep(int(wait_for["ms"]), left)
        return
    selector = wait_for["selector"]
    try:
        await find(world, page, selector, "visible", left)
    except NotFound as failure:
        raise _StepFailed(
            _invalid_or(failure, f"{quote(selector)} did not become visible within the timeout")
        ) from None


def _invalid_or(failure: NotFound, message: str) -> str:
    return str(failure) if "valid CSS" in str(failure) else message


async def _sleep(ms: int, left: float) -> None:
    if ms / 1000 > left:
        raise _StepFailed(f"{ms} ms is more than the time left ({int(left * 1000)} ms)")
    await asyncio.sleep(ms / 1000)


async def _wait(
    page: Page, world: PageWorld, step: dict[str, Any], left: float, _l: ScreenshotLimits
) -> None:
    await _sleep(int(step["ms"]), left)


async def _wait_for(
    page: Page, world: PageWorld, step: dict[str, Any], left: float, _l: ScreenshotLimits
) -> None:
    selector = step["selector"]
    try:
        await find(world, page, selector, "visible", left)
    except NotFound as failure:
        raise _StepFailed(
            _invalid_or(failure, f"{quote(selector)} did not appear within the timeout")
        ) from None


async def _click(
    page: Page, world: PageWorld, step: dict[str, Any], left: float, _l: ScreenshotLimits
) -> None:
    selector = step["selector"]
    deadline = time.monotonic() + left
    try:
        if not step.get("all"):
            at = await find(world, page, selector, "click", left)
            await page.mouse.click(at["x"], at["y"])
            return
        found = await find(world, page, selector, "collect", left)
        try:
            for index in range(found["count"]):
                at = await find(world, page, selector, "nth", deadline - time.monotonic(), index)
                if "skip" not in at:  # gone, or hidden by a click before it
                    await page.mouse.click(at["x"], at["y"])
        finally:
            with suppress(PlaywrightError):
                await world.evaluate(FORGET)
    except NotFound as failure:
        raise _StepFailed(str(failure)) from None


async def _type(
    page: Page, world: PageWorld, step: dict[str, Any], left: float, _l: ScreenshotLimits
) -> None:
    try:
        found = await find(world, page, step["selector"], "fill", left, step["text"])
    except NotFound as failure:
        raise _StepFailed(str(failure)) from None
    if "insert" in found:  # the field's content is selected: the text replaces it
        if step["text"]:
            await page.keyboard.insert_text(step["text"])
        else:
            await page.keyboard.press("Delete")


async def _press(
    page: Page, world: PageWorld, step: dict[str, Any], left: float, _l: ScreenshotLimits
) -> None:
    await page.keyboard.press(step["key"])


async def _scroll(
    page: Page, world: PageWorld, step: dict[str, Any], left: float, _l: ScreenshotLimits
) -> None:
    if step.get("to") == "bottom":
        await world.evaluate(_SCROLL_TO_BOTTOM)
        return
    amount = int(step["amount"])
    await world.evaluate(_SCROLL_BY, -amount if step.get("direction") == "up" else amount)


async def _screenshot(
    page: Page, world: PageWorld, step: dict[str, Any], left: float, limits: ScreenshotLimits
) -> dict[str, Any]:
    png = await take_screenshot(
        page, full_page=bool(step.get("full_page")), limits=limits, timeout=left, world=world
    )
    return {"screenshot": base64.b64encode(png).decode("ascii")}


async def _evaluate(
    page: Page, world: PageWorld, step: dict[str, Any], left: float, _l: ScreenshotLimits
) -> dict[str, Any]:
    try:
        text = await world.evaluate(
            _EVALUATE, [step["script"], MAX_EVALUATE_BYTES, MAX_EVALUATE_DEPTH]
        )
    except PlaywrightError as error:
        if isinstance(error, PlaywrightTimeoutError):
            raise
        raise _StepFailed(f"the script threw: {_browser_message(error)}") from None
    if isinstance(text, dict):
        if "tooLarge" in text:
            raise _StepFailed(_too_large(int(text["tooLarge"])))
        if "tooDeep" in text:
            raise _StepFailed(
                f"the script's value is nested deeper than the limit of {MAX_EVALUATE_DEPTH} "
                "levels of arrays and objects"
            )
        raise _StepFailed(f"the script's value is not JSON-serialisable ({text.get('error')})")
    if not isinstance(text, str):
        raise _StepFailed("the script's value could not be read")
    size = len(text.encode("utf-8"))
    if size > MAX_EVALUATE_BYTES:
        raise _StepFailed(_too_large(size))
    return {"value": json.loads(text)}


def _too_large(size: int) -> str:
    return (
        f"the script's value is larger than the limit of {MAX_EVALUATE_BYTES} bytes "
        f"as JSON ({size})"
    )


def _browser_message(error: PlaywrightError) -> str:
    """The first line of a Playwright error, without the API call's name in front."""
    message = (error.message or str(error)).strip().splitlines()
    first = message[0] if message else "the browser failed"
    head, sep, rest = first.partition(": ")
    if sep and "." in head and " " not in head:  # "Page.evaluate: ReferenceError: ..."
        first = rest
    return first[:500]


_STEPS = {
    "wait": _wait,
    "wait_for": _wait_for,
    "click": _click,
    "type": _type,
    "press": _press,
    "scroll": _scroll,
    "screenshot": _screenshot,
    "evaluate": _evaluate,
}
