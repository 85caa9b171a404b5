"""Firecrawl's scrape options as a native scrape request, and a native result as Firecrawl's
document.

v1 and v2 differ in a few names and shapes (v2's formats may be objects, v1 has
``geolocation`` and ``parsePDF``); :func:`native_scrape` and :func:`document` take the version.
Both are pure: the crawl, batch and webhook routes call them too, ``document`` with a stored
result's JSON as well as with a :class:`ScrapeResult`.

What the translation decides, field by field:

- ``formats``: markdown, html, rawHtml, links, images, screenshot (``fullPage`` or
  ``screenshot@fullPage``: the whole page). Those that need a language model or a history
  (json, summary, changeTracking, branding...) are a 400 naming the format;
- the engine is ``js`` when something needs a browser (a screenshot, actions, ``waitFor``,
  ``mobile``), else ``auto``: static, then js when the page is a JavaScript shell, billed at
  the engine used;
- ``proxy``: absent is ``none``, ``basic`` is ``datacenter``, ``stealth`` (and its newer name
  ``enhanced``) is ``residential``, ``auto`` is ``auto``;
- milliseconds (``timeout``, ``waitFor``, ``maxAge``) become the native seconds or ``ms``;
  a ``timeout`` over the 120 s bound is a 400 naming ``timeout``;
- ``location.languages`` is an ``Accept-Language`` header (the caller's own header wins);
  ``location.country`` needs proxies in that country, which the server does not have: a 400;
- ``maxAge``: Firecrawl's SDKs ask for cached answers by default (4 hours). It is honoured
  with the native ``max_age``: only this account's own successful scrape of the very same
  request, never older than the operator's ``SCRAPESPY_CACHE_MAX_AGE_SECONDS``, free, and
  marked in the document (``cacheState: "hit"``, ``creditsUsed: 0``), so a cached answer is
  never passed off as a fresh one. ``maxAge: 0``, ``storeInCache: false`` and
  ``zeroDataRetention: true`` scrape afresh and keep nothing;
- the SDKs' bookkeeping (``origin``, ``integration``) is ignored; a flag whose value asks for
  what the server does anyway is accepted, any other value a 400 naming it; everything else
  is a 400 naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from service.core.errors import BadRequest
from service.firecrawl.actions import PNG_DATA_URL, action_outputs, native_steps
from service.scrape.results import ScrapeResult

Version = Literal[1, 2]

MAX_TIMEOUT_MS = 120_000  # the native bound, 120 s
SDK_DEFAULT_FORMATS = ["markdown"]

# what the SDKs add to every request for their own bookkeeping: accepted, ignored
BOOKKEEPING = frozenset({"origin", "integration"})

# Firecrawl's format -> the native format that makes it (None: read from the native result)
FORMATS: dict[str, str | None] = {
    "markdown": "markdown",
    "html": "html",
    "rawHtml": "raw_html",
    "links": None,
    "images": None,
    "screenshot": "screenshot",
}
FULL_PAGE_SCREENSHOT = "screenshot@fullPage"
# formats Firecrawl makes and this server does not, by what they would need
REFUSED_FORMATS = {
    "json": "a language model",
    "extract": "a language model",
    "summary": "a language model",
    "query": "a language model",
    "question": "a language model",
    "highlights": "a language model",
    "branding": "a language model",
    "product": "a language model",
    "menu": "a language model",
    "changeTracking": "a history of earlier scrapes",
    "attributes": "Firecrawl's attribute extraction",
    "audio": "media downloads",
    "video": "media downloads",
    "content": "its removal in v1 (use markdown)",
}

PROXIES = {"basic": "datacenter", "stealth": "residential", "enhanced": "residential"}
PROXIES["auto"] = "auto"

# fields that ask for something by their value: the values the server does anyway are
# accepted; the message says why another is not
ONLY_VALUES: dict[str, tuple[tuple[bool, ...], str]] = {
    "blockAds": ((True, False), ""),
    "removeBase64Images": ((True, False), ""),
    "storeInCache": ((True, False), ""),
    "zeroDataRetention": ((True, False), ""),
    "mobile": ((True, False), ""),
    "onlyMainContent": ((True, False), ""),
    "fastMode": ((False,), "fast mode is not offered by this server"),
    "skipTlsVerification": ((True,), "this server does not verify the target's certificate"),
    "lockdown": ((False,), "lockdown (cache only) is not offered by this server"),
    "checkPromptInjection": ((False,), "prompt injection checks are not offered by this server"),
    "redactPII": ((False,), "PII redaction is not offered by this server"),
    "domainTools": ((False,), "domain tools are not offered by this server"),
    "parsePDF": ((False,), "PDF parsing is not offered by this server"),
}
# fields for features this server does not have
REFUSED_FIELDS = {
    "jsonOptions": "the json format (a language model)",
    "extract": "the extract format (a language model)",
    "changeTrackingOptions": "change tracking",
    "agent": "agents",
    "useMock": "mocks",
    "minAge": "cache-only answers",
    "profile": "browser profiles",
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
    "device": "mobile",
    "proxy_type": "proxy",
    "max_age": "maxAge",
}
_STEP_NAMES = {"ms": "milliseconds", "full_page": "fullPage", "script": "script"}
_QUOTED = re.compile(r"'([a-z_]+)((?:\[\d+\])?)(?:\.([a-z_]+))?'")


def _bad(where: str, message: str) -> BadRequest:
    return BadRequest(f"invalid request: '{where}': {message}")


def _milliseconds(data: Mapping[str, Any], name: str) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _bad(name, "must be a whole number of milliseconds, 0 or more")
    return value


def format_names(value: Any) -> tuple[list[str], bool]:
    """Firecrawl's ``formats`` (strings, or v2's objects) as names, and whether the screenshot
    is of the full page."""
    if value is None:
        return list(SDK_DEFAULT_FORMATS), False
    if not isinstance(value, list):
        raise _bad("formats", "must be a list")
    names, full_page = [], False
    for index, item in enumerate(value):
        name = item.get("type") if isinstance(item, Mapping) else item
        if name == FULL_PAGE_SCREENSHOT:
            name, full_page = "screenshot", True
        if not isinstance(name, str):
            raise _bad(f"formats[{index}]", "a format name or an object with 'type'")
        if name in REFUSED_FORMATS:
            raise _bad(
                "formats",
                f"the {name!r} format needs {REFUSED_FORMATS[name]}, which this server does "
                "not offer",
            )
        if name not in FORMATS:
            raise _bad("formats", f"{name!r} is not a format (one of {', '.join(FORMATS)})")
        if isinstance(item, Mapping):
            full_page |= _format_options(item, index)
        names.append(name)
    return names, full_page


def _format_options(item: Mapping[str, Any], index: int) -> bool:
    """A v2 format object's options: only a screenshot's ``fullPage``."""
    for option, value in item.items():
        if option == "type":
            continue
        if item["type"] == "screenshot" and option == "fullPage" and isinstance(value, bool):
            continue
        raise _bad(f"formats[{index}].{option}", "is not offered by this server")
    return bool(item.get("fullPage"))


def _checked_flags(options: dict[str, Any]) -> dict[str, bool]:
    """The flags of :data:`ONLY_VALUES`, taken out of ``options``, each an accepted value."""
    flags = {}
    for name in [name for name in options if name in ONLY_VALUES]:
        value = options.pop(name)
        accepted, why = ONLY_VALUES[name]
        if type(value) is not bool:
            raise _bad(name, "must be true or false")
        if value not in accepted:
            raise _bad(name, why)
        flags[name] = value
    return flags


def _location(value: Any, where: str) -> str | None:
    """The ``Accept-Language`` header for Firecrawl's ``location``."""
    if not isinstance(value, Mapping):
        raise _bad(where, "must be an object")
    for name in value:
        if name not in ("country", "languages"):
            raise BadRequest(f"unknown field '{where}.{name}'")
    if value.get("country") is not None:
        raise _bad(
            f"{where}.country",
            "this server has no proxies by country; leave it out (languages are honoured)",
        )
    languages = value.get("languages")
    if languages is None:
        return None
    if not isinstance(languages, list) or not all(isinstance(x, str) for x in languages):
        raise _bad(f"{where}.languages", "must be a list of language tags")
    return ", ".join(languages) or None


