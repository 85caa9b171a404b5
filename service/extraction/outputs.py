"""The outputs a caller asks for beyond the standard fields: ``markdown``, ``html``, and
``text`` of the main content or of the tags kept.

``extract_page`` parses the page once: the standard fields (:mod:`service.extraction.fields`)
are taken from the tree first, then the outputs go on with the same tree, which they change:
``only_main_content`` hands it to :func:`service.extraction.main_content.main_of`.

Order: ``include_tags`` (keep only the outermost matches, in document order), ``exclude_tags``
(drop what matches), then the main content when asked. The cleaned HTML has no script, style,
template, comment, hidden element (``hidden``, ``aria-hidden``, inline ``display: none``) or
event attribute (``on*``); its ``href``, ``src``, ``poster`` and ``srcset`` URLs are absolute
(the document's ``<base>`` is honoured) and ``javascript:`` URLs are dropped. The markdown is
html-to-markdown's GitHub-flavoured rendering of that HTML. ``text`` comes from the same visible
text walker as the whole page's (:mod:`service.extraction.text`).

A format made from the page (service.core.formats declares which) is made by its
:class:`PageProducer`, a function named by its dotted path: a converter of that cleaned HTML
(``convert(cleaned) -> value``), or, when it reads what the cleaning drops (scripts, meta tags:
``structured_data``), a reader of the page as received (``read(html, url) -> value``). The
caller gives each asked format's producer (``OutputOptions.producers``); this library's own
formats have theirs in :data:`STANDARD`.

Options travel to an extraction worker (:mod:`service.extraction.pool`) as a plain dict:
:meth:`OutputOptions.to_wire` and :meth:`OutputOptions.from_wire`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any, Final, Literal

import html_to_markdown
from selectolax.lexbor import LexborHTMLParser, LexborNode

from service.extraction import main_content
from service.extraction.fields import UrlResolver, document_base, empty_fields, fields_of, parse
from service.extraction.main_content import main_of
from service.extraction.records_run import extract_records
from service.extraction.text import visible_text

if TYPE_CHECKING:
    from service.extraction.selectors import CompiledSelectors

__all__ = [
    "STANDARD",
    "OutputOptions",
    "PageProducer",
    "extract_page",
    "render",
]


@dataclass(frozen=True, slots=True)
class PageProducer:
    """How a format made from the page is made: the dotted path of its function, what it reads
    (``cleaned``: the cleaned HTML of what is kept of the page; ``received``: the page's markup
    and URL), and for a converter whether it keeps the elements' attributes, which are then all
    cleaned (markdown writes some URLs only, which are the only attributes cleaned for it)."""

    path: str
    reads: Literal["cleaned", "received"] = "cleaned"
    attributes: bool = False

    def to_wire(self) -> list[Any]:
        return [self.path, self.reads, self.attributes]

    @classmethod
    def from_wire(cls, wire: list[Any]) -> PageProducer:
        return cls(wire[0], wire[1], bool(wire[2]))


#: the producers of this library's own formats, for a caller that names no others
STANDARD: Final[Mapping[str, PageProducer]] = {
    "markdown": PageProducer("service.extraction.outputs.markdown"),
    "html": PageProducer("service.extraction.outputs.cleaned_html", attributes=True),
    "structured_data": PageProducer("service.extraction.structured.structured_data", "received"),
}

_LOADED: dict[str, Callable[..., Any]] = {}


def _function(path: str) -> Callable[..., Any]:
    """The function at the dotted ``path``, imported once (in a worker, at its first page)."""
    found = _LOADED.get(path)
    if found is None:
        module, _, name = path.rpartition(".")
        found = _LOADED[path] = getattr(importlib.import_module(module), name)
    return found


_UNRENDERED_TAGS: Final = (
    "script", "style", "noscript", "template", "iframe", "object", "embed", "noembed", "noframes",
    "link", "meta", "base", "head", "title",
)  # fmt: skip
_HIDDEN_SELECTORS: Final = (
    "[hidden]", "[aria-hidden=true i]", "[style*='display:none' i]", "[style*='display: none' i]",
    "[style*='visibility:hidden' i]", "[style*='visibility: hidden' i]", "input[type=hidden i]",
)  # fmt: skip
_UNRENDERED: Final = ", ".join(_UNRENDERED_TAGS)
_HIDDEN: Final = ", ".join(_HIDDEN_SELECTORS)
# What is left of them in a main content: main_of removed the others from the whole tree.
_UNRENDERED_IN_MAIN: Final = ", ".join(
    t for t in _UNRENDERED_TAGS if t not in main_content.UNRENDERED
)
_HIDDEN_IN_MAIN: Final = ", ".join(
    s for s in _HIDDEN_SELECTORS if s not in main_content.HIDDEN.split(", ")
)
_URL_ATTRIBUTES: Final = frozenset({"href", "src", "poster", "action", "formaction", "cite"})
_WITH_URL: Final = ", ".join(f"[{name}]" for name in sorted(_URL_ATTRIBUTES | {"srcset"}))
# The URLs markdown writes: links, images and media, a quote's source (not srcset, poster, forms).
_MARKDOWN_URL_ATTRIBUTES: Final = frozenset({"href", "src", "cite"})
_MARKDOWN_WITH_URL: Final = ", ".join(f"[{name}]" for name in sorted(_MARKDOWN_URL_ATTRIBUTES))
# An event attribute somewhere in the page: "<p onclick=", "<a\nonmouseover =", "<img/onerror="
# (names are case-insensitive). Linear: each try stops at the next "<" or ">".
_EVENT_ATTRIBUTE: Final = re.compile(r"<[^<>]*?[\s/]on[a-z]+\s*=", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class OutputOptions:
    """What to compute beyond the standard fields (``ScrapeOrder.output_options``)."""

    formats: frozenset[str] = frozenset()
    only_main_content: bool = False
    include_tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    # the request's json.selectors schema, checked (service.extraction.records)
    records: Mapping[str, Any] | None = None
    # the producer of each format of ``formats`` (those of :data:`STANDARD` by default)
    producers: Mapping[str, PageProducer] = field(default_factory=lambda: STANDARD)
    # change_tracking.selectors, checked: the records its json mode compares (``tracked_json``)
    tracked: Mapping[str, Any] | None = None

    def producer(self, name: str) -> PageProducer:
        return self.producers[name]

    @property
    def read(self) -> frozenset[str]:
        """The formats read from the page as received."""
        return frozenset(n for n in self.formats if self.producers[n].reads == "received")

    @property
    def replaces_text(self) -> bool:
        """Whether ``text`` is the main content's or the tags' rather than the whole page's."""
        return bool(self.only_main_content or self.include_tags or self.exclude_tags)

    def to_wire(self) -> dict[str, Any]:
        return {
            "formats": sorted(self.formats),
            "main": self.only_main_content,
            "include": list(self.include_tags),
            "exclude": list(self.exclude_tags),
            "records": self.records,
            "producers": {name: self.producers[name].to_wire() for name in sorted(self.formats)},
            "tracked": self.tracked,
        }

    @classmethod
    def from_wire(cls, wire: dict[str, Any] | None) -> OutputOptions | None:
        if wire is None:
            return None
        return cls(
            frozenset(wire["formats"]),
            bool(wire["main"]),
            tuple(wire["include"]),
            tuple(wire["exclude"]),
            wire.get("records"),
            {name: PageProducer.from_wire(made) for name, made in wire["producers"].items()},
            wire.get("tracked"),
        )


