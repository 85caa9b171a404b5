"""``detect_block``: which anti-bot vendor's block or challenge page a response is, if any.

How a response is judged, cheapest first (the rules are the table in
:mod:`service.antibot.rules`):

1. Decisive headers (the ``headers`` rules): ``cf-mitigated: challenge``,
   ``x-amzn-waf-action: captcha|challenge``, ``x-dd-b``/``x-datadome-cid`` on an error status,
   ``x-kpsdk-*`` on a 429, ``x-sucuri-block`` on an error status. These apply to every
   response, binary or not.
2. The body is skipped if it is clearly binary (by Content-Type or magic bytes). A body under
   64 bytes gets the ``short`` rules (Cloudflare's ``error code: 1020``), JSON the ``json``
   rules (DataDome's and HUMAN's answers to XHRs), other non-HTML text nothing: vendors serve
   their pages as HTML. Of an HTML (or untyped) body only the first 200 KB are looked at,
   lower-cased once.
3. Fast rejection: a page with many ``<a `` links is a real page (vendor pages have a
   handful at most); a page containing none of the rules' coarse needles ("captcha",
   "turnstile", "denied", ...) is a real page. A normal article stops here.
4. The ``html`` rules whose needles the page contains, in table order: a vendor-specific
   marker (``_cf_chl_opt``, ``captcha-delivery.com``, ``px-captcha``, ``Reference #18.…``,
   ``_Incapsula_Resource`` with an incident id, ...) AND the page shape of a block page:
   little visible text (<= 80 words, or <= 200 words on a challenge status such as
   403/429/503/405/202) and few links; last, the generic CAPTCHA walls: a reCAPTCHA /
   hCaptcha / Turnstile widget, no input fields of the user's own, at most 5 links and
   <= 60 words of visible text (<= 250 with a "verify you are human"-style phrase on a
   challenge status). The shape is only measured (:mod:`service.antibot.page`) once a rule's
   other conditions hold.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from service.antibot.page import Page
from service.antibot.rules import RULES, Rule

#: Only this much of the body is scanned.
SCAN_LIMIT = 200 * 1024
#: More raw ``<a `` than this and the page is a real page: even with a few anchors hidden in
#: scripts or comments it has more links than a block page's shape allows.
MAX_LINKS_FAST = 30
#: Bodies shorter than this get the ``short`` rules.
SHORT_BODY = 64

_BINARY_TYPES = frozenset(
    {
        "application/pdf",
        "application/zip",
        "application/gzip",
        "application/x-gzip",
        "application/x-tar",
        "application/x-bzip2",
        "application/x-xz",
        "application/x-7z-compressed",
        "application/x-rar-compressed",
        "application/vnd.rar",
        "application/octet-stream",
        "application/wasm",
        "application/msword",
        "application/x-shockwave-flash",
        "application/x-protobuf",
        "application/protobuf",
        "application/grpc",
        "application/java-archive",
        "application/x-msdownload",
    }
)
_BINARY_MAIN_TYPES = ("image/", "audio/", "video/", "font/", "model/")
_BINARY_MAGIC = (
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"RIFF",
    b"wOF2",
    b"wOFF",
)
_TEXT_MIME_HINTS = ("text/", "html", "xml", "json", "javascript")
#: A JSON block answer is a few hundred bytes.
_MAX_JSON_BLOCK = 8 * 1024

_HEADER_RULES = tuple(rule for rule in RULES if rule.scope == "headers")
_SHORT_RULES = tuple(rule for rule in RULES if rule.scope == "short")
_JSON_RULES = tuple(rule for rule in RULES if rule.scope == "json")
_HTML_RULES = tuple(rule for rule in RULES if rule.scope == "html")
#: Coarse needles: a body without any of them cannot match an ``html`` rule.
_NEEDLES = tuple(dict.fromkeys(needle for rule in _HTML_RULES for needle in rule.needles))


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    return str(value)


def _normalize_headers(headers: Mapping[Any, Any] | None) -> dict[str, str]:
    """Lower-cased names; several values (lists, Scrapy ``Headers``) joined with ``", "``."""
    out: dict[str, str] = {}
    if not headers:
        return out
    items: Iterable[tuple[Any, Any]] = headers.items()
    for key, value in items:
        name = _text(key).lower()
        if isinstance(value, list | tuple):
            text = ", ".join(_text(v) for v in value)
        elif value is None:
            text = ""
        else:
            text = _text(value)
        out[name] = f"{out[name]}, {text}" if name in out else text
    return out


def _is_binary(mime: str, body: bytes) -> bool:
    if mime:
        if mime.startswith(_BINARY_MAIN_TYPES) or mime in _BINARY_TYPES:
            return True
        if any(hint in mime for hint in _TEXT_MIME_HINTS):
            return False
        if mime.startswith("application/vnd."):
            return True
    return body[:4].startswith(_BINARY_MAGIC)


def _many_links(low: bytes) -> bool:
    """More than :data:`MAX_LINKS_FAST` ``<a `` tags; stops counting as soon as it knows."""
    pos = 0
    for _ in range(MAX_LINKS_FAST + 1):
        pos = low.find(b"<a ", pos) + 1
        if not pos:
            return False
    return True


@functools.cache
def _header_rules(status: int) -> tuple[frozenset[str] | None, tuple[Rule, ...]]:
    """The ``headers`` rules that a response of ``status`` can match, and the header names
    of which it needs one for any of them to hold (None: no such shortcut)."""
    rules = tuple(
        rule
        for rule in _HEADER_RULES
        if (rule.statuses is None or status in rule.statuses) and status >= rule.min_status
    )
    names: set[str] = set()
    for rule in rules:
        if rule.header is None or rule.header.prefix:
            return None, rules
        names.update(rule.header.names)
    return frozenset(names), rules


@functools.cache
def _html_rules(hits: frozenset[bytes]) -> tuple[Rule, ...]:
    """The ``html`` rules whose needles are among ``hits``, in table order."""
    return tuple(rule for rule in _HTML_RULES if not hits.isdisjoint(rule.needles))


def _detect_from_body(p: Page, hits: frozenset[bytes]) -> str | None:
    status, headers, low = p.status, p.headers, p.low
    for rule in _html_rules(hits):
        if rule.holds(status, headers, low) and rule.shape(p):
            return rule.vendor
    return None


def detect_block(status: int, headers: Mapping[Any, Any] | None, body: bytes) -> str | None:
    """Name of the anti-bot vendor whose block or challenge page this response is, or None.

    ``headers``: any mapping of header names (any case, str or bytes) to a value or a list
    of values, e.g. a ``dict`` or Scrapy ``Headers``. Vendors: :data:`VENDORS`.
    """
    h = _normalize_headers(headers)
    names, header_rules = _header_rules(status)
    if names is None or not names.isdisjoint(h):
        for rule in header_rules:
            if rule.holds(status, h, b""):
                return rule.vendor
    if not body:
        return None
    mime = h.get("content-type", "").split(";", 1)[0].strip().lower()
    if _is_binary(mime, body):
        return None
    if len(body) < SHORT_BODY:
        low = body.lower()
        for rule in _SHORT_RULES:
            if rule.holds(status, h, low):
                return rule.vendor
    if mime and "html" not in mime:
        if "json" in mime and len(body) <= _MAX_JSON_BLOCK:
            low = body.lower()
            for rule in _JSON_RULES:
                if rule.holds(status, h, low):
                    return rule.vendor
        # Vendors serve their pages as HTML: the source of a challenge page shown as
        # text/plain, or a script or stylesheet quoting one, is not a block.
        return None
    low = body[:SCAN_LIMIT].lower()
    if _many_links(low):
        return None
    hits = frozenset([needle for needle in _NEEDLES if needle in low])
    if not hits:
        return None
    return _detect_from_body(Page(status, low, h), hits)
