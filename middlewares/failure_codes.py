"""Why a download failed, as the ``error_code`` of a result (service.core.errors.FAILURE_CODES).

The one classification of failed downloads: the result pipeline gives it to the scrape's answer
(pipelines.result) and the escalation middleware to each attempt of an auto request
(middlewares.escalation), so that the last attempt's code is the answer's. It lives among the
middlewares because both may import it (a middleware may not import the pipelines).
"""

from __future__ import annotations

from OpenSSL.SSL import Error as SSLError
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from twisted.internet import error as net_error
from twisted.internet.defer import TimeoutError as DeferredTimeoutError
from twisted.python.failure import Failure

from middlewares.deadline import DeadlineExceeded
from middlewares.decompression import ResponseTooLarge
from middlewares.redirects import RedirectFailed
from service.browser.actions import ActionFailed
from service.browser.failures import BrowserError
from service.egress.addresses import EgressBlocked, UnsupportedScheme


def failure_code(failure: Failure | BaseException) -> str:
    """The ``error_code`` (service.core.errors.FAILURE_CODES) of a download that failed with
    ``failure``, as ``pipelines.result.describe_failure`` words it for people."""
    exc = failure.value if isinstance(failure, Failure) else failure
    if isinstance(exc, DeadlineExceeded):
        return "timeout"
    if isinstance(exc, EgressBlocked | UnsupportedScheme):
        return "egress_blocked"
    if isinstance(exc, RedirectFailed):
        return "redirect_failed"
    if isinstance(exc, ResponseTooLarge):
        return "too_large"
    if isinstance(exc, IgnoreRequest):
        return "robots_disallowed" if "robots.txt" in str(exc).lower() else "internal"
    timeouts = (DownloadTimeoutError, net_error.TimeoutError, DeferredTimeoutError, TimeoutError)
    if isinstance(exc, timeouts) or exc.__class__.__name__ == "TimeoutError":
        return "timeout"
    if isinstance(exc, CannotResolveHostError | net_error.DNSLookupError):
        return "dns_error"
    if tls_failed(exc):
        return "tls_error"
    if isinstance(exc, DownloadCancelledError):  # Scrapy's DOWNLOAD_MAXSIZE
        return "too_large"
    connection = (
        DownloadConnectionRefusedError,
        net_error.ConnectError,
        net_error.ConnectionLost,
        DownloadFailedError,
        ResponseDataLossError,
    )
    if isinstance(exc, connection):
        return "connection_error"
    if isinstance(exc, BrowserError):
        return _browser_failure_code(exc)
    return "internal"


def tls_failed(exc: BaseException) -> bool:
    """Whether OpenSSL failed under ``exc``: Twisted reports a handshake that failed as a
    ResponseNeverReceived of an SSL.Error, which Scrapy wraps in a DownloadFailedError."""
    seen = 0
    pending: list[BaseException] = [exc]
    while pending and seen < 8:
        current = pending.pop()
        seen += 1
        if isinstance(current, SSLError):
            return True
        reasons = getattr(current, "reasons", None)
        if isinstance(reasons, list):
            pending.extend(r.value for r in reasons if isinstance(r, Failure))
        if current.__cause__ is not None:
            pending.append(current.__cause__)
    return False


def _browser_failure_code(exc: BrowserError) -> str:
    """The js engine's own failures (service.browser), by what they say."""
    if isinstance(exc, ActionFailed):  # a step of actions, or wait_for
        return "action_failed"
    declared = getattr(exc, "error_code", None)
    if isinstance(declared, str):
        return declared
    message = str(exc)
    if message.startswith("the screenshot is larger"):
        return "too_large"
    if "net::ERR_SSL" in message or "net::ERR_CERT" in message:
        return "tls_error"
    return "internal"
