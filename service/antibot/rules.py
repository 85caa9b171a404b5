"""The detection rules: one ordered table, :data:`RULES`, that the detector walks.

A row is one way a vendor's block or challenge page is recognised; every condition it gives
must hold. Adding a vendor, or another page of a known vendor, is adding a row. Rows are
tried in table order within their scope, and the first that holds names the vendor:

- ``headers``: the response headers (and status) alone, on every response, binary or not.
  Only headers that never come with an ordinary response belong here.
- ``short``: a textual body under 64 bytes, lower-cased (Cloudflare's plain-text error).
- ``json``: a JSON body of at most 8 KB, lower-cased (the answers vendors give XHRs).
- ``html``: the first 200 KB of an HTML or untyped body, lower-cased, which has survived the
  fast rejection (see :mod:`service.antibot.detector`). A row names the coarse ``needles``
  it needs (one of them must be in the page; the detector's needle list is made of them),
  and its ``shape`` is checked last, as it measures the page: a block page by default.

Markers that also occur on ordinary pages are never enough on their own: ``server:
cloudflare``/``cf-ray``, Cloudflare's ``/cdn-cgi/challenge-platform/scripts/jsd`` beacon,
``x-datadome: protected``, PerimeterX's ``_pxAppId`` sensor, Incapsula's ``x-iinfo`` /
``visid_incap`` / ``_Incapsula_Resource?SWJIYLWA=`` script, Kasada's ``p.js`` and
``x-kpsdk-ct``, the AWS WAF JS SDK, Sucuri's ``x-sucuri-id``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from service.antibot.page import CHALLENGE_STATUSES, Page, block_page, captcha_wall

Scope = Literal["headers", "short", "json", "html"]
#: A byte string to find in the lower-cased body, or a pattern to search it for.
Marker = bytes | re.Pattern[bytes]


@dataclass(frozen=True, slots=True)
class Header:
    """A response header that is present: one of ``names`` (lower-case; with ``prefix``, any
    header whose name begins with one of them), whose lower-cased value contains
    ``contains`` and, stripped, is one of ``equals`` (when these are given)."""

    names: tuple[str, ...]
    contains: str = ""
    equals: frozenset[str] = frozenset()
    prefix: bool = False

    def holds(self, headers: Mapping[str, str]) -> bool:
        if self.prefix:
            return any(name.startswith(self.names) for name in headers)
        for name in self.names:
            value = headers.get(name)
            if value is None:
                continue
            if self.contains and self.contains not in value.lower():
                continue
            if self.equals and value.strip().lower() not in self.equals:
                continue
            return True
        return False


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of :data:`RULES`: ``vendor`` if every condition given holds."""

    vendor: str
    scope: Scope
    #: html: at least one of these coarse needles is in the page
    needles: frozenset[bytes] = frozenset()
    #: each group: at least one of its markers is in the body
    markers: tuple[tuple[Marker, ...], ...] = ()
    #: none of these is in the body
    absent: tuple[bytes, ...] = ()
    statuses: frozenset[int] | None = None
    min_status: int = 0
    header: Header | None = None
    #: html: the page's shape, checked last
    shape: Callable[[Page], bool] = block_page

    def __post_init__(self) -> None:
        # A row the detector would silently never try, or try on the wrong thing.
        if (self.scope == "html") != bool(self.needles):
            raise ValueError(f"{self.vendor}: needles are for html rules, which need them")
        if self.scope == "headers" and (self.header is None or self.markers or self.absent):
            raise ValueError(f"{self.vendor}: a headers rule tests a header and no body")

    def holds(self, status: int, headers: Mapping[str, str], low: bytes) -> bool:
        """Whether the status, header and marker conditions hold (not needles nor shape)."""
        if self.statuses is not None and status not in self.statuses:
            return False
        if status < self.min_status:
            return False
        if self.header is not None and not self.header.holds(headers):
            return False
        for group in self.markers:
            for marker in group:
                if marker in low if isinstance(marker, bytes) else marker.search(low):
                    break
            else:
                return False
        for marker in self.absent:
            if marker in low:
                return False
        return True


def _needles(*needles: bytes) -> frozenset[bytes]:
    return frozenset(needles)


