"""Chromium's failures, told the way a static download tells them.

A ``js`` scrape that fails must read like a ``static`` one (``the target refused the
connection``, ``could not resolve the target's host name``, the egress guard's refusal ...), and
the proxy pool must see the exceptions it knows. The browser reaches targets only through its
egress route (:mod:`service.browser.egress`), which remembers why it could not reach a target;
Chromium itself only says ``net::ERR_TUNNEL_CONNECTION_FAILED`` or shows the guard's answer.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
)
from twisted.internet.error import ConnectError, ConnectionRefusedError

from middlewares.egress_guard import BlockedRequest
from middlewares.redirects import unfollowable_location
from service.browser.egress import MARKER_HEADER

if TYPE_CHECKING:
    from patchright.async_api import Error as PlaywrightError
    from scrapy.http import Response

    from service.browser.egress import EgressRoute

log = logging.getLogger(__name__)

_NET_ERROR = re.compile(r"net::(ERR_[A-Z0-9_]+)")
# Chromium's own names for failures a static download has too.
_NET_ERRORS: dict[str, str] = {
    "ERR_NAME_NOT_RESOLVED": "unresolvable",
    "ERR_NAME_RESOLUTION_FAILED": "unresolvable",
    "ERR_CONNECTION_REFUSED": "refused",
    "ERR_CONNECTION_TIMED_OUT": "timeout",
    "ERR_TIMED_OUT": "timeout",
    "ERR_ADDRESS_UNREACHABLE": "unreachable",
    "ERR_CONNECTION_FAILED": "unreachable",
    "ERR_EMPTY_RESPONSE": "closed",
    "ERR_CONNECTION_CLOSED": "closed",
    "ERR_CONNECTION_RESET": "closed",
    "ERR_INCOMPLETE_CHUNKED_ENCODING": "closed",
    "ERR_CONTENT_LENGTH_MISMATCH": "closed",
}

# Chromium's own refusals of a redirect (read.navigate refuses most before Chromium does)
_REDIRECT_ERRORS: dict[str, str] = {
    "ERR_TOO_MANY_REDIRECTS": "the target redirected too many times (a redirect loop, or too "
    "long a chain)",
    "ERR_UNSAFE_REDIRECT": "the target redirected to a URL that the service cannot follow",
    "ERR_INVALID_REDIRECT": "the target redirected to a URL that the service cannot follow",
}


class BrowserError(Exception):
    """Chromium failed for a reason no static download has (a crash, an unsafe port ...); the
    message is meant for the caller."""


class BrowserUnavailable(BrowserError):
    """No browser of the js engine could render the page: every browser server of the pool is
    down, or the one rendering it went away (service.browser.pool). Unbilled, worth a retry."""

    error_code = "unavailable"


class TooLarge(BrowserError):
    """The page brought in more than a download limit allows (service.browser.meter)."""

    error_code = "too_large"


class RedirectFailed(BrowserError):
    """The target redirected the page where the browser does not follow it."""

    error_code = "redirect_failed"


def exception_for(reason: str, url: str) -> Exception:
    """The exception a static download raises for an egress route's ``reason``."""
    if reason == "blocked":
        return BlockedRequest()
    if reason == "unresolvable":
        return CannotResolveHostError(f"could not resolve the host of {url}")
    if reason == "refused":
        return DownloadConnectionRefusedError(f"connection refused by {url}")
    if reason == "proxy":
        # What Twisted raises when a static download cannot connect to its proxy.
        return ConnectionRefusedError("the proxy refused the connection")
    if reason == "timeout":
        return DownloadTimeoutError(f"connecting to {url} timed out")
    if reason in ("closed", "proxy_midway"):
        return DownloadFailedError(f"{url} closed the connection")
    return ConnectError(string=f"could not connect to {url}")


def refused_navigation(response: Response, route: EgressRoute | None) -> Exception | None:
    """A plain-http navigation the guard refused arrives as the guard's own answer."""
    if route is None or not response.headers.get(MARKER_HEADER):
        return None
    reason = route.failure_for_url(response.url)
    return None if reason is None else exception_for(reason, response.url)


def navigation_failure(
    error: PlaywrightError,
    route: EgressRoute | None,
    navigation: str | None,
    location: str | None = None,
) -> Exception:
    """What a failed navigation (``navigation`` is the last URL tried, ``location`` the last
    redirect's) means for the caller."""
    message = error.message or str(error)
    if "net::ERR_UNSAFE_REDIRECT" in message and location is not None:
        return RedirectFailed(unfollowable_location(navigation or "", location))
    if route is not None and navigation is not None:
        reason = route.failure_for_url(navigation)
        if reason is not None:
            return exception_for(reason, navigation)
    code = _NET_ERROR.search(message)
    if code is not None and code.group(1) in _NET_ERRORS:
        return exception_for(_NET_ERRORS[code.group(1)], navigation or "")
    if code is not None and code.group(1) in _REDIRECT_ERRORS:
        return RedirectFailed(_REDIRECT_ERRORS[code.group(1)])
    log.info("browser failure: %s", message.splitlines()[0] if message else repr(error))
    if code is not None:
        return BrowserError(f"the browser could not load the page (net::{code.group(1)})")
    if "crash" in message.lower():
        # A renderer past its heap (SCRAPESPY_BROWSER_MAX_HEAP_MB) is the usual way there.
        return TooLarge(
            "the page crashed the browser's renderer, most often by using more memory than a "
            "page may (SCRAPESPY_BROWSER_MAX_HEAP_MB)"
        )
    if "has been closed" in message:
        return BrowserError("the browser closed the page before it was rendered")
    return BrowserError("the browser could not render the page")