def _headers(options: dict[str, Any]) -> dict[str, Any]:
    headers = options.pop("headers", None) or {}
    if not isinstance(headers, Mapping):
        raise _bad("headers", "must be an object of header names to values")
    headers = dict(headers)
    for where in ("location", "geolocation"):
        if where in options:
            language = _location(options.pop(where), where)
            names = {name.lower() for name in headers}
            if language and "accept-language" not in names:
                headers["Accept-Language"] = language
    return headers


def _engine(names: list[str], native: Mapping[str, Any], mobile: bool) -> str:
    needs_browser = "screenshot" in names or native.get("actions") or native.get("wait_for")
    return "js" if needs_browser or mobile else "auto"


def _max_age(options: dict[str, Any], flags: Mapping[str, bool]) -> int | None:
    max_age = _milliseconds(options, "maxAge")
    options.pop("maxAge", None)
    keeps = flags.get("storeInCache", True) and not flags.get("zeroDataRetention", False)
    if not max_age or not keeps:
        return None
    return max_age // 1000


def native_scrape(data: Mapping[str, Any], version: Version) -> dict[str, Any]:
    """The native ``POST /scrape`` body for Firecrawl's scrape ``data`` (the url, when given,
    and the scrape options)."""
    options = {k: v for k, v in data.items() if k not in BOOKKEEPING}
    for name, what in REFUSED_FIELDS.items():
        if name in options:
            raise _bad(name, f"{what} is not offered by this server")
    flags = _checked_flags(options)
    names, full_page = format_names(options.pop("formats", None))
    native: dict[str, Any] = {}
    if "url" in options:
        native["url"] = options.pop("url")
    native["formats"] = sorted({n for name in names if (n := FORMATS[name]) is not None})
    if full_page and "screenshot" in names:
        native["screenshot_full_page"] = True
    native["only_main_content"] = flags.get("onlyMainContent", True)
    for name, field in (("includeTags", "include_tags"), ("excludeTags", "exclude_tags")):
        if name in options:
            native[field] = options.pop(name)
    headers = _headers(options)
    if headers:
        native["headers"] = headers
    timeout = _milliseconds(options, "timeout")
    options.pop("timeout", None)
    if timeout is not None:
        if not 0 < timeout <= MAX_TIMEOUT_MS:
            raise _bad("timeout", f"must be more than 0 and at most {MAX_TIMEOUT_MS} ms")
        native["timeout"] = timeout / 1000
    wait_ms = _milliseconds(options, "waitFor")
    options.pop("waitFor", None)
    if wait_ms:
        native["wait_for"] = {"ms": wait_ms}
    if options.get("actions") is not None:
        native["actions"] = native_steps(options.pop("actions"))
    options.pop("actions", None)
    if flags.get("mobile"):
        native["device"] = "mobile"
    proxy = options.pop("proxy", None)
    if proxy is not None and proxy not in PROXIES:
        raise _bad("proxy", f"must be one of {', '.join(PROXIES)}")
    native["proxy_type"] = PROXIES.get(proxy, "none") if proxy is not None else "none"
    max_age = _max_age(options, flags)
    if max_age is not None:
        native["max_age"] = max_age
    if options.get("parsers") not in (None, []):
        raise _bad("parsers", "PDF and image parsing are not offered by this server")
    options.pop("parsers", None)
    if options:
        raise BadRequest(f"unknown field {sorted(options)[0]!r}")
    native["engine"] = _engine(names, native, flags.get("mobile", False))
    return native


