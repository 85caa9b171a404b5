"""Firecrawl's scrape options (v1 and v2) as a native ``POST /scrape`` request.

v1 and v2 differ in a few names and shapes (v2's formats may be objects, v1 has
``geolocation`` and ``parsePDF``); one translation reads both. What it decides, field by field:

- ``formats``: markdown, html, rawHtml, links, images, screenshot (``fullPage`` or
  ``screenshot@fullPage``: the whole page); json (v2's ``{"type": "json", "prompt",
  "schema"}``, v1's ``"json"`` with ``jsonOptions``) and summary are the native
  ``json: {"prompt", "schema"}`` and ``summary``, made by the operator's language model (a
  400 without one). changeTracking (v2's ``{"type": "changeTracking", "modes", "tag",
  "prompt", "schema"}``, v1's ``"changeTracking"`` with ``changeTrackingOptions``) is the
  native ``change_tracking`` format and options, its json mode by the operator's model. Those
  that need more of a model (query, branding...) are a 400 naming the format;
- the engine is ``js`` when something needs a browser (a screenshot, actions, ``waitFor``,
  ``mobile``), else ``auto``: static, then js when the page is a JavaScript shell, billed at
  the engine used;
- ``proxy``: absent is ``none``, ``basic`` is ``datacenter``, ``stealth`` (and its newer name
  ``enhanced``) is ``residential``, ``auto`` is ``auto``;
- a URL without a scheme is ``http://``, as Firecrawl reads it;
- milliseconds (``timeout``, ``waitFor``, ``maxAge``) become the native seconds or ``ms``;
  a ``timeout`` over the 120 s bound is a 400 naming ``timeout``;
- ``location`` (v1's ``geolocation`` too) is the native ``location``: ``country`` picks that
  country's proxies, ``languages`` the ``Accept-Language`` header (the caller's own header
  wins) and the browser's locale; a country without ``proxy`` is ``proxy: "auto"`` (the
  cheapest tier that offers the country, then the next one while blocked), since Firecrawl
  needs no proxy field for it;
- ``maxAge``: Firecrawl's SDKs ask for cached answers by default (4 hours). It is honoured
  with the native ``max_age``: only this account's own successful scrape of the very same
  request, never older than the operator's ``SCRAPESPY_CACHE_MAX_AGE_SECONDS``, free, and
  marked in the document (``cacheState: "hit"``, ``creditsUsed: 0``), so a cached answer is
  never passed off as a fresh one. ``maxAge: 0``, ``storeInCache: false`` and
  ``zeroDataRetention: true`` scrape afresh and keep nothing;
- ``profile: {"name", "saveChanges"}`` (v2's persistent browser state) is the native
  ``session`` of that name; ``saveChanges: false`` is a 400 (a session always keeps what a
  scrape leaves), and a profile's scrape is never answered from the cache (``maxAge``);
- the SDKs' bookkeeping (``origin``, ``integration``) is ignored; a flag whose value asks for
  what the server does anyway is accepted, any other value a 400 naming it; everything else
  is a 400 naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from service.core.errors import BadRequest
from service.core.formats import OUTPUTS
from service.firecrawl.actions import native_steps
from service.firecrawl.formats import bad, change_tracking, model_json, native_formats

Version = Literal[1, 2]

MAX_TIMEOUT_MS = 120_000  # the native bound, 120 s

# what the SDKs add to every request for their own bookkeeping: accepted, ignored
BOOKKEEPING = frozenset({"origin", "integration"})


PROXIES = {
    "basic": "datacenter",
    "stealth": "residential",
    "enhanced": "residential",
    "auto": "auto",
}

# flags either value of which the server can honour (onlyMainContent, mobile, storeInCache and
# zeroDataRetention are read below; ads are no part of the main content, and base64 images
# none of markdown's)
FLAGS = frozenset(
    {
        "blockAds",
        "removeBase64Images",
        "storeInCache",
        "zeroDataRetention",
        "mobile",
        "onlyMainContent",
    }
)
# flags that ask for something by their value: the value the server does anyway is accepted;
# the message says why the other is not
ONLY_VALUES: dict[str, tuple[tuple[bool, ...], str]] = {
    "fastMode": ((False,), "fast mode is not offered by this server"),
    "skipTlsVerification": ((True,), "this server does not verify the target's certificate"),
    "lockdown": ((False,), "lockdown (cache only) is not offered by this server"),
    "checkPromptInjection": ((False,), "prompt injection checks are not offered by this server"),
    "redactPII": ((False,), "PII redaction is not offered by this server"),
    "domainTools": ((False,), "domain tools are not offered by this server"),
    "parsePDF": ((True,), "this server always converts a PDF the target answers"),
}
# fields for features this server does not have
REFUSED_FIELDS = {
    "extract": "the extract format (a language model)",
    "agent": "agents",
    "useMock": "mocks",
    "minAge": "cache-only answers",
    "threatProtection": "threat protection",
    "auditMetadata": "audit logs",
    "toolDetail": "domain tools",
}
# native field -> Firecrawl's, to name a field in a native validation message
FIRECRAWL_NAMES = {
    "url": "url",
    "timeout": "timeout",
    "formats": "formats",
    "screenshot_full_page": "formats",
    "only_main_content": "onlyMainContent",
    "include_tags": "includeTags",
    "exclude_tags": "excludeTags",
    "wait_for": "waitFor",
    "headers": "headers",
    "actions": "actions",
    "proxy_type": "proxy",
    "max_age": "maxAge",
    "session": "profile.name",
    "location": "location",
    "change_tracking": "changeTracking",
}
_STEP_NAMES = {"ms": "milliseconds", "full_page": "fullPage", "script": "script"}
_NATIVE_NAME = re.compile(
    rf"(?<![\w.-])({'|'.join(FIRECRAWL_NAMES)})((?:\[\d+\])?)(?:\.([a-z_]+))?(?![\w-])"
)


def _milliseconds(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise bad(name, "must be a whole number of milliseconds, 0 or more")
    return value


def _checked_flags(options: dict[str, Any]) -> dict[str, bool]:
    """The flags (:data:`FLAGS`, :data:`ONLY_VALUES`), taken out of ``options``, each checked."""
    flags = {}
    for name in [name for name in options if name in FLAGS or name in ONLY_VALUES]:
        value = options.pop(name)
        if type(value) is not bool:
            raise bad(name, "must be true or false")
        accepted, why = ONLY_VALUES.get(name, ((True, False), ""))
        if value not in accepted:
            raise bad(name, why)
        flags[name] = value
    return flags


def _location(options: dict[str, Any]) -> dict[str, Any]:
    """The native ``location`` for Firecrawl's (v1: ``geolocation``), checked by the native
    model; absent or null fields are left out."""
    native: dict[str, Any] = {}
    for where in ("location", "geolocation"):
        if where not in options:
            continue
        value = options.pop(where)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise bad(where, "must be an object")
        for name in value:
            if name not in ("country", "languages"):
                raise BadRequest(f"unknown field '{where}.{name}'")
        native.update({name: found for name, found in value.items() if found is not None})
    return {"location": native} if native else {}


def _headers(options: dict[str, Any]) -> dict[str, Any]:
    headers = options.pop("headers", None) or {}
    if not isinstance(headers, Mapping):
        raise bad("headers", "must be an object of header names to values")
    return dict(headers)


def _timeout(value: Any) -> dict[str, Any]:
    timeout = _milliseconds(value, "timeout")
    if timeout is None:
        return {}
    if not 0 < timeout <= MAX_TIMEOUT_MS:
        raise bad("timeout", f"must be more than 0 and at most {MAX_TIMEOUT_MS} ms")
    return {"timeout": timeout / 1000}


def _wait_for(value: Any) -> dict[str, Any]:
    wait_ms = _milliseconds(value, "waitFor")
    return {"wait_for": {"ms": wait_ms}} if wait_ms else {}


def _proxy(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if value not in PROXIES:
        raise bad("proxy", f"must be one of {', '.join(PROXIES)}")
    return {"proxy_type": PROXIES[value]}


def _parsers(value: Any) -> dict[str, Any]:
    """``pdf`` (what this server does with any PDF: its text layer) is accepted, as ``[]`` is
    for a page that is no PDF; OCR, page limits and image parsers are refused."""
    if value is None:
        return {}
    if not isinstance(value, list):
        raise bad("parsers", "must be a list")
    for parser in value:
        if parser == "pdf":
            continue
        if (
            isinstance(parser, dict)
            and parser.get("type") == "pdf"
            and set(parser) <= {"type", "mode"}
            and parser.get("mode", "fast") in ("fast", "auto")
        ):
            continue
        raise bad(
            "parsers",
            'only "pdf" (its text layer, mode "fast" or "auto") is offered: no OCR, maxPages '
            "or image parsing",
        )
    return {}


def _with_scheme(url: Any) -> dict[str, Any]:
    """Firecrawl reads a URL without a scheme (``example.com/a``) as ``http://``."""
    if isinstance(url, str) and url.strip() and "://" not in url:
        url = "http://" + url.strip()
    return {"url": url}


