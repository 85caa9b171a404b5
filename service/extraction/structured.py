"""The structured data a page publishes about itself: the ``structured_data`` format (issue 36).

JSON-LD, microdata and RDFa become one list ``items`` of schema.org items, each with its
``@type``; Open Graph and Twitter card ``<meta>`` tags become the dicts ``opengraph`` and
``twitter``. extruct parses them (it reads the page with lxml, never the network).

Normalised: an ``@graph`` is spread into its items, ``@context`` is dropped (schema.org's types
and properties are short names: ``Product``, ``offers``), an item without ``@type`` is not an
item. Measured on the benchmark's pages (bench/structured.py, an extraction worker's CPU):
JSON-LD, microdata and the meta tags add 0.3 to 0.5 ms a page (plain extraction: 0.6 ms);
extruct's RDFa (pyRdfa over rdflib) adds about 9 ms, so it only runs on a page whose markup has a
``typeof=`` attribute, the mark of an RDFa item.

Made from the page as received, not from the cleaned HTML, which has no scripts and no meta tags.
"""

from __future__ import annotations

import re
from typing import Any, Final

from extruct.jsonld import JsonLdExtractor
from extruct.opengraph import OpenGraphExtractor
from extruct.rdfa import RDFaExtractor
from extruct.uniform import _umicrodata_microformat
from extruct.utils import parse_html, parse_xmldom_html
from extruct.w3cmicrodata import LxmlMicrodataExtractor
from lxml import etree

__all__ = ["empty", "structured_data"]

_JSONLD: Final = JsonLdExtractor()
_MICRODATA: Final = LxmlMicrodataExtractor()
_OPENGRAPH: Final = OpenGraphExtractor()
_RDFA: Final = RDFaExtractor()
# what each syntax needs in the (lower-cased) markup: a page without it is not parsed for it.
# Substrings, as a regular expression over the page costs more than the parse; RDFa's slow
# parser needs an attribute, not JavaScript's "typeof x".
_HAS_JSONLD: Final = "application/ld+json"
_HAS_MICRODATA: Final = "itemscope"
_HAS_META: Final = ("og:", "twitter:")
_HAS_RDFA: Final = re.compile(r"\stypeof\s*=")
_SCHEMA_ORG: Final = re.compile(r"^https?://schema\.org/")
# an item nested deeper is left out: the answer's encoder (orjson) stops at 254 levels, and no
# schema.org item is anywhere near this deep
MAX_DEPTH: Final = 64
_RDF_TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def empty() -> dict[str, Any]:
    """The ``structured_data`` of a page that publishes none."""
    return {"items": [], "opengraph": {}, "twitter": {}}


def structured_data(html: str, url: str) -> dict[str, Any]:
    """``{"items", "opengraph", "twitter"}`` of the page ``html`` found at ``url``."""
    found = empty()
    low = html.lower()
    jsonld, microdata = _HAS_JSONLD in low, _HAS_MICRODATA in low
    meta = any(mark in low for mark in _HAS_META)
    rdfa = "typeof" in low and _HAS_RDFA.search(low) is not None
    if not (jsonld or microdata or rdfa or meta):
        return found
    body = html.encode("utf-8", "surrogatepass")
    tree = _parse(parse_html, body)
    if tree is None:
        return found
    items: list[dict[str, Any]] = found["items"]
    if jsonld:
        # each block on its own: a malformed one leaves the others
        for script in _JSONLD._xp_jsonld(tree):
            read = _safely(lambda node=script: _JSONLD._extract_items(node))
            # what is too deep is left out before anything walks it: a list nested 600 deep
            # took the walk past Python's recursion limit, failing the whole scrape
            items.extend(_jsonld_items([entry for entry in read if not _too_deep(entry)]))
    if microdata:
        raw = _safely(lambda: list(_MICRODATA.extract_items(tree, url)))
        flat = _safely(lambda: _umicrodata_microformat(raw, "http://schema.org"))
        items.extend(_short(item) for item in flat if "@type" in item and not _too_deep(item))
    if rdfa:
        # pyRdfa reads a DOM of its own
        dom = _parse(parse_xmldom_html, body)
        if dom is not None:
            nodes = _safely(lambda: _RDFA.extract_items(dom, url))
            items.extend(_safely(lambda: _rdfa_items(nodes)))
    found["items"] = [item for item in items if not _too_deep(item)]
    if meta:
        found["opengraph"] = _opengraph(tree)
        found["twitter"] = _twitter(tree)
    return found


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests lists and objects more than ``MAX_DEPTH`` deep; a loop, not a
    recursion, as a page may nest them thousands deep."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        entry, depth = stack.pop()
        if isinstance(entry, dict):
            entries: Any = entry.values()
        elif isinstance(entry, list):
            entries = entry
        else:
            continue
        if depth >= MAX_DEPTH:
            return True
        stack.extend((inner, depth + 1) for inner in entries)
    return False


