"""A native scrape result as Firecrawl's document, and Firecrawl's scrape options as a native
request (:mod:`service.firecrawl.options`).

Both are pure: the scrape route calls them, and so do the crawl, batch and webhook routes,
:func:`document` with a stored result's JSON as well as with a :class:`ScrapeResult`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from service.core.formats import OUTPUTS
from service.firecrawl.actions import PNG_DATA_URL, action_outputs
from service.firecrawl.formats import format_names, formats
from service.firecrawl.options import PROXIES, Version, firecrawl_message, native_scrape
from service.scrape.results import ScrapeResult

__all__ = [
    "Version",
    "answered_error_page",
    "document",
    "failed",
    "firecrawl_message",
    "metadata",
    "native_scrape",
]

HTTP_ERROR = "http_error"  # the native error_code of a target's 4xx or 5xx answer


def _field(result: ScrapeResult | Mapping[str, Any], name: str) -> Any:
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


# Firecrawl's metadata key -> the meta tag it is read from
META_KEYS = {
    "description": "description",
    "keywords": "keywords",
    "robots": "robots",
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


def answered_error_page(result: ScrapeResult | Mapping[str, Any]) -> bool:
    """Whether the target answered with an error status (4xx, 5xx) and its page: natively a
    failure, unbilled; to Firecrawl a document like any other (``scrapeURL`` accepts a bad
    status as a result, ``metadata.statusCode`` telling it), in a scrape, a batch and a crawl."""
    return _field(result, "error_code") == HTTP_ERROR and not _field(result, "blocked")


def failed(result: ScrapeResult | Mapping[str, Any]) -> bool:
    """Whether Firecrawl's answer is ``success: false``: the scrape failed or was blocked (and
    was not billed); a target's error page is a document (:func:`answered_error_page`)."""
    if answered_error_page(result):
        return False
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
        # Firecrawl's extractMetadata reads <html lang>; a Content-Language meta tag stands in
        "language": _field(result, "language") or meta.get("content-language"),
        "sourceURL": _field(result, "url"),
        "url": _field(result, "final_url"),
        "statusCode": status or None,
        "error": _error(result) if failed(result) or answered_error_page(result) else None,
        "proxyUsed": "stealth" if _field(result, "tier_used") == "residential" else "basic",
        "cacheState": "hit" if _field(result, "cached") else "miss",
        "creditsUsed": _field(result, "credits_charged"),
        "numPages": (_field(result, "document") or {}).get("pages"),
        IN_METADATA: _field(result, "structured_data"),
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


# the format whose value goes into the metadata, under its name (as Firecrawl's own metadata
# holds what the page's <head> declares)
IN_METADATA = "structuredData"


def _change_tracking(result: ScrapeResult | Mapping[str, Any]) -> dict[str, Any] | None:
    """The native change_tracking in Firecrawl's names; a diff or json not made is left out,
    as Firecrawl leaves it."""
    native = _field(result, "change_tracking")
    if not native:
        return None
    made = {
        "previousScrapeAt": native.get("previous_scrape_at"),
        "changeStatus": native.get("change_status"),
        "visibility": native.get("visibility"),
    }
    for name in ("diff", "json"):
        if native.get(name) is not None:
            made[name] = native[name]
    return made


# how a format of the document is read from the result, when it is not its native format's field
# as it is (service.firecrawl.formats.formats)
DOCUMENT_FIELDS: dict[str, Callable[[ScrapeResult | Mapping[str, Any]], Any]] = {
    "links": _links,
    "images": lambda result: list(_field(result, "images") or ()),
    "screenshot": lambda result: (
        PNG_DATA_URL + shot if (shot := _field(result, "screenshot")) else None
    ),
    "changeTracking": _change_tracking,
}


def _document_field(name: str, result: ScrapeResult | Mapping[str, Any]) -> Any:
    read = DOCUMENT_FIELDS.get(name)
    if read is not None:
        return read(result)
    native = formats()[name]
    assert native is not None
    return _field(result, OUTPUTS[native].field)


def document(
    result: ScrapeResult | Mapping[str, Any], data: Mapping[str, Any], version: Version
) -> dict[str, Any]:
    """Firecrawl's document of ``result`` (a native result, or its JSON as jobs store it), the
    answer to Firecrawl's scrape options ``data``."""
    names, _ = format_names(data.get("formats"))
    doc: dict[str, Any] = {}
    for name in names:
        if name == IN_METADATA:
            continue
        value = _document_field(name, result)
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