# Firecrawl's field -> the native fields it gives
PROFILE_KEYS = frozenset({"name", "saveChanges"})
READ_ONLY_PROFILE = (
    "false (a profile read without keeping what the scrape leaves) is not offered by this "
    "server: a profile is a session, which keeps what each scrape leaves"
)


def _profile(value: Any) -> dict[str, Any]:
    """v2's ``profile: {"name", "saveChanges"}``, a persistent browser state by name, is the
    native ``session`` of that name (cookies, localStorage, the proxy exit), which always
    saves; ``saveChanges: false`` is refused rather than silently saving."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise bad("profile", 'must be an object {"name": string, "saveChanges": boolean}')
    for key in sorted(set(value) - PROFILE_KEYS):
        raise bad(f"profile.{key}", "unknown field")
    if value.get("saveChanges", True) is not True:
        raise bad("profile.saveChanges", READ_ONLY_PROFILE)
    return {"session": value["name"]}


FIELDS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "url": _with_scheme,
    "includeTags": lambda tags: {"include_tags": tags},
    "excludeTags": lambda tags: {"exclude_tags": tags},
    "timeout": _timeout,
    "waitFor": _wait_for,
    "actions": lambda actions: {} if actions is None else {"actions": native_steps(actions)},
    "proxy": _proxy,
    "parsers": _parsers,
    "profile": _profile,
}


def _max_age(value: Any, flags: Mapping[str, bool]) -> dict[str, Any]:
    max_age = _milliseconds(value, "maxAge")
    keeps = flags.get("storeInCache", True) and not flags.get("zeroDataRetention", False)
    return {"max_age": max_age // 1000} if max_age and keeps else {}


def _engine(native: Mapping[str, Any], mobile: bool) -> str:
    """``js`` when something needs the browser, else ``auto``."""
    rendered = any(OUTPUTS[name].needs == "js" for name in native["formats"])  # a screenshot...
    needs_browser = rendered or native.get("actions")
    return "js" if needs_browser or native.get("wait_for") or mobile else "auto"


def native_scrape(data: Mapping[str, Any], version: Version) -> dict[str, Any]:
    """The native ``POST /scrape`` body for Firecrawl's scrape ``data`` (the url, when given,
    and the scrape options)."""
    options = {k: v for k, v in data.items() if k not in BOOKKEEPING}
    for name, what in REFUSED_FIELDS.items():
        if name in options:
            raise bad(name, f"{what} is not offered by this server")
    flags = _checked_flags(options)
    formats = options.pop("formats", None)
    native: dict[str, Any] = {
        **native_formats(formats),
        **model_json(formats, options.pop("jsonOptions", None)),
        **change_tracking(formats, options.pop("changeTrackingOptions", None)),
        "only_main_content": flags.get("onlyMainContent", True),
        "proxy_type": "none",
        **_max_age(options.pop("maxAge", None), flags),
    }
    headers = _headers(options)
    if headers:
        native["headers"] = headers
    native.update(_location(options))
    if native.get("location", {}).get("country") is not None and options.get("proxy") is None:
        native["proxy_type"] = "auto"  # Firecrawl asks for no proxy to name a country
    if flags.get("mobile"):
        native["device"] = "mobile"
    for name in [name for name in options if name in FIELDS]:
        native.update(FIELDS[name](options.pop(name)))
    if options:
        raise BadRequest(f"unknown field {sorted(options)[0]!r}")
    if "session" in native:  # a profile's page is its own: never a kept answer
        native.pop("max_age", None)
    native["engine"] = _engine(native, flags.get("mobile", False))
    return native


def firecrawl_message(message: str) -> str:
    """A native validation message with the fields it names spelt as Firecrawl names them:
    ``include_tags[0]`` is ``includeTags[0]``, ``actions[0].ms`` ``actions[0].milliseconds``."""

    def rename(match: re.Match[str]) -> str:
        head, index, tail = match.group(1), match.group(2), match.group(3)
        name = FIRECRAWL_NAMES[head]
        if head == "wait_for" or not tail:
            return f"{name}{index}"
        return f"{name}{index}.{_STEP_NAMES.get(tail, tail)}"

    return _NATIVE_NAME.sub(rename, message)