_ANY_ERROR = 400
_CF_ERROR_CODE_RE = re.compile(
    rb"error(?:\s+code)?:?\s*(?:<[^>]*>\s*)*10(?:0[5-9]|1[0-9]|2[0-9])\b"
)
_CF_PLAIN_ERROR_RE = re.compile(rb"\A\s*error code: 10(?:0[5-9]|1[0-9]|2[0-9])\s*$")
_AKAMAI_REFERENCE_RE = re.compile(
    rb"reference(?:\s|&#32;|&nbsp;)+(?:#|&#35;)\s*\d{1,3}(?:\.|&#46;)[0-9a-f]{4,}"
)
_TURNSTILE = (b"cf-turnstile", b"turnstile.render(")
_HCAPTCHA = (b"h-captcha", b"hcaptcha.render(")
_RECAPTCHA = (b"g-recaptcha", b"grecaptcha.render(")
#: an invisible widget guards a form; nobody is asked to solve anything
_INVISIBLE_WIDGET = b'data-size="invisible"'

RULES: tuple[Rule, ...] = (
    # ------------------------------------------------------------------ decisive headers
    Rule("cloudflare", "headers", header=Header(("cf-mitigated",), contains="challenge")),
    Rule(
        "aws_waf",
        "headers",
        header=Header(("x-amzn-waf-action",), equals=frozenset({"captcha", "challenge"})),
    ),
    # ``x-datadome: protected``, ``x-sucuri-id`` and ``x-kpsdk-ct`` also come with ordinary
    # responses; these only come with (or only mean something on) a block.
    Rule(
        "datadome",
        "headers",
        statuses=CHALLENGE_STATUSES,
        header=Header(("x-dd-b", "x-datadome-cid")),
    ),
    Rule("kasada", "headers", statuses=frozenset({429}), header=Header(("x-kpsdk-",), prefix=True)),
    Rule("sucuri", "headers", statuses=CHALLENGE_STATUSES, header=Header(("x-sucuri-block",))),
    # ------------------------------------------------------------------ short text bodies
    # The plain-text "error code: 1020" Cloudflare answers non-browsers with.
    Rule(
        "cloudflare",
        "short",
        markers=((_CF_PLAIN_ERROR_RE,),),
        statuses=frozenset({403, 429}),
        header=Header(("server",), contains="cloudflare"),
    ),
    # ------------------------------------------------------------------ JSON answers to XHRs
    Rule(
        "datadome",
        "json",
        markers=((b"captcha-delivery.com",), (b"initialcid", b'"url"')),
    ),
    Rule(
        "perimeterx",
        "json",
        markers=((b'"blockscript"',), (b'"appid":"px', b'"appid": "px')),
    ),
    # ------------------------------------------------------------------ HTML pages
    # Cloudflare challenge pages (managed, JS, interactive/Turnstile) all configure
    # ``window._cf_chl_opt`` (older ones post a ``__cf_chl_*_tk__`` form). The
    # ``/cdn-cgi/challenge-platform/scripts/jsd`` beacon of ordinary pages has neither.
    Rule(
        "cloudflare",
        "html",
        needles=_needles(b"_cf_chl"),
        markers=(
            (
                b"_cf_chl_opt",
                b"__cf_chl_jschl_tk__",
                b"__cf_chl_captcha_tk__",
                b"__cf_chl_managed_tk__",
            ),
        ),
    ),
    # Block pages generated by Cloudflare itself (firewall rule, 1006-1029 errors). The same
    # template is used for the 52x origin errors, hence the status and wording checks.
    Rule(
        "cloudflare",
        "html",
        needles=_needles(b"cf-error-details"),
        statuses=frozenset({403, 429}),
        markers=(
            (
                b"you have been blocked",
                b"attention required!",
                b"access denied",
                b"you are being rate limited",
                b"banned your",
                _CF_ERROR_CODE_RE,
            ),
        ),
    ),
    Rule(
        "datadome",
        "html",
        needles=_needles(b"captcha"),
        markers=((b"captcha-delivery.com",), (b"var dd=", b"var dd =", b"initialcid")),
    ),
    Rule(
        "perimeterx",
        "html",
        needles=_needles(b"captcha"),
        markers=((b"px-captcha", b"_pxcaptcha", b"captcha.px-cdn.net", b"captcha.px-cloud.net"),),
    ),
    Rule(  # the JSON answer to an XHR, served untyped or as HTML
        "perimeterx",
        "html",
        needles=_needles(b"captcha"),
        markers=((b'"blockscript"',), (b'"appid":"px', b'"appid": "px')),
    ),
    Rule(  # "Reference #18.…" or a link to errors.edgesuite.net
        "akamai",
        "html",
        needles=_needles(b"denied"),
        min_status=_ANY_ERROR,
        markers=(
            (_AKAMAI_REFERENCE_RE, b"errors.edgesuite.net", b"errors&#46;edgesuite&#46;net"),
            (b"access denied", b"permission to access"),
        ),
    ),
    Rule(
        "akamai",
        "html",
        needles=_needles(b"denied"),
        min_status=_ANY_ERROR,
        header=Header(("server",), contains="akamaighost"),
        markers=((b"<title>access denied</title>",),),
    ),
    Rule(  # Bot Manager's interstitial and challenge
        "akamai",
        "html",
        needles=_needles(b"/_sec/"),
        markers=(
            (
                b"sec-if-cpt-container",
                b"/_sec/cp_challenge/",
                b"sec-cpt-if",
                b"/_sec/verify?provider=interstitial",
            ),
        ),
    ),
    # Every Incapsula / Imperva block page quotes an incident id; the ``_Incapsula_Resource``
    # script that Incapsula injects into ordinary pages does not.
    Rule("imperva", "html", needles=_needles(b"incident"), markers=((b"incapsula incident id",),)),
    Rule(
        "imperva",
        "html",
        needles=_needles(b"incident"),
        markers=((b"_incapsula_resource",), (b"cwudnsai", b"incident_id=", b'id="main-iframe"')),
    ),
    Rule(
        "imperva",
        "html",
        needles=_needles(b"incident"),
        min_status=_ANY_ERROR,
        markers=((b"imperva",), (b"incident id",)),
    ),
    Rule(
        "aws_waf",
        "html",
        needles=_needles(b"awswaf"),
        markers=(
            (
                b"gokuprops",
                b"awswafcookiedomainlist",
                b"awswafcaptcha",
                b'id="challenge-container"',
                b'id="captcha-container"',
            ),
        ),
    ),
    Rule("aws_waf", "html", needles=_needles(b"awswaf"), statuses=frozenset({202, 405})),
    Rule(  # CloudFront's own "Request blocked" page, but not its geo-restriction page
        "aws_waf",
        "html",
        needles=_needles(b"blocked"),
        statuses=frozenset({403}),
        markers=((b"generated by cloudfront",), (b"request blocked",)),
        absent=(b"block access from your country",),
    ),
    Rule("sucuri", "html", needles=_needles(b"sucuri"), markers=((b"sucuri_cloudproxy_js",),)),
    Rule(
        "sucuri",
        "html",
        needles=_needles(b"sucuri"),
        min_status=_ANY_ERROR,
        markers=((b"sucuri website firewall", b"access denied - sucuri", b"sucuri cloudproxy"),),
    ),
    Rule("kasada", "html", needles=_needles(b"kpsdk"), markers=((b"ips.js",),)),
    # Generic CAPTCHA walls. The first widget found on the page decides, hence each row's
    # ``absent`` names the widgets of the rows above it.
    Rule(
        "turnstile",
        "html",
        needles=_needles(b"captcha", b"turnstile"),
        markers=(_TURNSTILE,),
        shape=captcha_wall(*_TURNSTILE),
    ),
    Rule(
        "hcaptcha",
        "html",
        needles=_needles(b"captcha", b"turnstile"),
        markers=(_HCAPTCHA,),
        absent=(*_TURNSTILE, _INVISIBLE_WIDGET),
        shape=captcha_wall(*_HCAPTCHA),
    ),
    Rule(
        "recaptcha",
        "html",
        needles=_needles(b"captcha", b"turnstile"),
        markers=(_RECAPTCHA,),
        absent=(*_TURNSTILE, *_HCAPTCHA, _INVISIBLE_WIDGET),
        shape=captcha_wall(*_RECAPTCHA),
    ),
)

#: Every vendor a rule can name, in table order.
VENDORS: tuple[str, ...] = tuple(dict.fromkeys(rule.vendor for rule in RULES))
