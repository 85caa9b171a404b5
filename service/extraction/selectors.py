"""User selectors: CSS as lexbor runs them, plus parsel's pseudo-elements at the end.

``compile_selectors`` runs while the API request is validated, before anything is fetched, so a
bad selector costs the caller a 400 instead of a scrape.

- ``S``            the text of each match, as the ``text`` field (``""`` for a match without any)
- ``S::text``      each match's own (direct) text nodes joined; matches without any are skipped
- ``S ::text``     every text node in each match or below it, one string per text node
- ``S::attr(n)``   attribute ``n`` of each match that has it
- ``S ::attr(n)``  attribute ``n`` of each match, or element below it, that has it

A comma-separated group is accepted when every member ends with the same pseudo-element (or none),
e.g. ``"h1::text, h2::text"``; mixing kinds in one group is rejected as invalid.

Attribute values are returned as written (not URL-resolved); the descendant ``::text`` form keeps
script and style text, as parsel does.

Compiled selectors travel to an extraction worker (:mod:`service.extraction.pool`) as plain
lists: :func:`selectors_to_wire` and :func:`selectors_from_wire`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from cssselect.parser import SelectorSyntaxError, Token, tokenize
from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from service.extraction.text import TEXT_NODE, normalise, visible_text

__all__ = [
    "CompiledSelectors",
    "InvalidSelector",
    "compile_selectors",
    "compile_tags",
    "no_matches",
    "run_selectors",
    "selectors_from_wire",
    "selectors_to_wire",
]

_OPENER: Final = {")": "(", "]": "["}


class InvalidSelector(ValueError):
    """A selector in the request cannot be compiled; ``name`` is its key in ``selectors``, or
    its index in ``field`` (``include_tags``, ``exclude_tags``)."""

    name: str | int
    selector: str
    field: str

    def __init__(self, name: str | int, selector: str, field: str = "selectors") -> None:
        super().__init__(f"invalid CSS selector for {field}[{name!r}]: {selector!r}")
        self.name = name
        self.selector = selector
        self.field = field

    def __reduce__(self) -> tuple[type[InvalidSelector], tuple[str | int, str, str]]:
        return (type(self), (self.name, self.selector, self.field))


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


def compile_tags(field: str, tags: Sequence[str]) -> tuple[str, ...]:
    """``include_tags`` or ``exclude_tags`` checked as ``compile_selectors`` checks selectors;
    pseudo-elements are refused (they select text, not elements)."""
    if not tags:
        return ()
    probe = LexborHTMLParser("<p>x</p>")
    for index, tag in enumerate(tags):
        try:
            query, mode, _ = _split_pseudo_element(tag)
            if mode is not _Mode.TEXT:
                raise _Unusable
            probe.css(query)
        except (_Unusable, SelectorSyntaxError, SelectolaxError, UnicodeError):
            raise InvalidSelector(index, tag, field) from None
    return tuple(tags)


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


def no_matches(selectors: CompiledSelectors | None) -> dict[str, list[str]]:
    """Each selector's name with an empty list of matches."""
    entries = selectors._entries if selectors is not None else ()
    return {entry.name: [] for entry in entries}


def run_selectors(
    tree: LexborHTMLParser, selectors: CompiledSelectors | None
) -> dict[str, list[str]]:
    """Each selector's name with its matches in ``tree``, in document order."""
    entries = selectors._entries if selectors is not None else ()
    return {entry.name: _run_selector(tree, entry) for entry in entries}


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
        return [visible_text(node) for node in nodes]
    if mode is _Mode.OWN_TEXT:
        own = (normalise(node.text(deep=False, separator=" ")) for node in nodes)
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
                if node.tag == TEXT_NODE:
                    text = normalise(node.text_content or "")
                    if text:
                        results.append(text)
            else:
                value = _attribute(node, entry.attr)
                if value is not None:
                    results.append(value)
    return results