def extract_page(
    html: str,
    url: str,
    selectors: CompiledSelectors | None = None,
    options: OutputOptions | None = None,
) -> dict[str, Any]:
    """``service.extraction.extract``'s fields, plus the outputs ``options`` asks for."""
    tree = parse(html)
    if tree is None:
        page = empty_fields(selectors)
        if options is not None:
            page.update(_empty_outputs(options, page["text"]))
            if options.records is not None:
                page["json"] = []
            if options.tracked is not None:
                page["tracked_json"] = []
        return page
    # one resolver for the fields' and the outputs' URLs: each link is resolved once
    resolve = UrlResolver(document_base(tree, url))
    replaced = options is not None and options.replaces_text
    page = fields_of(tree, url, selectors, text=not replaced, resolve=resolve)
    if options is not None:
        if options.records is not None:
            # parsed again by lxml, which runs XPath; before render changes the tree's page
            page["json"], cut = extract_records(options.records, html, resolve)
            if cut:
                page["json_cut"] = True
        if options.tracked is not None:
            page["tracked_json"], _ = extract_records(options.tracked, html, resolve)
        page.update(render(tree, html, resolve, options))
        for name in options.read:
            page[name] = _function(options.producer(name).path)(html, url)
    return page


def render(
    tree: LexborHTMLParser, html: str, resolve: UrlResolver, options: OutputOptions
) -> dict[str, Any]:
    """``text``, and ``markdown`` and ``html`` when asked, of the page ``tree`` was parsed from.

    ``tree`` is changed: take the standard fields from it first.
    """
    tagged = bool(options.include_tags or options.exclude_tags)
    root: LexborNode | None
    title = ""
    if tagged:
        tree = _apply_tags(tree, options)
    if options.only_main_content:
        title, root = main_of(tree)
    else:
        root = tree.body
    if root is None:
        return _empty_outputs(options, None)
    _strip(root, comments="<!--" in html, main=options.only_main_content)
    out: dict[str, Any] = {}
    if options.replaces_text:
        out["text"] = visible_text(root) or None
    converted = options.formats - options.read
    if converted:
        # Markdown writes no attribute but some URLs: the rest matters to ``html`` only.
        full = any(options.producer(name).attributes for name in converted)
        events = full and _EVENT_ATTRIBUTE.search(html) is not None
        _clean_attributes(root, resolve, events, full)
        cleaned = root.inner_html if root.tag == "body" else root.html
        cleaned = cleaned or ""
        if title:
            # The main content's headline is its title, taken out of the body (and out of
            # ``text``, as article bodies are scored); markdown and html start with it again.
            cleaned = f"<h1>{escape(title, quote=False)}</h1>\n{cleaned}"
        for name in converted:
            out[name] = _function(options.producer(name).path)(cleaned)
    return out


