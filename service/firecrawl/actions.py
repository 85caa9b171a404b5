"""Firecrawl's ``actions`` as native steps (docs/api.md, ``actions``), and what the native steps
produced as Firecrawl's ``actions`` of a document.

Each Firecrawl action is one native step, at the same index, so that a native message naming
``actions[2]`` names the caller's third action too, and a result's ``action_results`` are read
back by the index of the action that made them.

- ``wait`` ``{milliseconds}`` is ``wait`` ``{ms}``; ``wait`` ``{selector}`` is ``wait_for``;
- ``click`` ``{selector, all}`` is ``click``;
- ``write`` ``{text}`` types into the element the last ``click`` focused: it is the native
  ``type`` step on that click's selector, which replaces the field's content (as typing into an
  empty field does); a ``write`` with no ``click`` before it is refused, not guessed;
- ``press`` ``{key}`` is ``press``, with Firecrawl's upper-case key names (``ENTER``) spelt as
  the browser names them (``Enter``);
- ``scroll`` ``{direction}`` scrolls the page by one viewport of the desktop browser;
  scrolling inside an element (``selector``) is not offered;
- ``screenshot`` ``{fullPage}`` is ``screenshot``;
- ``executeJavascript`` ``{script}`` is ``evaluate``, run as Firecrawl runs it: the script's
  last expression is its value, and a script with a top-level ``return`` runs as the body of an
  async function; like every ``evaluate``, in the page's isolated world (it sees the DOM, not
  the page's JavaScript variables, and leaves nothing the page can see);
- ``scrape`` is an ``evaluate`` of the page's URL and HTML at that moment;
- ``pdf`` is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from service.core.errors import BadRequest

SCROLL_PX = 720  # one viewport of the desktop browser (1280 x 720)
PNG_DATA_URL = "data:image/png;base64,"

# Firecrawl's key names that differ from the browser's, lower-cased
KEYS = {
    "enter": "Enter",
    "return": "Enter",
    "tab": "Tab",
    "escape": "Escape",
    "esc": "Escape",
    "backspace": "Backspace",
    "delete": "Delete",
    "space": " ",
    "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "home": "Home",
    "end": "End",
    "pageup": "PageUp",
    "pagedown": "PageDown",
}

# What a ``scrape`` action reads: Firecrawl's ``{url, html}`` of the page at that step.
SCRAPE_SCRIPT = "({url: location.href, html: document.documentElement.outerHTML})"

# A Firecrawl script: evaluated as a script (its last expression is its value); if it does not
# parse as one (a top-level ``return``), run as an async function's body. The marker tells a
# parse error, where nothing ran, from a SyntaxError the script threw while running.
_RUN_SCRIPT = """async () => {
  const source = %s;
  globalThis.__scrapespyScriptRan = false;
  try {
    return await globalThis.eval("globalThis.__scrapespyScriptRan = true;\\n" + source);
  } catch (e) {
    if (globalThis.__scrapespyScriptRan || !(e instanceof SyntaxError)) throw e;
  }
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  return await new AsyncFunction(source)();
}"""


def _refuse(where: str, message: str) -> BadRequest:
    return BadRequest(f"invalid request: '{where}': {message}")


def _string(action: Mapping[str, Any], name: str, where: str) -> str:
    value = action.get(name)
    if not isinstance(value, str):
        raise _refuse(f"{where}.{name}", "must be a string")
    return value


def _only(action: Mapping[str, Any], where: str, *names: str) -> None:
    for name in action:
        if name not in ("type", *names):
            raise BadRequest(f"unknown field '{where}.{name}'")


def _wait(action: Mapping[str, Any], where: str, clicked: str | None) -> dict[str, Any]:
    _only(action, where, "milliseconds", "selector")
    ms, selector = action.get("milliseconds"), action.get("selector")
    if (ms is None) == (selector is None):
        raise _refuse(where, "give exactly one of 'milliseconds' and 'selector'")
    if selector is not None:
        return {"type": "wait_for", "selector": _string(action, "selector", where)}
    return {"type": "wait", "ms": ms}


def _click(action: Mapping[str, Any], where: str, clicked: str | None) -> dict[str, Any]:
    _only(action, where, "selector", "all")
    step = {"type": "click", "selector": _string(action, "selector", where)}
    if "all" in action:
        step["all"] = action["all"]
    return step


def _write(action: Mapping[str, Any], where: str, clicked: str | None) -> dict[str, Any]:
    _only(action, where, "text")
    if clicked is None:
        raise _refuse(
            where, "write types into the field the last click focused: click the field first"
        )
    return {"type": "type", "selector": clicked, "text": _string(action, "text", where)}


def _press(action: Mapping[str, Any], where: str, clicked: str | None) -> dict[str, Any]:
    _only(action, where, "key")
    key = _string(action, "key", where)
    return {"type": "press", "key": KEYS.get(key.lower(), key)}


def _scroll(action: Mapping[str, Any], where: str, clicked: str | None) -> dict[str, Any]:
    _only(action, where, "direction", "selector")
    if action.get("selector") is not None:
        raise _refuse(f"{where}.selector", "scrolling inside an element is not offered")
    direction = action.get("direction", "down")
    if direction not in ("up", "down"):
        raise _refuse(f"{where}.direction", "must be 'up' or 'down'")
    return {"type": "scroll", "direction": direction, "amount": SCROLL_PX}


def _screenshot(action: Mapping[str, Any], where: str, clicked: str | None) -> dict[str, Any]:
    _only(action, where, "fullPage")
    return {"type": "screenshot", "full_page": action.get("fullPage", False)}


def _execute(action: Mapping[str, Any], where: str, clicked: str | None) -> dict[str, Any]:
    _only(action, where, "script")
    source = _string(action, "script", where)
    return {"type": "evaluate", "script": _RUN_SCRIPT % orjson.dumps(source).decode()}


def _scrape(action: Mapping[str, Any], where: str, clicked: str | None) -> dict[str, Any]:
    _only(action, where)
    return {"type": "evaluate", "script": SCRAPE_SCRIPT}


Step = Callable[[Mapping[str, Any], str, "str | None"], dict[str, Any]]
STEPS: dict[str, Step] = {
    "wait": _wait,
    "click": _click,
    "write": _write,
    "press": _press,
    "scroll": _scroll,
    "screenshot": _screenshot,
    "executeJavascript": _execute,
    "scrape": _scrape,
}


def native_steps(actions: Any) -> list[dict[str, Any]]:
    """Firecrawl's ``actions`` as native steps, one each, in order."""
    if not isinstance(actions, list):
        raise _refuse("actions", "must be a list")
    steps, clicked = [], None
    for index, action in enumerate(actions):
        where = f"actions[{index}]"
        if not isinstance(action, Mapping):
            raise _refuse(where, "must be an object")
        kind = action.get("type")
        step = STEPS.get(kind) if isinstance(kind, str) else None
        if step is None:
            if kind == "pdf":
                raise _refuse(f"{where}.type", "the pdf action is not offered by this server")
            raise _refuse(f"{where}.type", "must be one of " + ", ".join(STEPS))
        steps.append(step(action, where, clicked))
        if kind == "click":
            clicked = None if action.get("all") else steps[-1]["selector"]
    return steps


def _js_type(value: Any) -> str:
    """The JavaScript ``typeof`` of a JSON value, as Firecrawl's ``javascriptReturns`` say it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "undefined" if value is None else "object"


def action_outputs(
    actions: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any]]
) -> dict[str, list[Any]]:
    """Firecrawl's ``actions`` of a document: what each screenshot, scrape and script made, read
    from the native ``action_results`` by the index of the action that made it."""
    made: dict[str, list[Any]] = {
        "screenshots": [],
        "scrapes": [],
        "javascriptReturns": [],
        "pdfs": [],
    }
    for produced in results:
        index = produced.get("index")
        kind = None
        if isinstance(index, int) and 0 <= index < len(actions):
            kind = actions[index].get("type")
        if "screenshot" in produced:
            made["screenshots"].append(PNG_DATA_URL + produced["screenshot"])
        elif kind == "scrape" and isinstance(produced.get("value"), dict):
            made["scrapes"].append(produced["value"])
        elif kind == "executeJavascript":
            value = produced.get("value")
            made["javascriptReturns"].append({"type": _js_type(value), "value": value})
    return made
