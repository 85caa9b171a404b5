"""How large a page may be to parse, and an answer to return (docs/api.md, "Limits").

A page past the parse bounds is not parsed: nesting elements thousands deep makes lexbor's tree
builder quadratic (100,000 nested ``div`` took 13.7 s to parse, 1.1 MB), and lexbor cannot be
interrupted, so the depth is estimated from the tags before parsing, and the pool kills a worker
past ``max_seconds`` (service.extraction.pool). Both are a ``too_large`` failure, unbilled.

An answer's fields are cut where they are made, in the extraction worker, before they cross the
pipe: a short field (title, a meta tag, a heading, a link's text or href, an image URL) at
``field_chars``, a long one (text, markdown, html, each selector match) at ``text_chars``; the
answer then names them in ``truncated``. Cutting keeps what a reader wants of the page, where
failing would bill nothing for a page a script padded. The answer as a whole past
``answer_bytes`` (a million links, a selector matching every nested element) is ``too_large``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Final, Protocol

__all__ = [
    "AnswerBounds",
    "PageTooLarge",
    "answer_too_large",
    "bounded",
    "check_parse",
    "cut",
    "nesting_depth",
]

LONG_FIELDS: Final = ("text", "markdown", "html")
_TEXT: Final[Callable[[dict[str, str]], str]] = itemgetter("text")
_HREF: Final[Callable[[dict[str, str]], str]] = itemgetter("href")

# An opening or closing tag's name; comments and script text are counted too, which can only
# make the depth seem larger. Linear: nothing here looks for a matching end.
_TAG: Final = re.compile(r"<(/?)([a-zA-Z][^\s/>]*)")
# Elements that do not nest what follows them: void ones, and those whose end tag may be left out
# (the parser closes them at the next sibling), so a page of unclosed <p> or <li> is not deep.
_FLAT: Final = frozenset(
    "area base br col embed hr img input link meta param source track wbr keygen frame "
    "html head body p li dt dd option optgroup tr td th thead tbody tfoot colgroup caption "
    "rb rt rtc rp".split()
)


class PageTooLarge(Exception):
    """The page, or its answer, is past a bound: a ``too_large`` failure, worded for the
    caller."""


# The defaults, which are also the settings' (SCRAPESPY_MAX_FIELD_CHARS and the five after it):
# a field's characters, the text's, a whole answer's bytes past which it fails too_large, and
# the parse's depth, elements and seconds.
FIELD_CHARS: Final = 8 * 1024
TEXT_CHARS: Final = 2 * 1024 * 1024
ANSWER_BYTES: Final = 16 * 1024 * 1024
MAX_DEPTH: Final = 2000
MAX_ELEMENTS: Final = 1_000_000
MAX_SECONDS: Final = 10.0
# a document's pages (service.extraction.documents)
DOCUMENT_PAGES: Final = 500
# An extraction worker's address space, in MiB (RLIMIT_AS, set as it starts): the largest page
# the other bounds let through (16 MB, a million elements, with markdown and html) peaked at
# 520 MiB, while a 1.5 MB PDF whose stream inflates to 1 GB took a worker to 2.1 GB.
MAX_MEMORY_MB: Final = 1024


class BoundsSettings(Protocol):
    """What :meth:`AnswerBounds.of` reads: the service's Config (service.core.config)."""

    @property
    def max_field_chars(self) -> int: ...
    @property
    def max_text_chars(self) -> int: ...
    @property
    def max_answer_bytes(self) -> int: ...
    @property
    def extract_max_depth(self) -> int: ...
    @property
    def extract_max_elements(self) -> int: ...
    @property
    def extract_max_seconds(self) -> float: ...
    @property
    def document_max_pages(self) -> int: ...
    @property
    def extract_max_memory_mb(self) -> int: ...


@dataclass(frozen=True, slots=True)
class AnswerBounds:
    """The bounds of one page's parse and answer."""

    field_chars: int = FIELD_CHARS
    text_chars: int = TEXT_CHARS
    answer_bytes: int = ANSWER_BYTES
    max_depth: int = MAX_DEPTH
    max_elements: int = MAX_ELEMENTS
    max_seconds: float = MAX_SECONDS
    document_pages: int = DOCUMENT_PAGES
    max_memory_mb: int = MAX_MEMORY_MB

    @classmethod
    def of(cls, config: BoundsSettings) -> AnswerBounds:
        return cls(
            config.max_field_chars,
            config.max_text_chars,
            config.max_answer_bytes,
            config.extract_max_depth,
            config.extract_max_elements,
            config.extract_max_seconds,
            config.document_max_pages,
            config.extract_max_memory_mb,
        )

    def to_wire(self) -> list[Any]:
        return [
            self.field_chars,
            self.text_chars,
            self.answer_bytes,
            self.max_depth,
            self.max_elements,
            self.max_seconds,
            self.document_pages,
            self.max_memory_mb,
        ]

    @classmethod
    def from_wire(cls, wire: list[Any]) -> AnswerBounds:
        return cls(*wire)