def firecrawl_message(message: str) -> str:
    """A native validation message with the fields it names spelt as Firecrawl names them:
    ``'include_tags'`` is ``'includeTags'``, ``'actions[0].ms'`` ``'actions[0].milliseconds'``."""

    def rename(match: re.Match[str]) -> str:
        head, index, tail = match.group(1), match.group(2), match.group(3)
        name = FIRECRAWL_NAMES.get(head)
        if name is None:
            return match.group(0)
        if head == "wait_for":
            return f"'{name}'"
        if tail:
            return f"'{name}{index}.{_STEP_NAMES.get(tail, tail)}'"
        return f"'{name}{index}'"

    return _QUOTED.sub(rename, message)


# documents -------------------------------------------------------------------------------------


def _field(result: ScrapeResult | Mapping[str, Any], name: str) -> Any:
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


# Firecrawl's metadata key -> the meta tag it is read from
META_KEYS = {
    "description": "description",
    "keywords": "keywords",
    "robots": "robots",
    "language": "content-language",
    "ogTitle": "og:title",
    "ogDescription": "og:description",
    "ogUrl": "og:url",
    "ogImage": "og:image",
    "ogAudio": "og:audio",
    "ogDeterminer": "og:determiner",
    "ogLocale": "og:locale",
    "ogSiteName": "og:site_name",
    "ogVideo": "og:video",
    "dcTermsCreated": "dcterms.created",
    "dcDateCreated": "dc.date.created",
    "dcDate": "dc.date",
    "dcTermsType": "dcterms.type",
    "dcType": "dc.type",
    "dcTermsAudience": "dcterms.audience",
    "dcTermsSubject": "dcterms.subject",
    "dcSubject": "dc.subject",
    "dcDescription": "dc.description",
    "dcTermsKeywords": "dcterms.keywords",
    "modifiedTime": "article:modified_time",
    "publishedTime": "article:published_time",
    "articleTag": "article:tag",
    "articleSection": "article:section",
}


