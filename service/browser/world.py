"""Where the service's own scripts run in a page: a world of their own the page cannot see.

Everything the service asks a rendered page (has it settled, where is the element a step is
about, an ``evaluate`` step's script, the requests the steps started) runs in an isolated world
of the page's frames: it shares the DOM with the page, not its JavaScript. Nothing is added to
the page's ``window``, none of its functions is replaced, and no script of the service carries a
source URL the page could read in a stack trace.

The world is made per page over the page's CDP session of the service's
(``Page.addScriptToEvaluateOnNewDocument`` with a ``worldName``, which also runs in the current
document): in every new document, before the page's own scripts, :data:`WORLD_SCRIPT` notes the
time of the DOM's last change (a ``MutationObserver`` there sees the page's changes). An
evaluation asks ``Page.createIsolatedWorld`` for that world's context in the main frame's
current document (the same world, found by its name) and runs ``Runtime.evaluate`` in it.
``Runtime.enable``, whose side effects a page can detect, is never sent on this session. The
world creates no timers either: timer ids are the window's, so a timer of the service would
show as a gap in the page's own.

The page's requests are followed at the protocol level: :meth:`PageWorld.count_requests` (only
when action steps run) hears the ``Network`` domain of this session (on for the download meter,
which shares it), whose ``requestWillBeSent`` the renderer sends as the page makes the request,
before its route has it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from patchright.async_api import Error as PlaywrightError

from service.browser.meter import METER_NETWORK

if TYPE_CHECKING:
    from patchright.async_api import CDPSession, Page

# A name the page never sees (isolated worlds are not enumerable from the page).
WORLD = "scrapespy"
_ALL = "{subtree: true, childList: true, attributes: true, characterData: true}"
# Run in the world before the page's scripts; an evaluation that finds no state (a document the
# script could not reach) installs it then.
WORLD_SCRIPT = f"""(() => {{
  if (globalThis.activity) return;
  const state = globalThis.activity = {{last: performance.now()}};
  const note = () => {{ state.last = performance.now(); }};
  new MutationObserver(note).observe(document, {_ALL});
}})()"""
# Streams that stay open by design are not waited for (service.browser.settle skips them too).
_LONG_LIVED = frozenset({"EventSource", "WebSocket"})


class PageWorld:
    """The page's isolated world, reached over a CDP session of the page's."""

    def __init__(self, session: CDPSession, frame_id: str) -> None:
        self.session = session
        self.frame_id = frame_id
        self.requests = 0  # requests the page made since count_requests()
        self._counting = False
        self._context: int | None = None  # the world's context in the current document

    def main_document(self, event: dict[str, Any]) -> bool:
        """Whether a ``Network.requestWillBeSent`` of the page's session is a navigation of the
        page's main frame (a document request of its frame)."""
        return event.get("type") == "Document" and event.get("frameId") == self.frame_id

    @classmethod
    async def open(
        cls, page: Page, session: CDPSession | None = None, target: dict[str, Any] | None = None
    ) -> PageWorld:
        """The world of ``page``, reached over ``session`` (else a new session of the page's);
        ``target``: the page's ``Target.getTargetInfo`` when the caller has it (a page target's
        id is its main frame's)."""
        session = session or await page.context.new_cdp_session(page)
        # Page.enable: without it this session's scripts do not run in new documents
        await session.send("Page.enable")
        if target is None:
            target = (await session.send("Target.getTargetInfo"))["targetInfo"]
        world = cls(session, str(target["targetId"]))
        await session.send(
            "Page.addScriptToEvaluateOnNewDocument",
            {"source": WORLD_SCRIPT, "worldName": WORLD, "runImmediately": True},
        )
        return world

    async def evaluate(self, function: str, arg: Any = None) -> Any:
        """``function(arg)`` in the world of the main frame's current document, awaited; its
        value as JSON gives it. A throw raises a PlaywrightError with the script's message, a
        document that went away meanwhile one that says its context was destroyed."""
        expression = f"({WORLD_SCRIPT}, ({function})({json.dumps(arg)}))"
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        try:
            answer = await self._evaluate(params, fresh=self._context is None)
        except _Gone:  # the context known is the previous document's
            answer = await self._evaluate(params, fresh=True)
        if "exceptionDetails" in answer:
            raise PlaywrightError(_thrown(answer["exceptionDetails"]))
        return answer.get("result", {}).get("value")

    async def _evaluate(self, params: dict[str, Any], *, fresh: bool) -> dict[str, Any]:
        if fresh:
            self._context = None
            made = await self._send(
                "Page.createIsolatedWorld", {"frameId": self.frame_id, "worldName": WORLD}
            )
            self._context = int(made["executionContextId"])
        try:
            return await self._send("Runtime.evaluate", {**params, "contextId": self._context})
        except _Gone:
            if fresh:
                raise PlaywrightError("Execution context was destroyed") from None
            raise

    async def count_requests(self) -> None:
        """From now on, count the requests the page makes (:attr:`requests`)."""
        if self._counting:
            return
        self._counting = True
        self.session.on("Network.requestWillBeSent", self._request)
        # the meter's options (it may share the session): Network.enable again changes nothing
        await self.session.send("Network.enable", METER_NETWORK)

    def _request(self, event: dict[str, Any]) -> None:
        if event.get("type") not in _LONG_LIVED:
            self.requests += 1

    async def _send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.session.send(method, params)
        except PlaywrightError as error:
            if any(sign in error.message for sign in _GONE):
                raise _Gone from None
            raise


# What CDP says when the document an evaluation was meant for went away: before it was sent (its
# context is unknown), or while it ran (a click that submitted a form navigated the page)
_GONE = (
    "Cannot find context",
    "Inspected target navigated or closed",
    "Execution context was destroyed",
)


class _Gone(Exception):
    """The execution context asked for belonged to a document that went away."""


def _thrown(details: dict[str, Any]) -> str:
    """What the script threw, as the page would print it: ``ReferenceError: x is not defined``."""
    exception = details.get("exception") or {}
    if exception.get("subtype") == "error" and exception.get("description"):
        return str(exception["description"]).splitlines()[0]
    if "value" in exception:
        return str(exception["value"])
    return str(exception.get("description") or details.get("text") or "the script threw")
