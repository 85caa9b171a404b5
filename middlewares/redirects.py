"""Scrapy's redirects, with the ones the service does not follow as failures of their own.

Scrapy's ``RedirectMiddleware`` hands on a 3xx whose ``Location`` is not http(s) (``file:``,
``gopher:``, ``data:``) as the page, which the service then answered as a success, and billed;
a ``javascript:`` one, or one with credentials (``user:password@``), failed with a bare
``ValueError``, and a chain longer than ``REDIRECT_MAX_TIMES`` (a loop) with an
``IgnoreRequest`` that said nothing of redirects. Each is a :class:`RedirectFailed` here
(``error_code`` ``redirect_failed``, unbilled), with a message that names the scheme, never the
whole ``Location``. A meta refresh that is not followed leaves its page as it is, as a browser
would; its loops fail the same way (:class:`MetaRefreshMiddleware`).

A redirect keeps the ``Referer`` as a browser keeps it (Fetch, "HTTP-redirect fetch"): the
first request's referrer (the caller's ``Referer``, if any), cut to what the referrer policy
lets the new target see (``strict-origin-when-cross-origin``, a browser's default, or the
redirect's ``Referrer-Policy``). A meta refresh is a navigation from its page, which is then
the referrer. Scrapy's ``RefererMiddleware`` is not used (each response yields one item, never
a request); without it Scrapy dropped the header on every redirect, and warned so at each start.

    DOWNLOADER_MIDDLEWARES = {
        "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
        "middlewares.redirects.RedirectMiddleware": 600,
        "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
        "middlewares.redirects.MetaRefreshMiddleware": 579,
    }
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from scrapy import Request
from scrapy.downloadermiddlewares import redirect
from scrapy.exceptions import IgnoreRequest
from scrapy.spidermiddlewares import referer

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Response

REDIRECT_STATUSES = frozenset((301, 302, 303, 307, 308))
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}")


class RedirectFailed(IgnoreRequest):
    """A redirect the service does not follow: a loop, too long a chain, or to a scheme other
    than http and https."""


# the meta key of the referrer a chain of redirects keeps (its first request's Referer)
REFERRER = "scrapespy_referrer"
POLICIES: dict[str, type[referer.ReferrerPolicy]] = {
    policy.name: policy
    for policy in (
        referer.NoReferrerPolicy,
        referer.NoReferrerWhenDowngradePolicy,
        referer.SameOriginPolicy,
        referer.OriginPolicy,
        referer.StrictOriginPolicy,
        referer.OriginWhenCrossOriginPolicy,
        referer.StrictOriginWhenCrossOriginPolicy,
        referer.UnsafeUrlPolicy,
    )
}
BROWSER_POLICY = referer.StrictOriginWhenCrossOriginPolicy


def referrer_policy(response: Response) -> referer.ReferrerPolicy:
    """The policy ``response`` sets (its ``Referrer-Policy``, the last known token, as a browser
    parses it), else a browser's default."""
    header = (response.headers.get("Referrer-Policy") or b"").decode("latin-1")
    for token in reversed(header.lower().split(",")):
        if token.strip() in POLICIES:
            return POLICIES[token.strip()]()
    return BROWSER_POLICY()


def set_referer(redirected: Request, referrer: str | None, response: Response) -> None:
    """``redirected``'s Referer: ``referrer`` as ``response``'s policy lets its URL see it."""
    redirected.headers.pop("Referer", None)
    redirected.meta[REFERRER] = referrer
    if referrer:
        value = referrer_policy(response).referrer(referrer, redirected.url)
        if value:
            redirected.headers["Referer"] = value