def cleaned_html(cleaned: str) -> str:
    return cleaned


def markdown(cleaned: str) -> str:
    converted = html_to_markdown.convert(cleaned, main_content.MARKDOWN_OPTIONS)
    return converted.content or ""


def _empty_outputs(options: OutputOptions, text: str | None) -> dict[str, Any]:
    # a page with no tree: its converted formats are empty, a reader reads an empty page
    read = options.read
    out: dict[str, Any] = {
        name: _function(options.producer(name).path)("", "") if name in read else ""
        for name in options.formats
    }
    if options.replaces_text:
        out["text"] = None
    elif text is not None:
        out["text"] = text
    return out


def _apply_tags(tree: LexborHTMLParser, options: OutputOptions) -> LexborHTMLParser:
    if options.include_tags:
        kept: list[LexborNode] = []
        kept_ids: set[int] = set()
        for node in tree.css(", ".join(options.include_tags)):
            parent = node.parent
            while parent is not None and parent.mem_id not in kept_ids:
                parent = parent.parent
            if parent is None:  # not inside a match already kept
                kept.append(node)
                kept_ids.add(node.mem_id)
        body = "".join(_standalone(node) for node in kept)
        tree = LexborHTMLParser(f"<html><body>{body}</body></html>", scripting=True)
    if options.exclude_tags:
        for node in tree.css(", ".join(options.exclude_tags)):
            node.remove()
    return tree


def _standalone(node: LexborNode) -> str:
    """``node``'s HTML, inside the table it needs to be parsed again (a lone ``<tr>`` or ``<td>``
    in a ``<body>`` is dropped by the parser, and only its text would be left)."""
    html = node.html or ""
    if node.tag in ("td", "th"):
        return f"<table><tr>{html}</tr></table>"
    if node.tag in ("tr", "thead", "tbody", "tfoot", "caption", "colgroup"):
        return f"<table>{html}</table>"
    return html


def _strip(root: LexborNode, comments: bool, main: bool = False) -> None:
    """Remove what a reader does not see: unrendered and hidden elements, and comments when the
    page has any (finding them walks every node: as long as the visible text takes). ``main``:
    ``root`` is a main content, where only what main_of leaves is looked for."""
    for node in root.css(_UNRENDERED_IN_MAIN if main else _UNRENDERED):
        node.remove()
    for node in root.css(_HIDDEN_IN_MAIN if main else _HIDDEN):
        node.remove()
    if not comments:
        return
    comments_found = [node for node in root.traverse(include_text=True) if node.tag == "-comment"]
    for node in comments_found:
        node.remove()


def _clean_attributes(
    root: LexborNode, resolve: UrlResolver, events: bool, full: bool = True
) -> None:
    """Make URLs absolute and drop ``javascript:`` ones; drop event attributes when ``events``
    says the page has any (walking every element costs as much as the markdown conversion).
    Without ``full``, only the URLs that markdown writes."""
    names = _URL_ATTRIBUTES if full else _MARKDOWN_URL_ATTRIBUTES
    for node in root.css(_WITH_URL if full else _MARKDOWN_WITH_URL):
        edit = node.attrs
        # a node has an attribute or two: look at those rather than for each URL attribute
        for name, value in node.attributes.items():
            if name in names:
                absolute = resolve(value)
                if absolute is None:
                    del edit[name]
                elif absolute != value:
                    edit[name] = absolute
            elif full and name == "srcset" and value:
                edit[name] = _srcset(value, resolve)
            elif name == "title" and not value:
                # markdown would write the link or image with an empty title: (url "")
                del edit[name]
    if not events:
        return
    for node in root.traverse():
        for name in node.attributes:
            if name[:2].lower() == "on":
                del node.attrs[name]


def _srcset(value: str, resolve: UrlResolver) -> str:
    candidates = []
    for candidate in value.split(","):
        parts = candidate.split()
        if not parts:
            continue
        absolute = resolve(parts[0])
        if absolute is not None:
            candidates.append(" ".join([absolute, *parts[1:]]))
    return ", ".join(candidates)
