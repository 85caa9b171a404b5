"""What a scrape request sends with the page or asks of it: cookies, a location, and
``json`` (selectors or a prompt to the operator's language model)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    model_validator,
)

from service.core.errors import BadRequest
from service.core.places import COUNTRIES, LANGUAGE_PATTERN, MAX_LANGUAGES
from service.core.schemas.common import (
    COOKIE_DOMAIN_PATTERN,
    COOKIE_NAME_PATTERN,
    COOKIE_PATH_PATTERN,
    COOKIE_VALUE_PATTERN,
    MAX_COOKIE_VALUE_LENGTH,
    _matching,
    _Strict,
)
from service.extraction.model_schema import InvalidSchema as InvalidModelSchema
from service.extraction.model_schema import check_schema as check_model_schema
from service.extraction.records import (
    FIELD_TYPES,
    MAX_DEPTH,
    MAX_FIELDS,
    TRANSFORMS,
    InvalidSchema,
    check_schema,
)
from service.extraction.records import MAX_SELECTOR_CHARS as MAX_RECORD_SELECTOR


class Cookie(_Strict):
    name: Annotated[
        str,
        Field(max_length=256, json_schema_extra={"pattern": COOKIE_NAME_PATTERN}),
        _matching(
            COOKIE_NAME_PATTERN, "must be a cookie name: letters, digits and !#$%&'*+-.^_`|~"
        ),
    ]
    value: Annotated[
        str,
        Field(
            max_length=MAX_COOKIE_VALUE_LENGTH,
            json_schema_extra={"pattern": COOKIE_VALUE_PATTERN},
        ),
        _matching(
            COOKIE_VALUE_PATTERN,
            "must be printable ASCII without spaces, double quotes, commas, semicolons or "
            "backslashes",
        ),
    ]
    domain: (
        Annotated[
            str,
            Field(
                max_length=253,
                description="defaults to the URL's host",
                json_schema_extra={"pattern": COOKIE_DOMAIN_PATTERN},
            ),
            _matching(COOKIE_DOMAIN_PATTERN, "must be a host name"),
        ]
        | None
    ) = None
    path: (
        Annotated[
            str,
            Field(
                max_length=1024,
                description='defaults to "/"',
                json_schema_extra={"pattern": COOKIE_PATH_PATTERN},
            ),
            _matching(
                COOKIE_PATH_PATTERN, 'must be a path starting with "/", without spaces or ";"'
            ),
        ]
        | None
    ) = None


def _known_country(code: str) -> str:
    country = code.lower()
    if country not in COUNTRIES:
        raise ValueError(f"{code!r} is not an ISO 3166-1 alpha-2 country code")
    return country


class Location(_Strict):
    """Where the page is fetched from (a proxy tagged with ``country``) and in which languages
    it is asked for (``Accept-Language``; for js the browser's locale and time zone too)."""

    country: (
        Annotated[
            str,
            Field(
                description="ISO 3166-1 alpha-2 code (de, us...): the page comes through a "
                "proxy in that country; an unknown code, or one the requested proxy tier "
                "does not offer, is a 400 (GET /pricing lists them)",
                json_schema_extra={"pattern": "^[A-Za-z]{2}$"},
            ),
            AfterValidator(_known_country),
        ]
        | None
    ) = None
    languages: Annotated[
        list[
            Annotated[
                str,
                Field(max_length=35, json_schema_extra={"pattern": LANGUAGE_PATTERN}),
                _matching(LANGUAGE_PATTERN, "must be a language tag such as de-DE or en"),
            ]
        ],
        Field(
            max_length=MAX_LANGUAGES,
            description="language tags, preferred first: Accept-Language (and the js "
            "browser's locale, from the first); by default the country's main language",
        ),
    ] = Field(default_factory=list)


NO_LLM = (
    "json.prompt needs a language model endpoint, which this server does not have "
    "(SCRAPESPY_LLM_BASE_URL)"
)
JSON_NEEDS_FORMAT = "'json' needs \"json\" in 'formats'"
FORMAT_NEEDS_JSON = '\'formats\': "json" needs \'json\' ({"selectors": ...} or {"prompt": ...})'
_SELECTOR_DOC = {"type": "string", "minLength": 1, "maxLength": MAX_RECORD_SELECTOR}


def _record_field(depth: int) -> dict[str, Any]:
    """A field of a json.selectors schema, ``depth`` levels of ``fields`` allowed below it: what
    :func:`service.extraction.records.check_schema` checks, but that a selector is CSS or XPath
    and that a pattern is a regular expression."""
    field: dict[str, Any] = {
        "type": "object",
        "required": ["name", "type"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "type": {"enum": list(FIELD_TYPES)},
            "selector": _SELECTOR_DOC,
            "attribute": {"type": "string", "minLength": 1},
            "pattern": {"type": "string", "minLength": 1, "maxLength": 1024},
            "default": {"type": ["string", "number", "boolean", "null"]},
            "transform": {
                "anyOf": [
                    {"enum": list(TRANSFORMS)},
                    {"type": "array", "minItems": 1, "items": {"enum": list(TRANSFORMS)}},
                ]
            },
        },
        "allOf": [
            {
                "anyOf": [
                    {
                        "properties": {"type": {"enum": ["text", "html"]}},
                        "not": {"anyOf": [{"required": ["pattern"]}, {"required": ["fields"]}]},
                    },
                    {
                        "properties": {"type": {"const": "attribute"}},
                        "required": ["attribute"],
                        "not": {"anyOf": [{"required": ["pattern"]}, {"required": ["fields"]}]},
                    },
                    {
                        "properties": {"type": {"const": "regex"}},
                        "required": ["pattern"],
                        "not": {"required": ["fields"]},
                    },
                    {
                        "properties": {"type": {"enum": ["nested", "list", "nested_list"]}},
                        "required": ["selector", "fields"],
                        "not": {"required": ["pattern"]},
                    },
                ]
            }
        ],
    }
    if depth > 0:
        field["properties"]["fields"] = {
            "type": "array",
            "maxItems": 4,
            "items": _record_field(depth - 1),
        }
    else:
        field["properties"]["fields"] = {"type": "array", "maxItems": 0}
    return field


_RECORDS_DOC = (
    "a Crawl4AI-style schema (JsonCssExtractionStrategy): {name, "
    "baseSelector, baseFields, fields: [{name, selector, type, attribute, pattern, "
    "default, transform, fields}]}; types text, attribute, html, regex, nested, list, "
    "nested_list; transforms strip, number, absolute_url, lowercase, uppercase; a "
    "selector starting with /, ./ or ( is XPath, any other CSS; at most "
    f"{MAX_DEPTH} levels and {MAX_FIELDS} fields"
)
#: a json.selectors schema (and change_tracking.selectors): a tree of CSS or XPath selectors
RecordSelectors = Annotated[
    dict[str, Any] | None,
    Field(
        description=_RECORDS_DOC,
        json_schema_extra={
            "type": "object",
            "required": ["baseSelector", "fields"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "baseSelector": _SELECTOR_DOC,
                "baseFields": {"type": "array", "maxItems": 4, "items": _record_field(0)},
                "fields": {"type": "array", "maxItems": 8, "items": _record_field(2)},
            },
        },
    ),
]


class JsonOptions(_Strict):
    """``json``: records through a selectors schema, or JSON from a language model."""

    # documents _one_way
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["selectors"],
                    "properties": {
                        "selectors": {"type": "object"},
                        "prompt": {"type": "null"},
                        "schema": {"type": "null"},
                    },
                },
                {
                    "anyOf": [
                        {"required": ["prompt"], "properties": {"prompt": {"type": "string"}}},
                        {"required": ["schema"], "properties": {"schema": {"type": "object"}}},
                    ],
                    "properties": {"selectors": {"type": "null"}},
                },
            ]
        }
    )

    selectors: RecordSelectors = None
    prompt: Annotated[
        str | None, Field(description="what to extract, for the operator's language model")
    ] = None
    schema_: Annotated[
        dict[str, Any] | None,
        Field(alias="schema", description="the JSON Schema the model's answer must validate"),
    ] = None

    @model_validator(mode="after")
    def _one_way(self) -> JsonOptions:
        if (self.selectors is None) == (self.prompt is None and self.schema_ is None):
            raise ValueError("exactly one of 'selectors' and 'prompt'/'schema' must be given")
        return self

    def check(self, model: bool) -> None:
        """The json.selectors schema runs as it is, or a 400 names its bad path; a prompt needs
        the operator's ``model``, and its schema must be a JSON Schema (a 400 names its path)."""
        if self.selectors is None:
            if not model:
                raise BadRequest(f"invalid request: {NO_LLM}")
            if self.schema_ is not None:
                try:
                    check_model_schema(self.schema_)
                except InvalidModelSchema as exc:
                    where = f"json.schema.{exc.path}" if exc.path else "json.schema"
                    raise BadRequest(f"invalid request: '{where}': {exc}") from None
            return
        try:
            check_schema(self.selectors)
        except InvalidSchema as exc:
            raise BadRequest(f"invalid request: {exc}") from None
