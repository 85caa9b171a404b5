"""The scrape result (docs/api.md), typed once.

The pipelines fill a :class:`ScrapeResult` (pipelines.result), the watchdog answers one
(service.scrape.engine), the API writes it out as it is (orjson serialises dataclasses natively, in
field order) and ``/openapi.json`` documents it (:func:`json_schema`). After the standard
fields come what the answer cost and how it went: ``error_code``, ``tier_used``,
``credits_charged``, ``cached`` and ``timings``, then the page's ``language``. A blocked scrape
is a :class:`BlockedResult`, whose ``block_reason`` comes after those; any other answer has
none, not a null. The outputs a request asks for in ``formats`` (``markdown``, ``html``,
``raw_html``, ``screenshot``) come last, each only when asked: the answer is then an instance
of a subclass with those fields (:func:`result_class`), so a request without ``formats`` gets
no field of theirs. A request
with ``actions`` gets ``actions`` (each step's outcome) and ``action_results`` the same way,
between ``block_reason`` and the outputs; an auto request (``engine`` or ``proxy_type`` auto)
gets ``attempts`` before them, and its ``engine`` is the engine that answered; one with a
``location`` country gets ``country`` first of all. An answer with
a field cut to its bound (service.extraction.bounds) ends with ``truncated``, naming them
(:func:`with_truncated`); any other answer has none. One that asked the operator's language
model (json.prompt, summary) gets ``llm_usage`` after the outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from functools import cache
from typing import Annotated, Any, Final, NotRequired, TypeVar

from pydantic import Field
from typing_extensions import TypedDict

from service.core.answer_schemas import answer_schema
from service.core.errors import FAILURE_CODES
from service.core.formats import OUTPUTS as FORMAT_OUTPUTS
from service.core.schemas import ACTION_TYPES
from service.core.vocabulary import DOCUMENT_TYPES, ENGINES, TIERS
from service.scrape.timings import Timings


class Link(TypedDict):
    text: str
    href: str


class ActionOutcome(TypedDict):
    index: Annotated[int, Field(ge=0)]
    type: Annotated[str, Field(json_schema_extra={"enum": list(ACTION_TYPES)})]
    ok: bool
    elapsed_ms: Annotated[int, Field(ge=0)]
    error: NotRequired[Annotated[str, Field(description="why the step failed; when ok is false")]]


class ActionResult(TypedDict):
    index: Annotated[int, Field(ge=0, description="the step that produced it")]
    type: Annotated[str, Field(json_schema_extra={"enum": ["screenshot", "evaluate"]})]
    screenshot: NotRequired[
        Annotated[
            str,
            Field(
                description="base64 PNG (a screenshot step)",
                json_schema_extra={"contentEncoding": "base64", "contentMediaType": "image/png"},
            ),
        ]
    ]
    value: NotRequired[Annotated[Any, Field(description="the script's value (an evaluate step)")]]


# recorded by middlewares.escalation; the docstring is the schema's description
# service.extraction.documents; the docstring is the schema's description
class Document(TypedDict):
    """What a document (a PDF, DOCX, PPTX, XLSX or EPUB the target answered instead of HTML)
    declares about itself."""

    type: Annotated[str, Field(json_schema_extra={"enum": list(DOCUMENT_TYPES)})]
    pages: Annotated[
        int,
        Field(ge=0, description="its pages, as billed: slides, worksheets, EPUB chapters"),
    ]
    title: Annotated[str | None, Field(description="the title it declares; null when none")]
    author: Annotated[str | None, Field(description="the author it declares; null when none")]
    created: Annotated[
        str | None, Field(description="its declared creation date (ISO 8601); null when none")
    ]


class Attempt(TypedDict):
    """One attempt of an auto request: the tier and engine it went through, and its outcome."""

    tier: Annotated[str, Field(json_schema_extra={"enum": list(TIERS)})]
    engine: Annotated[str, Field(json_schema_extra={"enum": list(ENGINES)})]
    fingerprint: Annotated[
        str,
        Field(
            description="what the attempt presented itself as: for static, scrapy (Scrapy's "
            "own TLS and headers) or chrome (Chrome's TLS, HTTP/2 and headers); for js, the "
            "browser identity: chrome-<major>-linux or chrome-<major>-android "
            "(SCRAPESPY_BROWSER_IDENTITY=browser), honest-<major>-... (its self-naming user agent)"
        ),
    ]
    status_code: Annotated[int, Field(ge=0, description="0 when no response was received")]
    blocked: bool
    block_reason: str | None
    error_code: Annotated[
        str | None, Field(description="why the attempt failed (an error code); null if it did not")
    ]
    elapsed_ms: Annotated[int, Field(ge=0)]


class ModelUsage(TypedDict):
    prompt_tokens: Annotated[int, Field(ge=0, description="tokens sent to the model")]
    completion_tokens: Annotated[int, Field(ge=0, description="tokens it answered")]
    credits: Annotated[
        int,
        Field(
            ge=0,
            description="what those tokens cost (SCRAPESPY_LLM_CREDITS_PER_1K_TOKENS per started "
            "1,000), part of credits_charged; 0 when the scrape was not billed",
        ),
    ]


class SessionAnswer(TypedDict):
    id: Annotated[str, Field(description="the session's id (GET /sessions, DELETE /sessions/{id})")]
    exit_changed: bool


@dataclass(slots=True)
class ScrapeResult:
    url: Annotated[str, Field(description="the requested URL")]
    final_url: Annotated[str, Field(description="the URL after redirects")]
    status_code: Annotated[
        int, Field(description="HTTP status of the target; 0 when no response was received")
    ]
    success: Annotated[bool, Field(description="whether the fetch succeeded")]
    engine: Annotated[
        str,
        Field(
            description="the engine that produced the answer (never auto)",
            json_schema_extra={"enum": list(ENGINES)},
        ),
    ]
    elapsed_ms: Annotated[int, Field(ge=0, description="the scrape's time in milliseconds")]
    error: Annotated[str | None, Field(description="why it failed; null on success")]
    blocked: Annotated[bool, Field(description="the target answered with an anti-bot page")]
    proxy_used: Annotated[
        bool,
        Field(
            description="a proxy carried the answer's request (false after a fallback to direct)"
        ),
    ]
    # the page's fields (service.extraction), empty when nothing was received
    title: Annotated[str | None, Field(description="the page's title")]
    meta: Annotated[
        dict[str, str], Field(description="meta tags: name, property or http-equiv to content")
    ]
    headings: Annotated[
        dict[str, list[str]], Field(description="h1 to h6, each a list of the headings' text")
    ]
    links: Annotated[list[Link], Field(description="the page's links; href is absolute")]
    images: Annotated[list[str], Field(description="absolute image URLs")]
    text: Annotated[
        str | None, Field(description="the visible text; no scripts, styles or hidden elements")
    ]
    extracted: Annotated[
        dict[str, list[str]],
        Field(description="each of the request's selectors by its name, to what it matched"),
    ]
    # what the answer cost and how it went (after the standard fields)
    error_code: Annotated[
        str | None,
        Field(
            description="why the scrape is not billed, for programs (see error); null exactly "
            "when it is billable: a success that is not blocked",
            json_schema_extra={"enum": [*FAILURE_CODES, None]},
        ),
    ]
    tier_used: Annotated[
        str,
        Field(
            description="the proxy tier the page came through (none after a fallback to direct)",
            json_schema_extra={"enum": list(TIERS)},
        ),
    ]
    credits_charged: Annotated[
        int,
        Field(ge=0, description="what this answer cost; the same as X-Credits-Charged"),
    ]
    cached: Annotated[
        bool, Field(description="answered from this account's recent scrape (max_age), free")
    ]
    timings: Timings
    # the page's own field that the specification has not, after the answer's
    language: Annotated[
        str | None,
        Field(description="the page's language as its <html lang> declares it (en, pt-BR...)"),
    ] = field(default=None, kw_only=True)

    def fill(self, page: Mapping[str, Any]) -> None:
        """Takes the page's fields as ``service.extraction.extract`` gives them, and the
        converted outputs as ``service.extraction.outputs.extract_page`` adds them."""
        self.title = page["title"]
        self.language = page.get("language")
        self.meta = page["meta"]
        self.headings = page["headings"]
        self.links = page["links"]
        self.images = page["images"]
        self.text = page["text"]
        self.extracted = page["extracted"]
        # fields of the result_class that the request's formats chose
        for name in FORMAT_OUTPUTS.made_from("page"):
            if name in page:
                setattr(self, FORMAT_OUTPUTS[name].field, page[name])

    def empty(self, page: Mapping[str, Any]) -> None:
        """Takes back the page's fields (``page``: their empty values,
        ``service.extraction.empty_fields``) and the outputs converted from it: a success
        that became an unbilled failure once read (pipelines.billing) gives nothing away."""
        self.fill(page)
        for name in FORMAT_OUTPUTS.made_from("page"):
            field_name = FORMAT_OUTPUTS[name].field
            if hasattr(self, field_name):
                setattr(self, field_name, None)


@dataclass(slots=True)
class BlockedResult(ScrapeResult):
    block_reason: Annotated[
        str,
        Field(description="vendor of the anti-bot page when blocked is true"),
    ]


R = TypeVar("R", bound=ScrapeResult)


def format_fields() -> tuple[str, ...]:
    """The formats' fields, in their order (service.core.formats): read each time, as a
    deployment's own formats are declared once the process starts."""
    return tuple(output.field for output in FORMAT_OUTPUTS)


