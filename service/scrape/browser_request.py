"""A scrape's request for the js engine: the one place that says what a browser request carries.

spiders.feed asks for it when an order's first attempt is ``js``; middlewares.escalation when an
auto order goes on to the browser. service.browser renders what it finds (service.scrape.meta).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from service.scrape.meta import (
    ACTIONS,
    COOKIES,
    DEVICE,
    IDENTITY,
    PLAYWRIGHT,
    PLAYWRIGHT_CONTEXT,
    PLAYWRIGHT_CONTEXT_KWARGS,
    PLAYWRIGHT_PAGE_GOTO_KWARGS,
    SCREENSHOT,
    SETTLE_MS,
    WAIT_FOR,
)

if TYPE_CHECKING:
    from service.scrape.order import ScrapeOrder


def identity_ask(order: ScrapeOrder) -> dict[str, Any]:
    """What the browser identity of ``order``'s context is made from (service.browser.identity):
    its location's languages and country, else its session's identity; empty: the default one
    (a spare context has it)."""
    ask: dict[str, Any] = {}
    if order.languages or order.country is not None:
        ask = {"languages": list(order.languages), "country": order.country}
    elif order.session is not None and order.session.identity:
        ask["stored"] = dict(order.session.identity)
    return ask


def for_browser(meta: dict[str, Any], order: ScrapeOrder, attempt: int | None = None) -> None:
    """Make the request of ``meta`` render ``order`` in the browser.

    ``attempt`` None: the order's first request, in the context ``scrape-{id}``, with what the
    caller asked of the browser (a screenshot, ``wait_for``, steps). ``attempt`` n: attempt n of
    an auto order, in a fresh context ``scrape-{id}-{n}``; auto takes no steps for the browser.
    Either way the context is the request's own (closed when it ends, service.browser), the
    deadline middleware adds the navigation's timeout, and the order's device and cookies go
    with it (a static attempt had the cookies in its jar, the browser sets them in its context),
    and so do the order's session's storage (service.scrape.sessions) and its location's
    languages and time zone (:func:`identity_ask`).
    """
    meta[PLAYWRIGHT] = True
    meta[PLAYWRIGHT_CONTEXT] = (
        f"scrape-{order.id}" if attempt is None else f"scrape-{order.id}-{attempt}"
    )
    meta[PLAYWRIGHT_PAGE_GOTO_KWARGS] = {"wait_until": "load"}
    if attempt is None:
        if "screenshot" in order.formats:  # taken by service.browser after the page is read
            meta[SCREENSHOT] = {"full_page": order.screenshot_full_page}
        # run by service.browser; it reports back in the same meta
        if order.wait_for is not None:
            meta[WAIT_FOR] = dict(order.wait_for)
        if order.settle_ms is not None:
            meta[SETTLE_MS] = order.settle_ms
        if order.actions:
            meta[ACTIONS] = [dict(step) for step in order.actions]
    if order.device == "mobile":
        meta[DEVICE] = "mobile"
    ask = identity_ask(order)
    if ask:
        meta[IDENTITY] = ask
    if order.cookies:
        meta[COOKIES] = [dict(cookie) for cookie in order.cookies]
    if order.session is not None:  # a fresh context, made with the session's cookies and storage
        context = dict(meta.get(PLAYWRIGHT_CONTEXT_KWARGS) or {})
        context["storage_state"] = order.session.browser_state()
        meta[PLAYWRIGHT_CONTEXT_KWARGS] = context
