"""The service's words, each declared once: engines, proxy tiers and output formats.

Whatever lists them derives from here: the request model (service.core.schemas), the auto ladder
(service.core.escalation), the costs' configuration, the proxy pools (middlewares.proxy_pool),
the result's fields (service.scrape.results), the dashboard's forms and the command line.

:data:`OUTPUTS` declares each format: what it is made from, the engine it needs, its field in the
result and how the API and the dashboard describe it. Its producer registers under the same name
where it lives: one made from the parsed page with ``service.extraction.outputs.converts`` (run by
the extraction workers), one made from the response as fetched with :meth:`Outputs.produces`
(service.browser.screenshot, pipelines.result; run by ``pipelines.result.ResultPipeline``). So a
new format is three changes: its producer, its line here, its test.

Also here, because pricing, the auto ladder and the settlement share it: the residential trial.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, get_args

from pydantic import Field
from typing_extensions import TypedDict

if TYPE_CHECKING:
    from scrapy.http import Response

Engine = Literal["static", "js"]
# cheapest first: the order in which proxy_type "auto" climbs them
Tier = Literal["none", "datacenter", "residential"]
Format = Literal["markdown", "html", "raw_html", "screenshot", "json", "structured_data", "summary"]
Auto = Literal["auto"]
EngineRequested = Literal[Engine, Auto]
TierRequested = Literal[Tier, Auto]

ENGINES: Final[tuple[Engine, ...]] = get_args(Engine)
TIERS: Final[tuple[Tier, ...]] = get_args(Tier)
FORMATS: Final[tuple[Format, ...]] = get_args(Format)
AUTO: Final[Auto] = "auto"
DIRECT: Final[Tier] = TIERS[0]  # no proxy
RESIDENTIAL: Final[Tier] = "residential"
PROXY_TIERS: Final[tuple[Tier, ...]] = TIERS[1:]  # the tiers that go through a proxy pool
# what a target may answer instead of HTML and is converted (service.extraction.documents)
DocumentType = Literal["pdf", "docx", "pptx", "xlsx", "odt", "epub"]
DOCUMENT_TYPES: Final[tuple[DocumentType, ...]] = get_args(DocumentType)

#: what a format is made from: the parsed page (service.extraction), the response as fetched,
#: or the operator's language model from the page's markdown (pipelines.llm)
MadeFrom = Literal["page", "response", "model"]
#: a producer of a format made from the response: its value, or None to leave the field empty.
#: ``max_bytes`` is the most a document may be (SCRAPESPY_MAX_RAW_HTML_BYTES).
ResponseProducer = Callable[["Response", int], "str | None"]


@dataclass(frozen=True, slots=True)
class Output:
    """One format: how it is made, what it needs, where it goes in the result."""

    name: str
    made_from: MadeFrom
    field: str  # the result's field that holds it
    description: str  # of that field, in the result's schema
    summary: str  # how the request's ``formats`` describes it
    label: str  # the dashboard's checkbox
    needs: Engine | None = None  # the engine that can make it, when only one can
    schema_extra: Mapping[str, str] | None = None  # of that field, in the result's schema
    value_type: Any = None  # the field's type when it is not a string (null when not made)
    checkbox: bool = True  # the dashboard offers it alone; one that needs more options does not


@dataclass(slots=True)
class Outputs:
    """The formats, in the order of the result's fields, and the producers of those made from
    the response. Those made from the page are ``service.extraction.outputs``'s converters."""

    declared: Mapping[str, Output]
    producers: dict[str, ResponseProducer] = field(default_factory=dict)

    @classmethod
    def of(cls, outputs: Iterable[Output]) -> Outputs:
        return cls({output.name: output for output in outputs})

    def __getitem__(self, name: str) -> Output:
        return self.declared[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.declared)

    def made_from(self, made_from: MadeFrom) -> tuple[str, ...]:
        return tuple(name for name, out in self.declared.items() if out.made_from == made_from)

    def produces(self, name: str) -> Callable[[ResponseProducer], ResponseProducer]:
        """Registers the decorated function as the producer of ``name``."""
        output = self.declared[name]
        if output.made_from != "response":
            raise ValueError(f"{name!r} is made from the {output.made_from}, not the response")

        def register(producer: ResponseProducer) -> ResponseProducer:
            if name in self.producers:
                raise ValueError(f"{name!r} has a producer already")
            self.producers[name] = producer
            return producer

        return register

    def from_response(
        self, formats: Iterable[str], response: Response, max_bytes: int
    ) -> dict[str, Any]:
        """field -> value of the ``formats`` made from ``response`` that its producers made."""
        made = {}
        for name in formats:
            producer = self.producers.get(name)
            if producer is not None:
                value = producer(response, max_bytes)
                if value is not None:
                    made[self.declared[name].field] = value
        return made

    def copy(self, *more: Output) -> Outputs:
        """Another registry with these declarations and producers, and ``more``."""
        declared = {**self.declared, **{output.name: output for output in more}}
        return Outputs(declared, dict(self.producers))


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


