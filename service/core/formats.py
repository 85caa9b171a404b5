"""Every output format, declared once: what it is made from, its producer (a dotted path), what
it adds to the scrape's price, its field in the result, its Firecrawl name, and how the API and
the dashboard describe it.

Whatever lists the formats loops over :data:`OUTPUTS`: the request model's allowed ``formats``
(service.core.schemas), ``/openapi.json``, the result's fields (service.scrape.results), the
extraction's options (service.scrape.order), the pipelines that run the producers
(pipelines.result, pipelines.llm) and the Firecrawl front's format names (service.firecrawl).

A producer is named by its dotted path and imported where it runs, never here (core imports no
higher part). What it is called with depends on what the format is made from:

- ``response``: ``produce(response, max_bytes) -> value | None``, by
  ``pipelines.result.ResultPipeline`` on the response as fetched (None: the field stays null);
- ``rendered_page``: the same, on the js engine's response only (a request for it on another
  engine is refused);
- ``page``: in the extraction workers (service.extraction.outputs): ``convert(cleaned_html) ->
  value`` of the page's cleaned HTML, or with ``reads="received"`` ``read(html, url) -> value``
  of its markup as received (what the cleaning drops: scripts, meta tags);
- ``model``: ``await ask(model, markdown, within) -> Answer`` by ``pipelines.llm`` with the
  operator's language model (service.extraction.llm) and the page's markdown.

A deployment declares formats of its own without changing these files: modules named in
``SCRAPESPY_FORMAT_MODULES``, each with a ``FORMATS`` list of :class:`Output`, which the
process declares at its start (:meth:`Outputs.declare_modules`), before it answers anything.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, NotRequired

from pydantic import Field
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from scrapy.http import Response

#: what a format is made from: the response as fetched, the page the js engine rendered, the
#: parsed page (service.extraction), or the operator's language model from the page's markdown
MadeFrom = Literal["response", "rendered_page", "page", "model"]
MADE_FROM: Final[tuple[MadeFrom, ...]] = ("response", "rendered_page", "page", "model")
#: what a page format's producer reads: the page's cleaned HTML, or its markup as received
Reads = Literal["cleaned", "received"]
#: what a format adds to the scrape's price (service.billing.pricing): nothing beyond the page's,
#: or the language model's tokens (their worst case held before the page is fetched)
PriceRule = Literal["page", "model_tokens"]
#: a producer of a format made from the response: its value, or None to leave the field empty.
#: ``max_bytes`` is the most a document may be (SCRAPESPY_MAX_RAW_HTML_BYTES).
ResponseProducer = Callable[["Response", int], Any]


@dataclass(frozen=True, slots=True)
class Output:
    """One format: how it is made, what it costs, where it goes in the result."""

    name: str
    made_from: MadeFrom
    # the dotted path of its producer; None for json, which the request's json options make
    producer: str | None
    field: str  # the result's field that holds it
    description: str  # of that field, in the result's schema
    summary: str  # how the request's ``formats`` describes it
    label: str  # the dashboard's checkbox
    firecrawl: str | None = None  # its name in Firecrawl's ``formats``; None: not offered there
    price: PriceRule = "page"
    reads: Reads = "cleaned"  # a page format's input
    attributes: bool = False  # a page format of the cleaned HTML that keeps every attribute
    schema_extra: Mapping[str, str] | None = None  # of that field, in the result's schema
    value_type: Any = None  # the field's type when it is not a string (null when not made)
    checkbox: bool = True  # the dashboard offers it alone; one that needs more options does not

    def __post_init__(self) -> None:
        if self.made_from not in MADE_FROM:
            raise ValueError(f"{self.name!r}: made from {self.made_from!r}, not one of {MADE_FROM}")
        if (self.made_from == "model") != (self.price == "model_tokens"):
            raise ValueError(f"{self.name!r}: the model's tokens are billed with what it makes")

    @property
    def needs(self) -> str | None:
        """The engine that can make it, when only one can: a rendered page is the js engine's."""
        return "js" if self.made_from == "rendered_page" else None