def _parse(parser: Any, body: bytes) -> Any:
    try:
        return parser(body, "UTF-8")
    except (etree.ParserError, ValueError):
        return None


def _safely(extract: Any) -> list[Any]:
    """What an extractor found; nothing when the markup broke it (a page's data is the page's,
    malformed or not: the rest of the answer stands)."""
    try:
        return list(extract() or [])
    except Exception:  # noqa: BLE001 - extruct raises whatever its parsers raise
        return []


def _jsonld_items(data: Any) -> list[dict[str, Any]]:
    """The items of one JSON-LD block: itself, the entries of its ``@graph``, or of its list."""
    if isinstance(data, list):
        return [item for entry in data for item in _jsonld_items(entry)]
    if not isinstance(data, dict):
        return []
    if "@graph" in data:
        return _jsonld_items(data["@graph"])
    return [_short(data)] if "@type" in data else []


def _short(value: Any) -> Any:
    """``value`` without ``@context``, its schema.org types and properties by their short
    names."""
    if isinstance(value, list):
        return [_short(entry) for entry in value]
    if not isinstance(value, dict):
        return value
    short: dict[str, Any] = {}
    for key, entry in value.items():
        if key == "@context":
            continue
        if key == "@type":
            short[key] = _short_type(entry)
        else:
            short[_SCHEMA_ORG.sub("", key)] = _short(entry)
    return short


def _short_type(value: Any) -> Any:
    if isinstance(value, list):
        types = [_short_type(entry) for entry in value]
        return types[0] if len(types) == 1 else types
    return _SCHEMA_ORG.sub("", value) if isinstance(value, str) else value


def _rdfa_items(nodes: list[Any]) -> list[dict[str, Any]]:
    """pyRdfa's expanded JSON-LD nodes as nested items: a node another one refers to is put
    in its place (once), the rest with a type are the items."""
    by_id = {node.get("@id"): node for node in nodes if isinstance(node, dict)}
    referred: set[str] = set()
    for node in by_id.values():
        for key, values in node.items():
            if not key.startswith("@") and isinstance(values, list):
                referred.update(v["@id"] for v in values if isinstance(v, dict) and "@id" in v)
    return [
        _rdfa_item(node, by_id, set())
        for node_id, node in by_id.items()
        if "@type" in node and node_id not in referred
    ]


def _rdfa_item(node: dict[str, Any], by_id: dict[Any, Any], seen: set[Any]) -> dict[str, Any]:
    seen = seen | {node.get("@id")}
    item: dict[str, Any] = {"@type": _short_type(node["@type"])}
    for key, values in node.items():
        if key.startswith("@") or key == _RDF_TYPE or not isinstance(values, list):
            continue
        if key.startswith("http://www.w3.org/ns/rdfa#"):
            continue
        read = [_rdfa_value(value, by_id, seen) for value in values]
        item[_SCHEMA_ORG.sub("", key)] = read[0] if len(read) == 1 else read
    return item


def _rdfa_value(value: Any, by_id: dict[Any, Any], seen: set[Any]) -> Any:
    if not isinstance(value, dict):
        return value
    if "@value" in value:
        return value["@value"]
    ref = value.get("@id")
    node = by_id.get(ref)
    if node is not None and ref not in seen and "@type" in node:
        return _rdfa_item(node, by_id, seen)
    return ref


def _opengraph(tree: Any) -> dict[str, Any]:
    """Open Graph's properties by name without ``og:`` (``title``, ``image``...); other
    namespaces it declares keep theirs (``article:author``); a repeated one is a list."""
    found: dict[str, Any] = {}
    for data in _safely(lambda: _OPENGRAPH.extract_items(tree)):
        for key, value in data.get("properties", []):
            _add(found, key[3:] if key.startswith("og:") else key, value)
    return found


def _twitter(tree: Any) -> dict[str, Any]:
    """Twitter card's ``<meta name="twitter:...">`` (or ``property=``) by name without
    ``twitter:``."""
    found: dict[str, Any] = {}
    for element in tree.iterfind(".//meta"):
        key = element.get("name") or element.get("property") or ""
        if key[:8].lower() == "twitter:":
            value = element.get("content")
            if value is not None:
                _add(found, key[8:], value.strip())
    return found


def _add(found: dict[str, Any], key: str, value: Any) -> None:
    if key not in found:
        found[key] = value
    elif isinstance(found[key], list):
        found[key].append(value)
    elif found[key] != value:
        found[key] = [found[key], value]