COUNTRY: Final = ("country",)
ATTEMPTS: Final = ("attempts",)
ACTION_FIELDS: Final = ("actions", "action_results")
SESSION: Final = ("session",)
MODEL_USAGE: Final = ("llm_usage",)
DOCUMENT: Final = ("document",)
TRUNCATED: Final = ("truncated",)
_OUTPUT_TYPES: Final[dict[str, Any]] = {
    "country": Annotated[
        str | None,
        Field(
            description='with "location": {"country"}: the country of the proxy that carried '
            "the answer's request (ISO 3166-1 alpha-2, lower case); null when it came "
            "directly, after a fallback",
            json_schema_extra={"pattern": "^[a-z]{2}$"},
        ),
    ],
    "attempts": Annotated[
        list[Attempt],
        Field(
            description='every attempt, in order; with "engine" or "proxy_type" "auto". The '
            "last one is the answer's, the only one billed"
        ),
    ],
    "actions": Annotated[
        list[ActionOutcome],
        Field(
            description='one entry per step that ran, in order; with "actions" (js engine). A '
            "failed step is the last one, and the scrape failed"
        ),
    ],
    "action_results": Annotated[
        list[ActionResult],
        Field(description='what the screenshot and evaluate steps produced; with "actions"'),
    ],
    "session": Annotated[
        SessionAnswer,
        Field(
            description='the session the scrape ran in; with "session". exit_changed: its '
            "proxy died and another of the pool carried this call (and the next ones)"
        ),
    ],
    "llm_usage": Annotated[
        ModelUsage | None,
        Field(
            description="the tokens the operator's language model used for json.prompt or "
            "summary, both attempts counted, and what they cost; null when it was not asked "
            "(the page failed first)"
        ),
    ],
    "document": Annotated[
        Document,
        Field(
            description="only when the target answered a document (PDF, DOCX, PPTX, XLSX, "
            "EPUB) instead of HTML: "
            "markdown and text are its content, raw_html and html are null"
        ),
    ],
    "truncated": Annotated[
        list[str],
        Field(
            description="the fields cut to their size limit (docs/api.md, Limits); only when "
            "one was"
        ),
    ],
}