@dataclass(slots=True)
class Outputs:
    """The formats, in the order of the result's fields."""

    declared: dict[str, Output]

    @classmethod
    def of(cls, outputs: Iterable[Output]) -> Outputs:
        registry = cls({})
        registry.declare(*outputs)
        return registry

    def __getitem__(self, name: str) -> Output:
        return self.declared[name]

    def __iter__(self) -> Iterator[Output]:
        return iter(tuple(self.declared.values()))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.declared)

    def made_from(self, *kinds: MadeFrom) -> tuple[str, ...]:
        return tuple(name for name, out in self.declared.items() if out.made_from in kinds)

    def firecrawl(self) -> dict[str, str]:
        """Firecrawl's format name -> the native format that makes it."""
        return {out.firecrawl: out.name for out in self.declared.values() if out.firecrawl}

    def declare(self, *outputs: Output) -> None:
        for output in outputs:
            known = self.declared.get(output.name)
            if known is not None and known != output:
                raise ValueError(f"the format {output.name!r} is declared already")
            self.declared[output.name] = output

    def declare_modules(self, modules: Iterable[str]) -> None:
        """Declares the ``FORMATS`` of each module (``SCRAPESPY_FORMAT_MODULES``)."""
        for module in modules:
            self.declare(*importlib.import_module(module).FORMATS)

    def copy(self, *more: Output) -> Outputs:
        """Another registry with these declarations and ``more``."""
        registry = Outputs(dict(self.declared))
        registry.declare(*more)
        return registry

    def from_response(
        self, formats: Iterable[str], response: Response, max_bytes: int
    ) -> dict[str, Any]:
        """field -> value of the ``formats`` made from ``response`` that their producers made."""
        made = {}
        for name in formats:
            output = self.declared[name]
            if output.made_from in ("response", "rendered_page") and output.producer:
                value = producer(output.producer)(response, max_bytes)
                if value is not None:
                    made[output.field] = value
        return made


_PRODUCERS: dict[str, Any] = {}


def producer(path: str) -> Any:
    """The object at the dotted ``path`` (``package.module.name``), imported once."""
    found = _PRODUCERS.get(path)
    if found is None:
        module, _, name = path.rpartition(".")
        found = _PRODUCERS[path] = getattr(importlib.import_module(module), name)
    return found


class StructuredData(TypedDict):
    """The ``structured_data`` field (service.extraction.structured)."""

    items: Annotated[
        list[dict[str, Any]],
        Field(
            description="the JSON-LD (an @graph spread), microdata and RDFa items, each with "
            "its schema.org @type and properties by their short names"
        ),
    ]
    opengraph: Annotated[
        dict[str, Any],
        Field(description='og: properties without "og:" (a repeated one is a list)'),
    ]
    twitter: Annotated[
        dict[str, Any],
        Field(description='twitter: card properties without "twitter:"'),
    ]


class DiffChange(TypedDict):
    type: Annotated[str, Field(json_schema_extra={"enum": ["normal", "add", "del"]})]
    content: Annotated[str, Field(description="the line, after its +, - or space")]
    normal: NotRequired[bool]
    add: NotRequired[bool]
    # "del" is a keyword: declared below, by name
    ln: NotRequired[
        Annotated[int, Field(ge=1, description="add: its line now; del: its line before")]
    ]
    ln1: NotRequired[Annotated[int, Field(ge=1, description="normal: its line before")]]
    ln2: NotRequired[Annotated[int, Field(ge=1, description="normal: its line now")]]


DiffChange.__annotations__["del"] = NotRequired[bool]
DiffChange.__optional_keys__ = DiffChange.__optional_keys__ | {"del"}  # type: ignore[misc]


class DiffChunk(TypedDict):
    content: Annotated[str, Field(description="its @@ -a,b +c,d @@ header")]
    changes: list[DiffChange]


class DiffFile(TypedDict):
    from_: Annotated[None, Field(alias="from")]
    to: None
    chunks: list[DiffChunk]


class DiffParsed(TypedDict):
    files: list[DiffFile]


class MarkdownDiff(TypedDict):
    text: Annotated[str, Field(description="the unified diff of the markdown, hunks only")]
    json: Annotated[DiffParsed, Field(description="the same diff parsed, as Firecrawl's")]


class FieldChange(TypedDict):
    previous: Any
    current: Any


class ChangeTracking(TypedDict):
    """The ``change_tracking`` field (service.extraction.changes, pipelines.changes)."""

    previous_scrape_at: Annotated[
        str | None,
        Field(
            description="when the version compared with was scraped (ISO 8601, UTC); null "
            "when there was none"
        ),
    ]
    change_status: Annotated[
        str,
        Field(
            description="new: no previous scrape of this URL and tag; same or changed: its "
            "normalised markdown, line by line, in order; removed: the target answers 404 or 410",
            json_schema_extra={"enum": ["new", "same", "changed", "removed"]},
        ),
    ]
    visibility: Annotated[
        str,
        Field(
            description="visible: a scrape, a batch or a crawl reached the page (Firecrawl's "
            "hidden, for a crawl's page that only a sitemap names, is not given)",
            json_schema_extra={"enum": ["visible", "hidden"]},
        ),
    ]
    diff: NotRequired[
        Annotated[
            MarkdownDiff | None,
            Field(description='"git-diff" mode: null unless changed'),
        ]
    ]
    json: NotRequired[
        Annotated[
            dict[str, FieldChange] | None,
            Field(
                description='"json" mode: each extracted field that differs (records of '
                "json.selectors as <n>.<field>); {} when none does; null when new or removed"
            ),
        ]
    ]


