"""The standard fields of a fetched HTML page, and ``extract``, which also runs the selectors.

``extract`` runs on every downloaded page; it parses once with lexbor (through selectolax),
never mutates the tree, and never raises on malformed input: a page that cannot be parsed
gives every field its empty value.

The fields: ``title``, ``language`` (``<html lang>``), ``meta``, ``headings``, ``links`` and
``images`` (URLs resolved against the document's base), ``text``
(:mod:`service.extraction.text`) and ``extracted``, the matches of the caller's selectors
(:mod:`service.extraction.selectors`). The page is parsed as a
browser with scripting enabled parses it, so ``<noscript>`` content is plain text and its
images and links are not reported.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser

from service.extraction.selectors import CompiledSelectors, no_matches, run_selectors
from service.extraction.text import normalise, visible_text

__all__ = ["UrlResolver", "document_base", "empty_fields", "extract", "fields_of", "parse"]

HEADING_LEVELS: Final = ("h1", "h2", "h3", "h4", "h5", "h6")
MAX_LANGUAGE_CHARS: Final = 64  # a language tag is far shorter; a page's attribute may not be

# The URL parser strips leading and trailing C0 controls and spaces, and drops tabs and
# newlines anywhere, so "java\tscript:" is still a javascript: URL to a browser.
_URL_EDGE_JUNK: Final = "".join(chr(c) for c in range(0x21))
_URL_INNER_JUNK: Final = str.maketrans("", "", "\t\n\r")


def extract(
    html: str | bytes, base_url: str, selectors: CompiledSelectors | None = None
) -> dict[str, Any]:
    """Extract title, meta, headings, links, images, text and selector results from ``html``.

    Bytes are decoded by their BOM or ``<meta charset>`` (in the first 1024 bytes, as the HTML
    Standard says), else as UTF-8 with invalid bytes replaced.
    """
    tree = parse(html)
    if tree is None:
        return empty_fields(selectors)
    return fields_of(tree, base_url, selectors)


def parse(html: str | bytes) -> LexborHTMLParser | None:
    """The page's tree as ``extract`` parses it, or None when it cannot be parsed."""
    try:
        if isinstance(html, str):
            html = html.removeprefix("\ufeff")
        elif not isinstance(html, bytes):
            html = bytes(html)
        return LexborHTMLParser(html, encoding=True, scripting=True)
    except Exception:  # garbage in must give the empty result, never a failed scrape
        return None


def fields_of(
    tree: LexborHTMLParser,
    base_url: str,
    selectors: CompiledSelectors | None = None,
    text: bool = True,
    resolve: UrlResolver | None = None,
) -> dict[str, Any]:
    """The fields of an already parsed page; reads ``tree`` without changing it. ``text=False``
    leaves ``text`` None, for a caller that replaces it (service.extraction.outputs), which may
    also pass the page's ``resolve`` (``UrlResolver(document_base(tree, base_url))``) to share."""
    if resolve is None:
        resolve = UrlResolver(document_base(tree, base_url))
    body = tree.body
    return {
        "title": _title(tree),
        "language": _language(tree),
        "meta": _meta(tree),
        "headings": _headings(tree),
        "links": _links(tree, resolve),
        "images": _images(tree, resolve),
        "text": (visible_text(body if body is not None else tree.root) or None) if text else None,
        "extracted": run_selectors(tree, selectors),
    }


def empty_fields(selectors: CompiledSelectors | None = None) -> dict[str, Any]:
    """The fields of a scrape that received nothing to extract from."""
    return {
        "title": None,
        "language": None,
        "meta": {},
        "headings": {},
        "links": [],
        "images": [],
        "text": None,
        "extracted": no_matches(selectors),
    }


def _title(tree: LexborHTMLParser) -> str | None:
    node = tree.css_first("title:not(svg title)")
    if node is None:
        return None
    return normalise(node.text()) or None


def _language(tree: LexborHTMLParser) -> str | None:
    root = tree.root
    lang = root.attributes.get("lang") if root is not None and root.tag == "html" else None
    return (lang.strip()[:MAX_LANGUAGE_CHARS] or None) if lang else None


def _meta(tree: LexborHTMLParser) -> dict[str, str]:
    meta: dict[str, str] = {}
    for node in tree.css("meta[content]"):
        attrs = node.attributes
        key = attrs.get("name") or attrs.get("property") or attrs.get("http-equiv")
        content = attrs.get("content")
        if not key or content is None:
            continue
        key = key.strip()
        if key and key not in meta:
            meta[key] = content.strip()
    return meta


def _headings(tree: LexborHTMLParser) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in tree.css("h1, h2, h3, h4, h5, h6"):
        text = visible_text(node)
        if text and node.tag:
            found.setdefault(node.tag, []).append(text)
    return {level: found[level] for level in HEADING_LEVELS if level in found}


class UrlResolver:
    """Resolves attribute URLs against the document base, memoised for one page only."""

    __slots__ = ("_base", "_memo", "_origin")

    def __init__(self, base: str) -> None:
        self._base = base
        self._memo: dict[str, str] = {}
        try:
            parts = urlsplit(base)
        except ValueError:
            parts = None
        self._origin = (
            f"{parts.scheme}://{parts.netloc}"
            if parts is not None and parts.scheme in ("http", "https") and parts.netloc
            else ""
        )

    def __call__(self, raw: str | None) -> str | None:
        """The absolute URL for ``raw``, or None when it is empty or a javascript: URL."""
        if not raw:
            return None
        # keyed by the attribute's value as written: a value seen again costs one lookup
        resolved = self._memo.get(raw)
        if resolved is None:
            url = _clean_url(raw)
            if not url or url[:11].lower() == "javascript:":
                resolved = ""
            elif "?" in url or "#" in url or ";" in url or "/." in url:
                resolved = self._join(url)
            elif url.startswith(("http://", "https://")) and url[url.index("//") + 2 :][:1] not in (
                "",
                "/",
            ):
                # what urljoin gives for an absolute URL with a host and nothing to normalise
                resolved = url
            elif self._origin and url[0] == "/" and url[1:2] != "/":
                resolved = self._origin + url
            else:
                resolved = self._join(url)
            self._memo[raw] = resolved
        return resolved or None

    def _join(self, url: str) -> str:
        try:
            return urljoin(self._base, url)
        except ValueError:  # e.g. a malformed IPv6 host: report the link as written
            return url


def _clean_url(raw: str) -> str:
    url = raw.strip(_URL_EDGE_JUNK)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.translate(_URL_INNER_JUNK)
    return url


def document_base(tree: LexborHTMLParser, base_url: str) -> str:
    node = tree.css_first("base[href]")
    href = _clean_url(node.attributes.get("href") or "") if node is not None else ""
    if not href:
        return base_url
    try:
        resolved = urljoin(base_url, href)
        scheme = urlsplit(resolved).scheme.lower()
    except ValueError:
        return base_url
    # The HTML Standard falls back to the document URL for these base URLs.
    if scheme in ("data", "javascript"):
        return base_url
    return resolved


def _links(tree: LexborHTMLParser, resolve: UrlResolver) -> list[dict[str, str]]:
    links = []
    for node in tree.css("a[href]"):
        href = resolve(node.attributes.get("href"))
        if href is not None:
            links.append({"text": visible_text(node), "href": href})
    return links


def _images(tree: LexborHTMLParser, resolve: UrlResolver) -> list[str]:
    images = []
    for node in tree.css("img"):
        attrs = node.attributes
        src = resolve(attrs.get("src")) or resolve(attrs.get("data-src"))
        if src is not None:
            images.append(src)
    return images
