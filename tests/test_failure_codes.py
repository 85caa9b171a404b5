"""``middlewares.failure_codes.failure_code``: the one classification of failed downloads into the
``error_code`` a result carries, for the failures the end-to-end tests cannot make locally (the
end-to-end ones are in test_e2e_cost)."""

from __future__ import annotations

import pytest
from OpenSSL import SSL
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadFailedError,
    IgnoreRequest,
)
from twisted.python.failure import Failure
from twisted.web._newclient import ResponseNeverReceived

from middlewares.deadline import DeadlineExceeded
from middlewares.decompression import too_large
from middlewares.egress_guard import BlockedRequest
from middlewares.failure_codes import failure_code
from pipelines.result import describe_failure
from service.browser.actions import ActionFailed
from service.browser.failures import BrowserError, exception_for
from service.core.errors import FAILURE_CODES
from service.egress.addresses import BLOCKED_MESSAGE, EgressBlocked
from service.scrape.order import ScrapeOrder


class Declared(BrowserError):
    error_code = "too_large"


def tls_failure() -> DownloadFailedError:
    """What Scrapy raises for a handshake that failed: Twisted's ResponseNeverReceived of an
    SSL.Error, wrapped."""
    try:
        raise SSL.Error([("SSL routines", "", "wrong version number")])
    except SSL.Error:
        never = ResponseNeverReceived([Failure()])
    try:
        raise DownloadFailedError(str(never)) from never
    except DownloadFailedError as wrapped:
        return wrapped


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (DeadlineExceeded("late"), "timeout"),
        (EgressBlocked(), "egress_blocked"),
        (BlockedRequest(), "egress_blocked"),
        (IgnoreRequest("Forbidden by robots.txt"), "robots_disallowed"),
        (CannotResolveHostError("x"), "dns_error"),
        (tls_failure(), "tls_error"),
        (DownloadFailedError("closed"), "connection_error"),
        (DownloadCancelledError("over DOWNLOAD_MAXSIZE"), "too_large"),
        (ActionFailed("action 0 (click) failed"), "action_failed"),
        (Declared("whatever it says"), "too_large"),
        (BrowserError("the screenshot is larger than the limit of 9 bytes"), "too_large"),
        (
            BrowserError("the browser could not load the page (net::ERR_SSL_PROTOCOL_ERROR)"),
            "tls_error",
        ),
        (BrowserError("the browser could not render the page"), "internal"),
        (ValueError("a bug"), "internal"),
    ],
)
def test_each_failure_has_its_documented_code(exc, code):
    assert failure_code(exc) == failure_code(Failure(exc)) == code
    assert code in FAILURE_CODES


@pytest.mark.parametrize(
    "exc",
    [BlockedRequest(host="127.0.0.1"), exception_for("blocked", "http://127.0.0.1/")],
    ids=["static", "js"],
)
def test_a_refused_target_says_so_whichever_engine_refused_it(exc):
    order = ScrapeOrder(url="http://127.0.0.1/")
    assert failure_code(exc) == "egress_blocked"
    assert describe_failure(Failure(exc), order) == BLOCKED_MESSAGE


def test_a_failed_handshake_says_so():
    order = ScrapeOrder(url="https://example.com/")
    assert (
        describe_failure(Failure(tls_failure()), order)
        == "the TLS handshake with the target failed"
    )


def test_a_download_over_the_cap_says_so_in_words():
    order = ScrapeOrder(url="http://example.com/")
    failure = Failure(DownloadCancelledError("Received 17000000 bytes which is larger than ..."))
    assert describe_failure(failure, order, 1000) == too_large(1000)
    assert too_large(1000) == "the page is larger than the download limit of 1000 bytes"