def _output_type(name: str) -> Any:
    """The type of the field ``name``: of a format (service.core.formats), or of the others."""
    for output in FORMAT_OUTPUTS:
        if output.field == name:
            return Annotated[
                str | None if output.value_type is None else output.value_type | None,
                Field(
                    description=output.description,
                    json_schema_extra=dict(output.schema_extra) if output.schema_extra else None,
                ),
            ]
    return _OUTPUT_TYPES[name]


@cache
def result_class(base: type[R], outputs: tuple[str, ...]) -> type[R]:
    """``base`` with the fields of ``outputs`` (in :data:`COUNTRY`, :data:`ATTEMPTS`,
    :data:`ACTION_FIELDS`, :data:`SESSION`, :func:`format_fields`, :data:`MODEL_USAGE`,
    :data:`DOCUMENT` then
    :data:`TRUNCATED` order) after its own; the lists start empty, the outputs as None."""
    if not outputs:
        return base
    extra: list[tuple[str, Any, Any]] = [
        (name, _output_type(name), field(default_factory=list))
        if name in ATTEMPTS + ACTION_FIELDS + TRUNCATED
        else (name, _output_type(name), field(default=None))
        for name in outputs
    ]
    made: type[R] = make_dataclass(base.__name__, extra, bases=(base,), slots=True)
    return made


def with_document(result: ScrapeResult, document: dict[str, Any]) -> ScrapeResult:
    """``result`` with ``document`` after its outputs: a copy of another class, as
    :func:`with_truncated` makes, so that a page's answer has no such field."""
    blocked = isinstance(result, BlockedResult)
    own = {f.name for f in fields(BlockedResult if blocked else ScrapeResult)}
    values = {f.name: getattr(result, f.name) for f in fields(result)}
    outputs = tuple(name for name in values if name not in own) + DOCUMENT
    base = BlockedResult if blocked else ScrapeResult
    made: ScrapeResult = result_class(base, outputs)(**values, document=document)
    return made


def with_truncated(result: ScrapeResult, names: list[str]) -> ScrapeResult:
    """``result`` with ``truncated`` naming the fields that were cut: a copy of another class
    (a slotted dataclass takes no new attribute), so an answer cut nowhere costs nothing."""
    blocked = isinstance(result, BlockedResult)
    own = {f.name for f in fields(BlockedResult if blocked else ScrapeResult)}
    values = {f.name: getattr(result, f.name) for f in fields(result)}
    outputs = tuple(name for name in values if name not in own) + TRUNCATED
    if blocked:
        return result_class(BlockedResult, outputs)(**values, truncated=list(names))
    return result_class(ScrapeResult, outputs)(**values, truncated=list(names))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every answer: all of :class:`ScrapeResult`'s fields are always there,
    ``block_reason`` only when blocked, ``country`` only with a location's country,
    ``attempts`` only with auto, ``actions`` and
    ``action_results`` only with actions, each output only when asked."""
    schema = answer_schema(
        result_class(
            BlockedResult,
            COUNTRY
            + ATTEMPTS
            + ACTION_FIELDS
            + SESSION
            + format_fields()
            + MODEL_USAGE
            + DOCUMENT
            + TRUNCATED,
        )
    )
    schema["required"] = [field.name for field in fields(ScrapeResult)]
    return schema
