"""Recognise anti-bot block and challenge pages, so that such a scrape says ``blocked: true``.

A response that is a vendor's block page or challenge interstitial (Cloudflare, DataDome,
PerimeterX / HUMAN, Akamai Bot Manager, Imperva / Incapsula, AWS WAF, Sucuri, Kasada) or a
page that is nothing but a CAPTCHA (reCAPTCHA, hCaptcha, Turnstile) is annotated with
``request.meta["scrapespy_block_reason"] = "<vendor>"`` (``response.meta`` is the same dict);
the result pipeline turns that into ``blocked: true`` and billing skips the scrape. A
response that is not a block removes a reason left in the meta by an earlier attempt (a
retry or a re-issue through another proxy tier copies the meta). The response itself is
always passed on unchanged.

Switching it on: the service's settings list it below ``HttpCompressionMiddleware`` (590),
so that it sees decompressed bodies::

    DOWNLOADER_MIDDLEWARES = {"middlewares.antibot.AntiBotMiddleware": 580}

It is on by default; ``SCRAPESPY_ANTIBOT_ENABLED = False`` turns it off (``NotConfigured``).
Stats: ``scrapespy/antibot/blocked`` and ``scrapespy/antibot/blocked/<vendor>``.

How a page is judged (:func:`detect_block`), cheapest first:

1. Decisive headers: ``cf-mitigated: challenge``, ``x-amzn-waf-action: captcha|challenge``,
   ``x-dd-b``/``x-datadome-cid`` on an error status, ``x-kpsdk-*`` on a 429,
   ``x-sucuri-block`` on an error status. These apply to every response, binary or not.
2. The body is skipped if it is clearly binary (by Content-Type or magic bytes). JSON gets
   the two JSON rules (DataDome's and HUMAN's answers to XHRs), text/plain only
   Cloudflare's ``error code: 1020``, other non-HTML text nothing: vendors serve their
   pages as HTML. Of an HTML (or untyped) body only the first 200 KB are looked at,
   lower-cased once.
3. Fast rejection: a page with many ``<a `` links is a real page (vendor pages have a
   handful at most); a page containing none of a dozen coarse needles ("captcha",
   "turnstile", "denied", ...) is a real page. A normal article stops here.
4. Vendor rules: a vendor-specific marker (``_cf_chl_opt``, ``captcha-delivery.com``,
   ``px-captcha``, ``Reference #18.…``, ``_Incapsula_Resource`` with an incident id, ...)
   AND the page shape of a block page: little visible text (<= 80 words, or <= 200 words
   on a challenge status such as 403/429/503/405/202) and few links. The shape is only
   measured (regex strip of scripts/styles/tags) when a marker has already been seen.
5. Generic CAPTCHA walls: a reCAPTCHA / hCaptcha / Turnstile widget, no input fields of
   the user's own (a login or contact form with a CAPTCHA is not a wall), at most 5 links
   and <= 60 words of visible text (<= 250 with a "verify you are human"-style phrase on
   a challenge status).

Markers that also occur on ordinary pages are never enough on their own: ``server:
cloudflare``/``cf-ray``, Cloudflare's ``/cdn-cgi/challenge-platform/scripts/jsd`` beacon,
``x-datadome: protected``, PerimeterX's ``_pxAppId`` sensor, Incapsula's ``x-iinfo`` /
``visid_incap`` / ``_Incapsula_Resource?SWJIYLWA=`` script, Kasada's ``p.js`` and
``x-kpsdk-ct``, the AWS WAF JS SDK, Sucuri's ``x-sucuri-id``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

META_KEY = "scrapespy_block_reason"
STATS_PREFIX = "scrapespy/antibot/blocked"

VENDORS = (
    "cloudflare",
    "datadome",
    "perimeterx",
    "akamai",
    "imperva",
    "aws_waf",
    "sucuri",
    "kasada",
    "recaptcha",
    "hcaptcha",
    "turnstile",
)

#: Only this much of the body is scanned.
SCAN_LIMIT = 200 * 1024
#: Statuses that anti-bot systems answer challenges and blocks with.
CHALLENGE_STATUSES = frozenset({202, 401, 403, 405, 406, 429, 503})
#: Page shape of a vendor block page.
SMALL_WORDS = 80
SMALL_WORDS_ON_CHALLENGE_STATUS = 200
MAX_LINKS_BLOCK_PAGE = 20
#: More raw ``<a `` than this and the page is a real page: even with a few anchors hidden in
#: scripts or comments it has more links than :data:`MAX_LINKS_BLOCK_PAGE` allows.
MAX_LINKS_FAST = 30
#: Page shape of a generic CAPTCHA wall.
WALL_WORDS = 60
WALL_WORDS_WITH_PHRASE = 250
WALL_MAX_LINKS = 5
#: Average bytes per word used to bound the visible text of unspaced scripts (CJK).
_BYTES_PER_WORD = 12

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

#: Coarse needles: a body without any of them cannot match a body rule.
_NEEDLES = (
    b"captcha",
    b"turnstile",
    b"_cf_chl",
    b"cf-error-details",
    b"denied",
    b"blocked",
    b"incident",
    b"kpsdk",
    b"sucuri",
    b"awswaf",
    b"/_sec/",
)

_AKAMAI_REFERENCE_RE = re.compile(
    rb"reference(?:\s|&#32;|&nbsp;)+(?:#|&#35;)\s*\d{1,3}(?:\.|&#46;)[0-9a-f]{4,}"
)
_CF_ERROR_CODE_RE = re.compile(
    rb"error(?:\s+code)?:?\s*(?:<[^>]*>\s*)*10(?:0[5-9]|1[0-9]|2[0-9])\b"
)
_CF_PLAIN_ERROR_RE = re.compile(rb"\s*error code: 10(?:0[5-9]|1[0-9]|2[0-9])\s*$")
_INVISIBLE_RE = re.compile(
    rb"<(script|style|noscript|template|svg|head|iframe|object)\b.*?</\1\s*>|<!--.*?-->",
    re.S,
)
_TAG_RE = re.compile(rb"<[^>]*>")
_ENTITY_RE = re.compile(rb"&#?[a-z0-9]{1,8};")
_WORD_RE = re.compile(rb"[a-z0-9\x80-\xff]+")
_LINK_RE = re.compile(rb"<a\s[^>]*\bhref\s*=")
_FIELD_RE = re.compile(rb"<(input|textarea|select)\b([^>]*)>")
_INPUT_TYPE_RE = re.compile(rb"\btype\s*=\s*[\"']?([a-z-]+)")
_NON_USER_INPUT_TYPES = frozenset(
    {b"hidden", b"submit", b"button", b"image", b"reset", b"checkbox", b"radio"}
)
_WALL_PHRASES = (
    b"unusual traffic",
    b"not a robot",
    b"are you a robot",
    b"are you human",
    b"verify you are human",
    b"verify that you are human",
    b"verify you are a human",
    b"prove you are human",
    b"human verification",
    b"security check",
    b"automated requests",
    b"complete the captcha",
    b"solve the captcha",
)


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


def _detect_from_headers(status: int, h: Mapping[str, str]) -> str | None:
    if "challenge" in h.get("cf-mitigated", "").lower():
        return "cloudflare"
    if h.get("x-amzn-waf-action", "").strip().lower() in ("captcha", "challenge"):
        return "aws_waf"
    # ``x-datadome: protected``, ``x-sucuri-id`` and ``x-kpsdk-ct`` also come with ordinary
    # responses; these only come with (or only mean something on) a block.
    challenge_status = status in CHALLENGE_STATUSES
    if challenge_status and ("x-dd-b" in h or "x-datadome-cid" in h):
        return "datadome"
    if status == 429 and any(name.startswith("x-kpsdk-") for name in h):
        return "kasada"
    if challenge_status and "x-sucuri-block" in h:
        return "sucuri"
    return None


class _Shape:
    """Visible-text estimate of a page (regex based, no DOM)."""

    __slots__ = ("markup", "words", "chars", "links", "user_inputs")

    def __init__(self, low: bytes) -> None:
        #: the page without scripts, styles, comments, ... (tags and attributes kept)
        self.markup = stripped = _INVISIBLE_RE.sub(b" ", low)
        self.links = len(_LINK_RE.findall(stripped))
        self.user_inputs = 0
        for match in _FIELD_RE.finditer(stripped):
            attrs = match.group(2)
            if b"captcha" in attrs or b"turnstile" in attrs:
                continue  # the widget's own response field
            if match.group(1) == b"input":
                type_match = _INPUT_TYPE_RE.search(attrs)
                if type_match and type_match.group(1) in _NON_USER_INPUT_TYPES:
                    continue
            self.user_inputs += 1
        text = _ENTITY_RE.sub(b" ", _TAG_RE.sub(b" ", stripped))
        words = _WORD_RE.findall(text)
        self.words = len(words)
        self.chars = sum(map(len, words))


class _Page:
    __slots__ = ("status", "low", "headers", "_shape")

    def __init__(self, status: int, low: bytes, headers: Mapping[str, str]) -> None:
        self.status = status
        self.low = low
        self.headers = headers
        self._shape: _Shape | None = None

    @property
    def shape(self) -> _Shape:
        if self._shape is None:
            self._shape = _Shape(self.low)
        return self._shape

    def has(self, *needles: bytes) -> bool:
        low = self.low
        return any(needle in low for needle in needles)

    def small(self) -> bool:
        """Shape of a vendor block page: little visible text and few links."""
        shape = self.shape
        if shape.links > MAX_LINKS_BLOCK_PAGE:
            return False
        limit = SMALL_WORDS
        if self.status in CHALLENGE_STATUSES:
            limit = SMALL_WORDS_ON_CHALLENGE_STATUS
        return shape.words <= limit and shape.chars <= limit * _BYTES_PER_WORD


def _cloudflare(p: _Page, hits: set[bytes]) -> bool:
    # Challenge pages (managed, JS, interactive/Turnstile) all configure ``window._cf_chl_opt``
    # (older ones post a ``__cf_chl_*_tk__`` form). The ``/cdn-cgi/challenge-platform/scripts/jsd``
    # beacon of ordinary pages has neither.
    if (
        b"_cf_chl" in hits
        and p.has(
            b"_cf_chl_opt",
            b"__cf_chl_jschl_tk__",
            b"__cf_chl_captcha_tk__",
            b"__cf_chl_managed_tk__",
        )
        and p.small()
    ):
        return True
    # Block pages generated by Cloudflare itself (firewall rule, 1006-1029 errors). The same
    # template is used for the 52x origin errors, hence the status and wording checks.
    if b"cf-error-details" in hits and p.status in (403, 429):
        if (
            p.has(
                b"you have been blocked",
                b"attention required!",
                b"access denied",
                b"you are being rate limited",
                b"banned your",
            )
            or _CF_ERROR_CODE_RE.search(p.low)
        ) and p.small():
            return True
    return False


def _datadome(p: _Page) -> bool:
    return (
        p.has(b"captcha-delivery.com")
        and p.has(b"var dd=", b"var dd =", b"initialcid")
        and p.small()
    )


def _perimeterx(p: _Page) -> bool:
    if p.has(b"px-captcha", b"_pxcaptcha", b"captcha.px-cdn.net", b"captcha.px-cloud.net"):
        return p.small()
    if p.has(b'"blockscript"') and p.has(b'"appid":"px', b'"appid": "px') and p.small():
        return True  # JSON answer to an XHR
    return False


def _akamai(p: _Page, hits: set[bytes]) -> bool:
    if b"denied" in hits and p.status >= 400:
        reference = _AKAMAI_REFERENCE_RE.search(p.low) is not None or p.has(
            b"errors.edgesuite.net", b"errors&#46;edgesuite&#46;net"
        )
        if reference and p.has(b"access denied", b"permission to access") and p.small():
            return True
        if (
            "akamaighost" in p.headers.get("server", "").lower()
            and p.has(b"<title>access denied</title>")
            and p.small()
        ):
            return True
    if b"/_sec/" in hits and p.has(
        b"sec-if-cpt-container",
        b"/_sec/cp_challenge/",
        b"sec-cpt-if",
        b"/_sec/verify?provider=interstitial",
    ):
        return p.small()
    return False


def _imperva(p: _Page) -> bool:
    # Every Incapsula / Imperva block page quotes an incident id; the ``_Incapsula_Resource``
    # script that Incapsula injects into ordinary pages does not.
    if p.has(b"incapsula incident id") and p.small():
        return True
    if (
        p.has(b"_incapsula_resource")
        and p.has(b"cwudnsai", b"incident_id=", b'id="main-iframe"')
        and p.small()
    ):
        return True
    return p.status >= 400 and p.has(b"imperva") and p.has(b"incident id") and p.small()


def _aws_waf(p: _Page, hits: set[bytes]) -> bool:
    if b"awswaf" in hits:
        if (
            p.has(
                b"gokuprops",
                b"awswafcookiedomainlist",
                b"awswafcaptcha",
                b'id="challenge-container"',
                b'id="captcha-container"',
            )
            and p.small()
        ):
            return True
        if p.status in (202, 405) and p.small():
            return True
    if b"blocked" in hits and p.status == 403:
        return (
            p.has(b"generated by cloudfront")
            and p.has(b"request blocked")
            and not p.has(b"block access from your country")
            and p.small()
        )
    return False


def _sucuri(p: _Page) -> bool:
    if p.has(b"sucuri_cloudproxy_js"):
        return p.small()
    if p.status >= 400 and p.has(
        b"sucuri website firewall", b"access denied - sucuri", b"sucuri cloudproxy"
    ):
        return p.small()
    return False


def _kasada(p: _Page) -> bool:
    return p.has(b"ips.js") and p.small()


#: (generic wall, class of the widget's container element, explicit render call)
_WIDGETS = (
    ("turnstile", b"cf-turnstile", b"turnstile.render("),
    ("hcaptcha", b"h-captcha", b"hcaptcha.render("),
    ("recaptcha", b"g-recaptcha", b"grecaptcha.render("),
)


def _captcha_wall(p: _Page) -> str | None:
    found = next((w for w in _WIDGETS if p.has(w[1], w[2])), None)
    if found is None:
        return None
    widget, container, render_call = found
    if widget != "turnstile" and p.has(b'data-size="invisible"'):
        return None  # an invisible widget guards a form; nobody is asked to solve anything
    shape = p.shape
    # The widget must be on the page itself, not a string in some inline script or JSON.
    if not (container in shape.markup or p.has(render_call)):
        return None
    if shape.user_inputs or shape.links > WALL_MAX_LINKS:
        return None
    if shape.words <= WALL_WORDS and shape.chars <= WALL_WORDS * _BYTES_PER_WORD:
        return widget
    if (
        p.status in CHALLENGE_STATUSES
        and shape.words <= WALL_WORDS_WITH_PHRASE
        and shape.chars <= WALL_WORDS_WITH_PHRASE * _BYTES_PER_WORD
        and p.has(*_WALL_PHRASES)
    ):
        return widget
    return None


def _detect_from_json(low: bytes) -> str | None:
    """What DataDome and HUMAN answer XHR/fetch requests with instead of an HTML page."""
    if b"captcha-delivery.com" in low and (b"initialcid" in low or b'"url"' in low):
        return "datadome"
    if b'"blockscript"' in low and (b'"appid":"px' in low or b'"appid": "px' in low):
        return "perimeterx"
    return None


def _detect_from_body(p: _Page, hits: set[bytes]) -> str | None:
    if hits & {b"_cf_chl", b"cf-error-details"} and _cloudflare(p, hits):
        return "cloudflare"
    if b"captcha" in hits:
        if _datadome(p):
            return "datadome"
        if _perimeterx(p):
            return "perimeterx"
    if hits & {b"denied", b"/_sec/"} and _akamai(p, hits):
        return "akamai"
    if b"incident" in hits and _imperva(p):
        return "imperva"
    if hits & {b"awswaf", b"blocked"} and _aws_waf(p, hits):
        return "aws_waf"
    if b"sucuri" in hits and _sucuri(p):
        return "sucuri"
    if b"kpsdk" in hits and _kasada(p):
        return "kasada"
    if hits & {b"captcha", b"turnstile"}:
        return _captcha_wall(p)
    return None


def detect_block(status: int, headers: Mapping[Any, Any] | None, body: bytes) -> str | None:
    """Name of the anti-bot vendor whose block or challenge page this response is, or None.

    ``headers``: any mapping of header names (any case, str or bytes) to a value or a list
    of values, e.g. a ``dict`` or Scrapy ``Headers``. Vendors: cloudflare, datadome,
    perimeterx, akamai, imperva, aws_waf, sucuri, kasada, and the generic CAPTCHA walls
    recaptcha, hcaptcha, turnstile.
    """
    h = _normalize_headers(headers)
    vendor = _detect_from_headers(status, h)
    if vendor is not None or not body:
        return vendor
    mime = h.get("content-type", "").split(";", 1)[0].strip().lower()
    if _is_binary(mime, body):
        return None
    if len(body) < 64:
        if (
            status in (403, 429)
            and "cloudflare" in h.get("server", "").lower()
            and _CF_PLAIN_ERROR_RE.match(body.lower())
        ):
            return "cloudflare"  # the plain-text "error code: 1020" answer to non-browsers
    if mime and "html" not in mime:
        if "json" in mime and len(body) <= _MAX_JSON_BLOCK:
            return _detect_from_json(body.lower())
        # Vendors serve their pages as HTML: the source of a challenge page shown as
        # text/plain, or a script or stylesheet quoting one, is not a block.
        return None
    low = body[:SCAN_LIMIT].lower()
    if _many_links(low):
        return None
    hits = {needle for needle in _NEEDLES if needle in low}
    if not hits:
        return None
    return _detect_from_body(_Page(status, low, h), hits)


class AntiBotMiddleware:
    """Downloader middleware: annotates responses that are anti-bot pages (see module doc)."""

    def __init__(self, stats: StatsCollector | None = None) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AntiBotMiddleware:
        if not crawler.settings.getbool("SCRAPESPY_ANTIBOT_ENABLED", True):
            raise NotConfigured("SCRAPESPY_ANTIBOT_ENABLED is off")
        return cls(crawler.stats)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response:
        vendor = detect_block(response.status, response.headers, response.body)
        if vendor is None:
            # A retried or redirected request carries over the meta of the earlier attempt.
            request.meta.pop(META_KEY, None)
            return response
        request.meta[META_KEY] = vendor
        if self.stats is not None:
            self.stats.inc_value(STATS_PREFIX)
            self.stats.inc_value(f"{STATS_PREFIX}/{vendor}")
        logger.debug("anti-bot page (%s) at %s (HTTP %s)", vendor, response.url, response.status)
        return response