class RedirectMiddleware(redirect.RedirectMiddleware):
    def _engine_started(self) -> None:
        """Nothing to look for: :meth:`handle_referer` needs no ``RefererMiddleware``."""

    def handle_referer(self, request: Request, response: Response) -> None:
        # ``request`` is the redirected copy: its meta and headers are those of the last hop
        if REFERRER in request.meta:
            referrer = request.meta[REFERRER]
        else:
            sent = request.headers.get("Referer")
            referrer = sent.decode("latin-1") if sent else None
        set_referer(request, referrer, response)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        try:
            outcome = super().process_response(request, response)
        except ValueError:  # Scrapy could not make a request of the Location
            count(self, "unfollowable")
            raise RedirectFailed(unfollowable(request, response)) from None
        except IgnoreRequest:  # the only one Scrapy raises here: max redirections reached
            raise too_many(self) from None
        if isinstance(outcome, Request) and with_credentials(outcome.url):
            count(self, "unfollowable")
            raise RedirectFailed(CREDENTIALS)
        if outcome is response and self._left_unfollowed(request, response):
            count(self, "unfollowable")
            raise RedirectFailed(unfollowable(request, response))
        return outcome

    def _left_unfollowed(self, request: Request, response: Response) -> bool:
        """A redirect Scrapy would follow but for its ``Location``'s scheme."""
        meta = request.meta
        opted_out = (
            meta.get("dont_redirect", False)
            or meta.get("handle_httpstatus_all", False)
            or response.status in meta.get("handle_httpstatus_list", ())
            or response.status in getattr(self.crawler.spider, "handle_httpstatus_list", ())
        )
        return (
            not opted_out
            and response.status in REDIRECT_STATUSES
            and "Location" in response.headers
        )


class MetaRefreshMiddleware(redirect.MetaRefreshMiddleware):
    def _engine_started(self) -> None:
        """Nothing to look for: :meth:`handle_referer` needs no ``RefererMiddleware``."""

    def handle_referer(self, request: Request, response: Response) -> None:
        set_referer(request, response.url, response)  # the refreshing page navigates

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        try:
            outcome = super().process_response(request, response)
        except ValueError:  # a refresh to javascript: and the like: the page is the answer
            return response
        except IgnoreRequest:  # the only one Scrapy raises here: max redirections reached
            raise too_many(self) from None
        if isinstance(outcome, Request) and with_credentials(outcome.url):
            return response
        return outcome


CREDENTIALS = (
    "the target redirected to a URL with credentials (user:password@), which the service does "
    "not follow"
)


def with_credentials(url: str) -> bool:
    try:
        return "@" in urlsplit(url).netloc
    except ValueError:
        return False


def count(middleware: redirect.BaseRedirectMiddleware, what: str) -> None:
    if middleware.crawler.stats is not None:
        middleware.crawler.stats.inc_value(f"scrapespy/redirects/{what}")


def too_many(middleware: redirect.BaseRedirectMiddleware) -> RedirectFailed:
    count(middleware, "too_many")
    return RedirectFailed(too_many_message(middleware.max_redirect_times))


def too_many_message(max_times: int) -> str:
    return (
        f"the target redirected more than {max_times} times (a redirect loop, or too long a chain)"
    )


def unfollowable(request: Request, response: Response) -> str:
    """Why the redirect of ``response`` is not followed, naming its scheme alone (the rest of
    the Location may be long, or carry what the target should not have sent)."""
    location = (response.headers.get("Location") or b"").decode("latin-1").strip()
    return unfollowable_location(request.url, location)


def unfollowable_location(url: str, location: str) -> str:
    """:func:`unfollowable` for a redirect of ``url`` to ``location``."""
    try:
        scheme = urlsplit(urljoin(url, location.strip())).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme in ("http", "https") or not _SCHEME.fullmatch(scheme):
        return "the target redirected to a URL that the service cannot follow"
    return f"the target redirected to a {scheme}: URL, which the service does not follow"


def refused_redirect(url: str, location: str, hops: int, max_times: int) -> str | None:
    """Why the ``hops``-th redirect of a chain, of ``url`` to ``location``, is not followed, as
    this middleware says it, or None: for the js engine, whose browser follows redirects itself
    (service.browser.read)."""
    if hops > max_times:
        return too_many_message(max_times)
    try:
        target = urljoin(url, location.strip())
        scheme = urlsplit(target).scheme.lower()
    except ValueError:
        return "the target redirected to a URL that the service cannot follow"
    if scheme not in ("http", "https"):
        return unfollowable_location(url, location)
    return CREDENTIALS if with_credentials(target) else None
