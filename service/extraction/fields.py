"""Structured fields and user selectors pulled out of a fetched HTML page.

``compile_selectors`` runs while the API request is validated, before anything is fetched, so a
bad selector costs the caller a 400 instead of a scrape. ``extract`` runs on every downloaded page;
it parses once with lexbor (through selectolax), never mutates the tree, and never raises on
malformed input: a page that cannot be parsed gives every field its empty value.

Selectors are CSS as lexbor runs them, plus parsel's pseudo-elements at the end of a selector:

- ``S``            the text of each match, as ``text`` below (``""`` for a match without any)
- ``S::text``      each match's own (direct) text nodes joined; matches without any are skipped
- ``S ::text``     every text node in each match or below it, one string per text node
- ``S::attr(n)``   attribute ``n`` of each match that has it
- ``S ::attr(n)``  attribute ``n`` of each match, or element below it, that has it

A comma-separated group is accepted when every member ends with the same pseudo-element (or none),
e.g. ``"h1::text, h2::text"``; mixing kinds in one group is rejected as invalid.

Attribute values are returned as written (not URL-resolved); the descendant ``::text`` form keeps
script and style text, as parsel does.

``text`` approximates what a reader sees: script, style, noscript, template and similar content is
left out, and block boundaries become spaces while inline markup does not (``Hello <b>you</b>!``
gives ``Hello you!``). CSS is not evaluated, so ``display: none`` content is included. The page is
parsed as a browser with scripting enabled parses it, so ``<noscript>`` content is plain text and
its images and links are not reported.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

from cssselect.parser import SelectorSyntaxError, Token, tokenize
from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

__all__ = ["CompiledSelectors", "InvalidSelector", "compile_selectors", "extract"]

HEADING_LEVELS: Final = ("h1", "h2", "h3", "h4", "h5", "h6")

# Elements whose content a browser does not render as text (title inside <svg> is a tooltip).
_NOT_RENDERED: Final = frozenset(
    {
        "head",
        "title",
        "script",
        "style",
        "noscript",
        "template",
        "iframe",
        "noembed",
        "noframes",
        "-comment",
    }
)

# Phrasing elements that do not break a line; anything else, including unknown and custom
# elements, is taken as a boundary, because a stray space harms less than two glued words.
_INLINE: Final = frozenset(
    {
        "a",
        "abbr",
        "acronym",
        "b",
        "bdi",
        "bdo",
        "big",
        "cite",
        "code",
        "data",
        "del",
        "dfn",
        "em",
        "font",
        "i",
        "img",
        "ins",
        "kbd",
        "label",
        "mark",
        "nobr",
        "q",
        "rb",
        "ruby",
        "s",
        "samp",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "time",
        "tt",
        "u",
        "var",
        "wbr",
    }
)

_TEXT_NODE: Final = "-text"
_OPENER: Final = {")": "(", "]": "["}

# The URL parser strips leading and trailing C0 controls and spaces, and drops tabs and
# newlines anywhere, so "java\tscript:" is still a javascript: URL to a browser.
_URL_EDGE_JUNK: Final = "".join(chr(c) for c in range(0x21))
_URL_INNER_JUNK: Final = str.maketrans("", "", "\t\n\r")


class InvalidSelector(ValueError):
    """A selector in the request cannot be compiled; ``name`` is its key in ``selectors``."""

    name: str
    selector: str

    def __init__(self, name: str, selector: str) -> None:
        super().__init__(f"invalid CSS selector for selectors[{name!r}]: {selector!r}")
        self.name = name
        self.selector = selector

    def __reduce__(self) -> tuple[type[InvalidSelector], tuple[str, str]]:
        return (type(self), (self.name, self.selector))


class _Mode(enum.Enum):
    TEXT = "text"
    OWN_TEXT = "::text"
    TEXT_NODES = " ::text"
    ATTR = "::attr"
    DEEP_ATTR = " ::attr"


@dataclass(frozen=True, slots=True)
class _Selector:
    name: str
    query: str
    mode: _Mode
    attr: str


@dataclass(frozen=True, slots=True)
class CompiledSelectors:
    """Validated selectors, ready for ``extract``; build with ``compile_selectors``."""

    _entries: tuple[_Selector, ...]


class _Unusable(Exception):
    """Internal: the selector string cannot be compiled."""


def compile_selectors(selectors: Mapping[str, str] | None) -> CompiledSelectors | None:
    """Validate and compile ``selectors``; ``None`` stays ``None``.

    Raises ``InvalidSelector`` for the first selector, in mapping order, that is empty, that
    lexbor refuses, that relies on lexbor's leniency (an unclosed string, bracket or parenthesis,
    a dangling backslash), that uses a pseudo-element other than ``::text``/``::attr(name)`` or
    not at its end, or that mixes pseudo-elements across a comma-separated group.
    """
    if selectors is None:
        return None
    # A parser per call: selectolax parsers are not safe to share between threads.
    probe = LexborHTMLParser("<p>x</p>")
    entries = []
    for name, selector in selectors.items():
        if not isinstance(selector, str):
            raise InvalidSelector(name, str(selector))
        try:
            query, mode, attr = _split_pseudo_element(selector)
            probe.css(query)
        # UnicodeError: lone surrogates (valid in JSON text) cannot be handed to lexbor.
        except (_Unusable, SelectorSyntaxError, SelectolaxError, UnicodeError):
            raise InvalidSelector(name, selector) from None
        entries.append(_Selector(name, query, mode, attr))
    return CompiledSelectors(tuple(entries))


def _split_pseudo_element(selector: str) -> tuple[str, _Mode, str]:
    """Split ``selector`` into the lexbor query, the output mode and the attribute name.

    cssselect's tokenizer does the lexing because lexbor silently accepts unterminated input
    (``a[href``, ``[x='y``, ``p\\``). cssselect's ``css_to_xpath`` is not used as a second
    opinion: it rejects valid Selectors Level 4 that lexbor runs, such as ``:not(.a, .b)``.
    """
    if not selector.strip():
        raise _Unusable
    # Each comma-separated member as (start, end, its non-whitespace tokens with their depth).
    members: list[tuple[int, int, list[tuple[Token, int]]]] = []
    current: list[tuple[Token, int]] = []
    depth: list[str] = []
    start = 0
    for token in tokenize(selector):  # raises SelectorSyntaxError on an unclosed string
        if token.type == "EOF":
            members.append((start, token.pos, current))
            break
        if token.type == "DELIM":
            value = token.value
            if value == "\\":
                raise _Unusable
            if value == "," and not depth:
                members.append((start, token.pos, current))
                current, start = [], token.pos + 1
                continue
            if value in ("(", "["):
                depth.append(value)
            elif value in (")", "]") and (not depth or depth.pop() != _OPENER[value]):
                raise _Unusable
        if token.type != "S":
            current.append((token, len(depth)))
    if depth:
        raise _Unusable

    bases: list[str] = []
    kinds: set[tuple[_Mode, str]] = set()
    for member_start, member_end, tokens in members:
        base, mode, attr = _member_pseudo_element(selector, member_start, member_end, tokens)
        bases.append(base)
        kinds.add((mode, attr))
    if len(kinds) != 1:
        raise _Unusable
    mode, attr = kinds.pop()
    return ", ".join(bases), mode, attr


def _member_pseudo_element(
    selector: str, start: int, end: int, tokens: list[tuple[Token, int]]
) -> tuple[str, _Mode, str]:
    """Base selector, mode and attribute name of one comma-separated member."""
    split_at = None
    for index in range(len(tokens) - 1):
        (first, depth), (second, _) = tokens[index], tokens[index + 1]
        if (
            depth == 0
            and first.is_delim(":")
            and second.is_delim(":")
            and second.pos == first.pos + 1
        ):
            split_at = index
            break
    if split_at is None:
        base = selector[start:end].strip()
        if not base:
            raise _Unusable
        return base, _Mode.TEXT, ""

    raw_base = selector[start : tokens[split_at][0].pos]
    base = raw_base.strip()
    if not base:
        raise _Unusable
    descendant = raw_base != raw_base.rstrip()
    tail = [token for token, _ in tokens[split_at + 2 :]]
    pseudo = (tail[0].value or "").lower() if tail and tail[0].type == "IDENT" else ""
    if pseudo == "text" and len(tail) == 1:
        return base, (_Mode.TEXT_NODES if descendant else _Mode.OWN_TEXT), ""
    if (
        pseudo == "attr"
        and len(tail) == 4
        and tail[1].is_delim("(")
        and tail[2].type in ("IDENT", "STRING")
        and tail[2].value
        and tail[3].is_delim(")")
    ):
        return base, (_Mode.DEEP_ATTR if descendant else _Mode.ATTR), tail[2].value
    raise _Unusable


def extract(
    html: str | bytes, base_url: str, selectors: CompiledSelectors | None = None
) -> dict[str, Any]:
    """Extract title, meta, headings, links, images, text and selector results from ``html``.

    Bytes are decoded by their BOM or ``<meta charset>`` (in the first 1024 bytes, as the HTML
    Standard says), else as UTF-8 with invalid bytes replaced.
    """
    entries = selectors._entries if selectors is not None else ()
    try:
        if isinstance(html, str):
            html = html.removeprefix("\ufeff")
        elif not isinstance(html, bytes):
            html = bytes(html)
        tree = LexborHTMLParser(html, encoding=True, scripting=True)
    except Exception:  # garbage in must give the empty result, never a failed scrape
        return _empty_result(entries)

    resolve = _UrlResolver(_document_base(tree, base_url))
    body = tree.body
    return {
        "title": _title(tree),
        "meta": _meta(tree),
        "headings": _headings(tree),
        "links": _links(tree, resolve),
        "images": _images(tree, resolve),
        "text": _visible_text(body if body is not None else tree.root) or None,
        "extracted": {entry.name: _run_selector(tree, entry) for entry in entries},
    }


def selectors_to_wire(selectors: CompiledSelectors | None) -> list[list[str]] | None:
    """``selectors`` as plain lists, for an extraction worker (service.extraction.pool)."""
    if selectors is None:
        return None
    return [[e.name, e.query, e.mode.value, e.attr] for e in selectors._entries]


def selectors_from_wire(wire: list[list[str]] | None) -> CompiledSelectors | None:
    """The inverse of :func:`selectors_to_wire`; the selectors were compiled by the sender."""
    if wire is None:
        return None
    return CompiledSelectors(
        tuple(_Selector(name, query, _Mode(mode), attr) for name, query, mode, attr in wire)
    )


def empty_fields(selectors: CompiledSelectors | None = None) -> dict[str, Any]:
    """The fields of a scrape that received nothing to extract from."""
    return _empty_result(selectors._entries if selectors is not None else ())


def _empty_result(entries: tuple[_Selector, ...]) -> dict[str, Any]:
    return {
        "title": None,
        "meta": {},
        "headings": {},
        "links": [],
        "images": [],
        "text": None,
        "extracted": {entry.name: [] for entry in entries},
    }


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _visible_text(root: LexborNode | None) -> str:
    """Whitespace-normalised text below ``root``, leaving out content that is not rendered."""
    if root is None:
        return ""
    parts: list[str] = []
    append = parts.append
    # Explicit stack rather than recursion: garbage pages can nest thousands of levels deep.
    stack = [(root.iter(include_text=True), False)]
    while stack:
        children, is_block = stack[-1]
        for node in children:
            tag = node.tag
            if tag == _TEXT_NODE:
                append(node.text_content or "")
            elif tag in _NOT_RENDERED:
                continue
            elif tag in _INLINE:
                stack.append((node.iter(include_text=True), False))
                break
            else:
                append(" ")
                stack.append((node.iter(include_text=True), True))
                break
        else:
            stack.pop()
            if is_block:
                append(" ")
    return _normalise("".join(parts))


def _title(tree: LexborHTMLParser) -> str | None:
    node = tree.css_first("title:not(svg title)")
    if node is None:
        return None
    return _normalise(node.text()) or None


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
        text = _visible_text(node)
        if text and node.tag:
            found.setdefault(node.tag, []).append(text)
    return {level: found[level] for level in HEADING_LEVELS if level in found}


class _UrlResolver:
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
        url = _clean_url(raw)
        resolved = self._memo.get(url)
        if resolved is None:
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
            self._memo[url] = resolved
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


def _document_base(tree: LexborHTMLParser, base_url: str) -> str:
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


def _links(tree: LexborHTMLParser, resolve: _UrlResolver) -> list[dict[str, str]]:
    links = []
    for node in tree.css("a[href]"):
        href = resolve(node.attributes.get("href"))
        if href is not None:
            links.append({"text": _visible_text(node), "href": href})
    return links


def _images(tree: LexborHTMLParser, resolve: _UrlResolver) -> list[str]:
    images = []
    for node in tree.css("img"):
        attrs = node.attributes
        src = resolve(attrs.get("src")) or resolve(attrs.get("data-src"))
        if src is not None:
            images.append(src)
    return images


def _attribute(node: LexborNode, name: str) -> str | None:
    attrs = node.attributes
    if name in attrs:
        return attrs[name] or ""
    lowered = name.lower()
    # HTML attribute names are lowercased by the parser, so ::attr(HREF) still finds href.
    if lowered != name and lowered in attrs:
        return attrs[lowered] or ""
    return None


def _run_selector(tree: LexborHTMLParser, entry: _Selector) -> list[str]:
    nodes = tree.css(entry.query)
    mode = entry.mode
    if mode is _Mode.TEXT:
        return [_visible_text(node) for node in nodes]
    if mode is _Mode.OWN_TEXT:
        own = (_normalise(node.text(deep=False, separator=" ")) for node in nodes)
        return [text for text in own if text]
    if mode is _Mode.ATTR:
        values = (_attribute(node, entry.attr) for node in nodes)
        return [value for value in values if value is not None]

    # Descendant forms, like parsel: matches may nest, so each node is reported once.
    seen: set[int] = set()
    results: list[str] = []
    for match in nodes:
        for node in match.traverse(include_text=mode is _Mode.TEXT_NODES):
            if node.mem_id in seen:
                continue
            seen.add(node.mem_id)
            if mode is _Mode.TEXT_NODES:
                if node.tag == _TEXT_NODE:
                    text = _normalise(node.text_content or "")
                    if text:
                        results.append(text)
            else:
                value = _attribute(node, entry.attr)
                if value is not None:
                    results.append(value)
    return results
