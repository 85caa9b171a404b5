"""What the request bodies share: the strict model, URL, header and cookie patterns, CSS
selectors and the bounds of their lengths."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
)

from service.core.vocabulary import (
    needs_engine,
)
from service.extraction import (
    InvalidSelector,
    compile_tags,
)

MAX_URL_LENGTH = 8192
MAX_SELECTORS = 50
MAX_TAGS = 50
SCREENSHOT_NEEDS_JS = needs_engine("screenshot", "js")
FULL_PAGE_NEEDS_SCREENSHOT = "'screenshot_full_page' needs \"screenshot\" in 'formats'"
ACTIONS_NEED_JS = '\'actions\' run in a browser: they need the js engine ("engine": "js")'
WAIT_FOR_NEEDS_JS = '\'wait_for\' waits in a browser: it needs the js engine ("engine": "js")'
SETTLE_MS_NEEDS_JS = '\'settle_ms\' is how a browser waits: it needs the js engine ("engine": "js")'
MAX_SETTLE_MS = 10_000
MAX_ACTIONS = 50
MAX_WAIT_MS = 120_000  # the largest timeout; a wait past the request's own fails when it runs
MAX_SCROLL_PX = 1_000_000
MAX_SELECTOR_LENGTH = 4096
MAX_TEXT_LENGTH = 65_536
MAX_SCRIPT_LENGTH = 65_536
MAX_KEY_LENGTH = 64
MAX_HEADERS = 32
MAX_HEADER_VALUE_LENGTH = 4096
MAX_COOKIES = 50
MAX_COOKIE_VALUE_LENGTH = 4096

# The documented ``url`` pattern, and the first check the service makes, so that what the schema
# accepts and what the service accepts are the same strings. Whitespace is spelled out (Python's
# str.isspace() set, which strip() removes) because ECMA, Python and Rust regexes disagree on \s.
_WS = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a"
    r"\u2028\u2029\u202f\u205f\u3000"
)
_PORT = r"(?:[0-9]{0,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
# No user:password@ (see CREDENTIALS_REFUSED); an @ after the host is the path's or query's.
URL_PATTERN = (
    rf"^[{_WS}]*[Hh][Tt][Tt][Pp][Ss]?://"
    rf"(?:[^{_WS}/?#@\[\]:]+|\[[0-9A-Fa-f:.]+\])(?::{_PORT})?(?:[/?#][^{_WS}]*)?[{_WS}]*$"
)
_HTTP_URL = re.compile(URL_PATTERN)
# A password in a target URL would be echoed in url and final_url and written to the logs; the
# caller sends credentials in a header instead, where they stay out of both.
CREDENTIALS_REFUSED = (
    "credentials (user:password@) in the URL are not supported; send them in an "
    "Authorization header ('headers')"
)

# Headers and cookies, written so that ECMA and Python regexes read them alike: ``(?![\s\S])`` is
# the end of the string in both (Python's ``$`` also matches before a final newline). The service
# checks them with these very patterns (a header's name against REFUSED_HEADERS first, to name
# it), so that the schema and the service agree.
_END = r"(?![\s\S])"
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]"
# Host and Content-Length are the connection's own, hop-by-hop headers are not the caller's to
# send through, and Proxy-* would reach the operator's proxies.
REFUSED_HEADERS = (
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
)


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in word)


_REFUSED = "|".join(_any_case(name) for name in REFUSED_HEADERS)
HEADER_NAME_PATTERN = rf"^(?!(?:{_REFUSED}){_END}|{_any_case('proxy-')}){_TOKEN}+{_END}"
HEADER_VALUE_PATTERN = rf"^[\t\x20-\x7E]*{_END}"  # printable ASCII and tabs: no CR, LF or NUL
COOKIE_NAME_PATTERN = rf"^{_TOKEN}+{_END}"
# RFC 6265's cookie-octet: no space, double quote, comma, semicolon or backslash
COOKIE_VALUE_PATTERN = rf"^[\x21\x23-\x2B\x2D-\x3A\x3C-\x5B\x5D-\x7E]*{_END}"
COOKIE_DOMAIN_PATTERN = rf"^\.?[0-9A-Za-z](?:[0-9A-Za-z.-]*[0-9A-Za-z])?{_END}"
COOKIE_PATH_PATTERN = rf"^/[\x21-\x3A\x3C-\x7E]*{_END}"
_VALID_NAME = re.compile(rf"^{_TOKEN}+{_END}")
_HEADER_VALUE = re.compile(HEADER_VALUE_PATTERN)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _css(selector: str) -> str:
    try:
        compile_tags("selector", [selector])
    except InvalidSelector:
        raise ValueError(f"invalid CSS selector {selector!r}") from None
    return selector


def _matching(pattern: str, what: str) -> AfterValidator:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if compiled.search(value) is None:
            raise ValueError(what)
        return value

    return AfterValidator(check)


Selector = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_SELECTOR_LENGTH,
        description="a CSS selector (no pseudo-elements); one that is not valid CSS is a 400 "
        "naming it",
    ),
    AfterValidator(_css),
]


def _whole(value: Any) -> Any:
    """JSON Schema counts ``1500.0`` as an integer, and so does the service."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Whole = BeforeValidator(_whole)
# a session's name (service.scrape.sessions), the caller's own
SESSION_NAME_PATTERN = r"^[A-Za-z0-9._:@-]{1,100}$"
SESSION_NAME_RULE = "1 to 100 letters, digits or . _ : @ -"
Milliseconds = Annotated[int, Field(ge=0, le=MAX_WAIT_MS, description="milliseconds"), Whole]