OUTPUTS: Final = Outputs.of(
    [
        Output(
            "markdown",
            "page",
            "service.extraction.outputs.markdown",
            field="markdown",
            description='GitHub-flavoured markdown of the page; with "formats": ["markdown"]',
            summary="markdown",
            label="Markdown",
            firecrawl="markdown",
        ),
        Output(
            "html",
            "page",
            "service.extraction.outputs.cleaned_html",
            field="html",
            description="the page's HTML without scripts, styles, comments, hidden elements and "
            'event attributes, with absolute URLs; with "formats": ["html"]',
            summary="html (cleaned)",
            label="Cleaned HTML",
            firecrawl="html",
            attributes=True,
        ),
        Output(
            "raw_html",
            "response",
            "pipelines.result.raw_html_of",
            field="raw_html",
            description="the document as received (static) or as rendered (js), decoded; "
            'with "formats": ["raw_html"]',
            summary="raw_html (as received or rendered)",
            label="Raw HTML",
            firecrawl="rawHtml",
        ),
        Output(
            "screenshot",
            "rendered_page",
            "service.browser.screenshot.screenshot_of",
            field="screenshot",
            description='base64 PNG of the viewport, or of the page with "screenshot_full_page";'
            ' with "formats": ["screenshot"] (js engine)',
            summary="screenshot (base64 PNG; js engine only)",
            label="Screenshot (js engine)",
            firecrawl="screenshot",
            schema_extra={"contentEncoding": "base64", "contentMediaType": "image/png"},
        ),
        Output(
            "json",
            "page",
            None,
            field="json",
            description="with json.selectors: the records the schema extracted, one object "
            "per element its baseSelector matches; with json.prompt/json.schema: the operator's "
            'language model\'s answer, valid against json.schema; with "formats": ["json"]',
            summary="json (records through json.selectors, or a model's answer to json.prompt)",
            label="JSON (selectors schema)",
            firecrawl="json",
            value_type=Any,
            checkbox=False,
        ),
        Output(
            "structured_data",
            "page",
            "service.extraction.structured.structured_data",
            field="structured_data",
            description="the structured data the page publishes: its JSON-LD, microdata and "
            "RDFa items (schema.org, each with its @type), its Open Graph and Twitter card "
            'properties; with "formats": ["structured_data"]',
            summary="structured_data (JSON-LD, microdata, RDFa, Open Graph, Twitter card)",
            label="Structured data",
            # not one of Firecrawl's: the SDKs send it as {"type": "structuredData"}, and it is
            # answered in the document's metadata (service.firecrawl.scrape.IN_METADATA)
            firecrawl="structuredData",
            reads="received",
            value_type=StructuredData,
        ),
        Output(
            "summary",
            "model",
            "service.extraction.llm.summary",
            field="summary",
            description="a few sentences about the page by the operator's language model; with "
            '"formats": ["summary"] (needs SCRAPESPY_LLM_BASE_URL)',
            summary="summary (by the operator's language model)",
            label="Summary (language model)",
            firecrawl="summary",
            price="model_tokens",
            checkbox=False,  # the dashboard's try-it asks no model
        ),
        Output(
            "change_tracking",
            "page",
            None,  # compared with the account's previous snapshot by pipelines.changes
            field="change_tracking",
            description="how the page changed since this account's previous scrape of the same "
            'URL and change_tracking.tag; with "formats": ["change_tracking"]',
            summary="change_tracking (compared with the previous scrape of the URL and tag)",
            label="Change tracking",
            firecrawl="changeTracking",
            value_type=ChangeTracking,
            checkbox=False,  # a history of the try-it's scrapes would surprise
        ),
    ]
)
#: the formats this service makes on its own, in their order
BUILT_IN: Final = OUTPUTS.names


def needs_engine(name: str, engine: str) -> str:
    """The refusal of a format that ``engine`` cannot make."""
    return f'\'formats\': "{name}" needs the {engine} engine ("engine": "{engine}")'


def needs_model(name: str) -> str:
    """The refusal of a format made by the language model on a server without one."""
    return (
        f"'formats': \"{name}\" needs a language model endpoint, which this server does not "
        "have (SCRAPESPY_LLM_BASE_URL)"
    )