OUTPUTS: Final = Outputs.of(
    [
        Output(
            "markdown",
            "page",
            field="markdown",
            description='GitHub-flavoured markdown of the page; with "formats": ["markdown"]',
            summary="markdown",
            label="Markdown",
        ),
        Output(
            "html",
            "page",
            field="html",
            description="the page's HTML without scripts, styles, comments, hidden elements and "
            'event attributes, with absolute URLs; with "formats": ["html"]',
            summary="html (cleaned)",
            label="Cleaned HTML",
        ),
        Output(
            "raw_html",
            "response",
            field="raw_html",
            description="the document as received (static) or as rendered (js), decoded; "
            'with "formats": ["raw_html"]',
            summary="raw_html (as received or rendered)",
            label="Raw HTML",
        ),
        Output(
            "screenshot",
            "response",
            field="screenshot",
            description='base64 PNG of the viewport, or of the page with "screenshot_full_page";'
            ' with "formats": ["screenshot"] (js engine)',
            summary="screenshot (base64 PNG; js engine only)",
            label="Screenshot (js engine)",
            needs="js",
            schema_extra={"contentEncoding": "base64", "contentMediaType": "image/png"},
        ),
        Output(
            "json",
            "page",
            field="json",
            description="with json.selectors: the records the schema extracted, one object "
            "per element its baseSelector matches; with json.prompt/json.schema: the operator's "
            'language model\'s answer, valid against json.schema; with "formats": ["json"]',
            summary="json (records through json.selectors, or a model's answer to json.prompt)",
            label="JSON (selectors schema)",
            value_type=Any,
            checkbox=False,
        ),
        Output(
            "structured_data",
            "page",
            field="structured_data",
            description="the structured data the page publishes: its JSON-LD, microdata and "
            "RDFa items (schema.org, each with its @type), its Open Graph and Twitter card "
            'properties; with "formats": ["structured_data"]',
            summary="structured_data (JSON-LD, microdata, RDFa, Open Graph, Twitter card)",
            label="Structured data",
            value_type=StructuredData,
        ),
        Output(
            "summary",
            "model",
            field="summary",
            description="a few sentences about the page by the operator's language model; with "
            '"formats": ["summary"] (needs SCRAPESPY_LLM_BASE_URL)',
            summary="summary (by the operator's language model)",
            label="Summary (language model)",
            checkbox=False,  # the dashboard's try-it asks no model
        ),
    ]
)


def needs_engine(name: str, engine: str) -> str:
    """The refusal of a format that ``engine`` cannot make."""
    return f'\'formats\': "{name}" needs the {engine} engine ("engine": "{engine}")'


@dataclass(frozen=True, slots=True)
class ResidentialTrial:
    """A residential request from an account that is not unlocked is a trial: it needs a trial
    left and is held at the ``none`` cost. Through the residential pool it costs nothing (and
    uses the trial up); after a fallback to a direct connection it is billed direct.

    Pricing (service.billing.pricing), the auto ladder (service.core.escalation) and the
    settlement (pipelines.billing) ask this; PostgreSQL's hold and settle functions (service.db)
    say it again in PL/pgSQL.
    """

    unlocked: bool
    trials_left: int = 0

    def applies(self, tier: str) -> bool:
        """Whether a request at ``tier`` is a trial."""
        return tier == RESIDENTIAL and not self.unlocked

    def allows(self, tier: str) -> bool:
        """Whether the account may make a request at ``tier``."""
        return not self.applies(tier) or self.trials_left > 0

    def held_at(self, tier: str) -> str:
        """The tier whose cost a request at ``tier`` is held (the most it can be billed)."""
        return DIRECT if self.applies(tier) else tier

    @staticmethod
    def used_up(trial: bool, tier_used: str) -> bool:
        """Whether a trial request that succeeded at ``tier_used`` was free, using the trial
        up: it went through the residential pool."""
        return trial and tier_used == RESIDENTIAL


if OUTPUTS.names != FORMATS:  # pragma: no cover - a format declared in one place only
    raise ImportError(f"Format says {FORMATS}, OUTPUTS declares {OUTPUTS.names}")