def failed(result: ScrapeResult | Mapping[str, Any]) -> bool:
    """Whether Firecrawl's answer is ``success: false``: the scrape failed or was blocked (and
    was not billed)."""
    return not _field(result, "success") or bool(_field(result, "blocked"))


def _error(result: ScrapeResult | Mapping[str, Any]) -> str | None:
    if _field(result, "blocked"):
        vendor = _field(result, "block_reason")
        return f"the target answered with an anti-bot page ({vendor})" if vendor else "blocked"
    return _field(result, "error")  # type: ignore[no-any-return]


def metadata(result: ScrapeResult | Mapping[str, Any]) -> dict[str, Any]:
    """Firecrawl's ``metadata``: the page's meta tags by their own names and by Firecrawl's,
    then how the scrape went; only the keys that have a value, as Firecrawl sends them."""
    meta: Mapping[str, str] = _field(result, "meta") or {}
    status = _field(result, "status_code")
    found = {
        **meta,
        "title": _field(result, "title"),
        **{key: meta.get(tag) for key, tag in META_KEYS.items()},
        "sourceURL": _field(result, "url"),
        "url": _field(result, "final_url"),
        "statusCode": status or None,
        "error": _error(result) if failed(result) else None,
        "proxyUsed": "stealth" if _field(result, "tier_used") == "residential" else "basic",
        "cacheState": "hit" if _field(result, "cached") else "miss",
        "creditsUsed": _field(result, "credits_charged"),
    }
    return {key: value for key, value in found.items() if value not in (None, "")}


def _links(result: ScrapeResult | Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(link["href"] for link in _field(result, "links") or ()))


def _warning(result: ScrapeResult | Mapping[str, Any], data: Mapping[str, Any]) -> str | None:
    notes = []
    truncated = _field(result, "truncated")
    if truncated:
        notes.append(f"cut to their size limit: {', '.join(truncated)}")
    wanted = PROXIES.get(data.get("proxy") or "")
    if wanted not in (None, "auto", _field(result, "tier_used")) and not failed(result):
        notes.append(f"the {data['proxy']} proxy pool was unavailable; the page came directly")
    return "; ".join(notes) or None


# what each format of the document is read from
DOCUMENT_FIELDS: dict[str, Callable[[ScrapeResult | Mapping[str, Any]], Any]] = {
    "markdown": lambda result: _field(result, "markdown"),
    "html": lambda result: _field(result, "html"),
    "rawHtml": lambda result: _field(result, "raw_html"),
    "links": _links,
    "images": lambda result: list(_field(result, "images") or ()),
    "screenshot": lambda result: (
        PNG_DATA_URL + shot if (shot := _field(result, "screenshot")) else None
    ),
}


def document(
    result: ScrapeResult | Mapping[str, Any], data: Mapping[str, Any], version: Version
) -> dict[str, Any]:
    """Firecrawl's document of ``result`` (a native result, or its JSON as jobs store it), the
    answer to Firecrawl's scrape options ``data``."""
    names, _ = format_names(data.get("formats"))
    doc: dict[str, Any] = {}
    for name in names:
        value = DOCUMENT_FIELDS[name](result)
        if value is not None:
            doc[name] = value
    actions = data.get("actions")
    if actions:
        doc["actions"] = action_outputs(actions, _field(result, "action_results") or ())
    warning = _warning(result, data)
    if warning:
        doc["warning"] = warning
    doc["metadata"] = metadata(result)
    return doc