def check_parse(html: str, bounds: AnswerBounds) -> None:
    """Raises :class:`PageTooLarge` for a page past the element or depth bound. A page with
    fewer tags than ``max_depth`` cannot be that deep: it costs one count."""
    tags = html.count("<")
    if tags <= bounds.max_depth:
        return
    if tags > bounds.max_elements:
        raise PageTooLarge(
            f"the page has more than {bounds.max_elements} elements "
            "(SCRAPESPY_EXTRACT_MAX_ELEMENTS)"
        )
    if nesting_depth(html, bounds.max_depth) > bounds.max_depth:
        raise PageTooLarge(
            f"the page nests elements more than {bounds.max_depth} deep "
            "(SCRAPESPY_EXTRACT_MAX_DEPTH)"
        )


def nesting_depth(html: str, stop: int | None = None) -> int:
    """How deep the page's tags nest, counted from its tags as written (at least the depth of
    its tree); the count stops once past ``stop``."""
    depth = deepest = 0
    for match in _TAG.finditer(html):
        if match.group(2).lower() in _FLAT:
            continue
        if match.group(1):
            depth = depth - 1 if depth else 0
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop is not None and deepest > stop:
                    break
    return deepest


def cut(page: dict[str, Any], bounds: AnswerBounds) -> tuple[list[str], int]:
    """Cuts ``page``'s fields (as ``service.extraction.outputs.extract_page`` gives them) to
    ``bounds``, in place; the names of those cut, and the characters of its strings in all."""
    short, long = bounds.field_chars, bounds.text_chars
    truncated: list[str] = []
    size = 0
    title = page["title"]
    if title is not None:
        size += min(len(title), short)
        if len(title) > short:
            page["title"] = title[:short]
            truncated.append("title")
    meta: dict[str, str] = page["meta"]
    if meta:
        if max(map(len, meta.values())) > short or max(map(len, meta)) > short:
            page["meta"] = meta = {key[:short]: value[:short] for key, value in meta.items()}
            truncated.append("meta")
        size += sum(map(len, meta)) + sum(map(len, meta.values()))
    headings: dict[str, list[str]] = page["headings"]
    if headings:
        cut_any = False
        for level, texts in headings.items():
            if max(map(len, texts)) > short:
                headings[level] = texts = [text[:short] for text in texts]
                cut_any = True
            size += sum(map(len, texts))
        if cut_any:
            truncated.append("headings")
    links: list[dict[str, str]] = page["links"]
    if links:
        # measured without a Python loop over every link: a page has hundreds
        text_sizes = list(map(len, map(_TEXT, links)))
        href_sizes = list(map(len, map(_HREF, links)))
        if max(text_sizes) > short or max(href_sizes) > short:
            for link in links:
                link["text"], link["href"] = link["text"][:short], link["href"][:short]
            text_sizes = list(map(len, map(_TEXT, links)))
            href_sizes = list(map(len, map(_HREF, links)))
            truncated.append("links")
        size += sum(text_sizes) + sum(href_sizes) + 20 * len(links)
    images: list[str] = page["images"]
    if images:
        if max(map(len, images)) > short:
            page["images"] = images = [url[:short] for url in images]
            truncated.append("images")
        size += sum(map(len, images))
    extracted: dict[str, list[str]] = page["extracted"]
    if extracted:
        cut_any = False
        for name, values in extracted.items():
            if values:
                if max(map(len, values)) > long:
                    extracted[name] = values = [value[:long] for value in values]
                    cut_any = True
                size += sum(map(len, values))
        if cut_any:
            truncated.append("extracted")
    if page.pop("json_cut", False):  # service.extraction.records cut at its budget
        truncated.append("json")
    for name in LONG_FIELDS:
        value = page.get(name)
        if value:
            size += min(len(value), long)
            if len(value) > long:
                page[name] = value[:long]
                truncated.append(name)
    return truncated, size


def bounded(page: dict[str, Any], bounds: AnswerBounds) -> dict[str, Any]:
    """``page`` cut to ``bounds``, with ``truncated`` when a field was cut; raises
    :class:`PageTooLarge` when even so it is past ``answer_bytes`` (counted in characters here:
    the worker checks the bytes it sends as well)."""
    truncated, size = cut(page, bounds)
    if size > bounds.answer_bytes:
        raise answer_too_large(size, bounds)
    if truncated:
        page["truncated"] = truncated
    return page


def answer_too_large(size: int, bounds: AnswerBounds) -> PageTooLarge:
    return PageTooLarge(
        f"the page's answer is larger than the {bounds.answer_bytes}-byte limit "
        "(SCRAPESPY_MAX_ANSWER_BYTES)"
    )
