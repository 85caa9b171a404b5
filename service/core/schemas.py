"""Request bodies: one definition gives validation, error messages and the OpenAPI schemas."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar, get_args
from urllib.parse import urlsplit

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from service.core.errors import BadRequest
from service.core.places import COUNTRIES, LANGUAGE_PATTERN, MAX_LANGUAGES, unavailable
from service.core.vocabulary import (
    FORMATS,
    OUTPUTS,
    EngineRequested,
    Format,
    TierRequested,
    needs_engine,
)
from service.extraction import (
    CompiledSelectors,
    InvalidSelector,
    compile_selectors,
    compile_tags,
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

M = TypeVar("M", bound=BaseModel)

MAX_URL_LENGTH = 8192
MAX_SELECTORS = 50
MAX_TAGS = 50
SCREENSHOT_NEEDS_JS = needs_engine("screenshot", "js")
FULL_PAGE_NEEDS_SCREENSHOT = "'screenshot_full_page' needs \"screenshot\" in 'formats'"
ACTIONS_NEED_JS = '\'actions\' run in a browser: they need the js engine ("engine": "js")'
WAIT_FOR_NEEDS_JS = '\'wait_for\' waits in a browser: it needs the js engine ("engine": "js")'
SETTLE_MS_NEEDS_JS = '\'settle_ms\' is how a browser waits: it needs the js engine ("engine": "js")'
MAX_SETTLE_MS = 10_000
MAX_ACTIONS = 50
MAX_WAIT_MS = 120_000  # the largest timeout; a wait past the request's own fails when it runs
MAX_SCROLL_PX = 1_000_000
MAX_SELECTOR_LENGTH = 4096
MAX_TEXT_LENGTH = 65_536
MAX_SCRIPT_LENGTH = 65_536
MAX_KEY_LENGTH = 64
MAX_HEADERS = 32
MAX_HEADER_VALUE_LENGTH = 4096
MAX_COOKIES = 50
MAX_COOKIE_VALUE_LENGTH = 4096

# The documented ``url`` pattern, and the first check the service makes, so that what the schema
# accepts and what the service accepts are the same strings. Whitespace is spelled out (Python's
# str.isspace() set, which strip() removes) because ECMA, Python and Rust regexes disagree on \s.
_WS = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a"
    r"\u2028\u2029\u202f\u205f\u3000"
)
_PORT = r"(?:[0-9]{0,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
# No user:password@ (see CREDENTIALS_REFUSED); an @ after the host is the path's or query's.
URL_PATTERN = (
    rf"^[{_WS}]*[Hh][Tt][Tt][Pp][Ss]?://"
    rf"(?:[^{_WS}/?#@\[\]:]+|\[[0-9A-Fa-f:.]+\])(?::{_PORT})?(?:[/?#][^{_WS}]*)?[{_WS}]*$"
)
_HTTP_URL = re.compile(URL_PATTERN)
# A password in a target URL would be echoed in url and final_url and written to the logs; the
# caller sends credentials in a header instead, where they stay out of both.
CREDENTIALS_REFUSED = (
    "credentials (user:password@) in the URL are not supported; send them in an "
    "Authorization header ('headers')"
)

# Headers and cookies, written so that ECMA and Python regexes read them alike: ``(?![\s\S])`` is
# the end of the string in both (Python's ``$`` also matches before a final newline). The service
# checks them with these very patterns (a header's name against REFUSED_HEADERS first, to name
# it), so that the schema and the service agree.
_END = r"(?![\s\S])"
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]"
# Host and Content-Length are the connection's own, hop-by-hop headers are not the caller's to
# send through, and Proxy-* would reach the operator's proxies.
REFUSED_HEADERS = (
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
)


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in word)


_REFUSED = "|".join(_any_case(name) for name in REFUSED_HEADERS)
HEADER_NAME_PATTERN = rf"^(?!(?:{_REFUSED}){_END}|{_any_case('proxy-')}){_TOKEN}+{_END}"
HEADER_VALUE_PATTERN = rf"^[\t\x20-\x7E]*{_END}"  # printable ASCII and tabs: no CR, LF or NUL
COOKIE_NAME_PATTERN = rf"^{_TOKEN}+{_END}"
# RFC 6265's cookie-octet: no space, double quote, comma, semicolon or backslash
COOKIE_VALUE_PATTERN = rf"^[\x21\x23-\x2B\x2D-\x3A\x3C-\x5B\x5D-\x7E]*{_END}"
COOKIE_DOMAIN_PATTERN = rf"^\.?[0-9A-Za-z](?:[0-9A-Za-z.-]*[0-9A-Za-z])?{_END}"
COOKIE_PATH_PATTERN = rf"^/[\x21-\x3A\x3C-\x7E]*{_END}"
_VALID_NAME = re.compile(rf"^{_TOKEN}+{_END}")
_HEADER_VALUE = re.compile(HEADER_VALUE_PATTERN)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _css(selector: str) -> str:
    try:
        compile_tags("selector", [selector])
    except InvalidSelector:
        raise ValueError(f"invalid CSS selector {selector!r}") from None
    return selector


def _matching(pattern: str, what: str) -> AfterValidator:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if compiled.search(value) is None:
            raise ValueError(what)
        return value

    return AfterValidator(check)


Selector = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_SELECTOR_LENGTH,
        description="a CSS selector (no pseudo-elements); one that is not valid CSS is a 400 "
        "naming it",
    ),
    AfterValidator(_css),
]


def _whole(value: Any) -> Any:
    """JSON Schema counts ``1500.0`` as an integer, and so does the service."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Whole = BeforeValidator(_whole)
# a session's name (service.scrape.sessions), the caller's own
SESSION_NAME_PATTERN = r"^[A-Za-z0-9._:@-]{1,100}$"
SESSION_NAME_RULE = "1 to 100 letters, digits or . _ : @ -"
Milliseconds = Annotated[int, Field(ge=0, le=MAX_WAIT_MS, description="milliseconds"), Whole]


class WaitFor(_Strict):
    """After the page loaded: until ``selector`` is visible, or ``ms`` milliseconds."""

    # documents _exactly_one: one of the two, the other absent or null
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["selector"],
                    "properties": {"selector": {"type": "string"}, "ms": {"type": "null"}},
                },
                {
                    "required": ["ms"],
                    "properties": {"ms": {"type": "integer"}, "selector": {"type": "null"}},
                },
            ]
        }
    )

    selector: Selector | None = None
    ms: Milliseconds | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> WaitFor:
        if (self.selector is None) == (self.ms is None):
            raise ValueError("give exactly one of 'selector' and 'ms'")
        return self


class WaitStep(_Strict):
    type: Literal["wait"]
    ms: Milliseconds


class WaitForStep(_Strict):
    type: Literal["wait_for"]
    selector: Selector


class ClickStep(_Strict):
    type: Literal["click"]
    selector: Selector
    all: Annotated[bool, Field(description="click every match, not only the first")] = False


class TypeStep(_Strict):
    type: Literal["type"]
    selector: Selector
    text: Annotated[str, Field(max_length=MAX_TEXT_LENGTH)]


class PressStep(_Strict):
    type: Literal["press"]
    key: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_KEY_LENGTH,
            description='a key as the browser names it: "Enter", "Tab", "ArrowDown", "a", '
            '"Control+A"',
        ),
    ]


class ScrollStep(_Strict):
    """``direction`` with ``amount``, or ``to``."""

    # documents _one_way
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["direction", "amount"],
                    "properties": {
                        "direction": {"type": "string"},
                        "amount": {"type": "integer"},
                        "to": {"type": "null"},
                    },
                },
                {
                    "required": ["to"],
                    "properties": {
                        "to": {"type": "string"},
                        "direction": {"type": "null"},
                        "amount": {"type": "null"},
                    },
                },
            ]
        }
    )

    type: Literal["scroll"]
    direction: Literal["down", "up"] | None = None
    amount: (
        Annotated[int, Field(ge=1, le=MAX_SCROLL_PX, description="CSS pixels"), Whole] | None
    ) = None
    to: Literal["bottom"] | None = None

    @model_validator(mode="after")
    def _one_way(self) -> ScrollStep:
        if self.to is not None:
            if self.direction is not None or self.amount is not None:
                raise ValueError("give either 'to' or 'direction' with 'amount', not both")
        elif self.direction is None or self.amount is None:
            raise ValueError("give 'direction' with 'amount' (pixels), or 'to': \"bottom\"")
        return self


class ScreenshotStep(_Strict):
    type: Literal["screenshot"]
    full_page: bool = False


class EvaluateStep(_Strict):
    type: Literal["evaluate"]
    script: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_SCRIPT_LENGTH,
            description="JavaScript run in the page; its JSON-serialisable value (size-capped) "
            "goes to action_results",
        ),
    ]


Action = Annotated[
    WaitStep
    | WaitForStep
    | ClickStep
    | TypeStep
    | PressStep
    | ScrollStep
    | ScreenshotStep
    | EvaluateStep,
    Field(discriminator="type"),
]
ACTION_TYPES: tuple[str, ...] = tuple(
    get_args(step.model_fields["type"].annotation)[0] for step in get_args(get_args(Action)[0])
)


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
SUMMARY_NO_LLM = (
    "'formats': \"summary\" needs a language model endpoint, which this server does not have "
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

    selectors: Annotated[
        dict[str, Any] | None,
        Field(
            description="a Crawl4AI-style schema (JsonCssExtractionStrategy): {name, "
            "baseSelector, baseFields, fields: [{name, selector, type, attribute, pattern, "
            "default, transform, fields}]}; types text, attribute, html, regex, nested, list, "
            "nested_list; transforms strip, number, absolute_url, lowercase, uppercase; a "
            "selector starting with /, ./ or ( is XPath, any other CSS; at most "
            f"{MAX_DEPTH} levels and {MAX_FIELDS} fields",
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
    ] = None
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


_TAGS_DOC = (
    "CSS selectors (no pseudo-elements); a selector that is not valid CSS is a 400 naming it"
)

# What the validators below check across fields, written for /openapi.json.
_ACROSS_FIELDS: dict[str, Any] = {
    "allOf": [
        *(
            {
                "description": f'"{name}" needs the {engine} engine',
                "anyOf": [
                    {"properties": {"formats": {"not": {"contains": {"const": name}}}}},
                    {"required": ["engine"], "properties": {"engine": {"const": engine}}},
                ],
            }
            for name in FORMATS
            if (engine := OUTPUTS[name].needs) is not None
        ),
        {
            "description": 'screenshot_full_page needs "screenshot" in formats',
            "anyOf": [
                {"properties": {"screenshot_full_page": {"const": False}}},
                {
                    "required": ["formats"],
                    "properties": {"formats": {"contains": {"const": "screenshot"}}},
                },
            ],
        },
        {
            "description": "actions need the js engine",
            "anyOf": [
                {"properties": {"actions": {"maxItems": 0}}},
                {"required": ["engine"], "properties": {"engine": {"const": "js"}}},
            ],
        },
        {
            "description": "wait_for needs the js engine",
            "anyOf": [
                {"properties": {"wait_for": {"type": "null"}}},
                {"required": ["engine"], "properties": {"engine": {"const": "js"}}},
            ],
        },
        {
            "description": "settle_ms needs the js engine",
            "anyOf": [
                {"properties": {"settle_ms": {"type": "null"}}},
                {"required": ["engine"], "properties": {"engine": {"const": "js"}}},
            ],
        },
        {
            "description": "session_idle_seconds needs session",
            "anyOf": [
                {"properties": {"session_idle_seconds": {"type": "null"}}},
                {"required": ["session"], "properties": {"session": {"type": "string"}}},
            ],
        },
        {
            "description": 'json needs "json" in formats, and "json" in formats needs json',
            "anyOf": [
                {
                    "required": ["json", "formats"],
                    "properties": {
                        "json": {"type": "object"},
                        "formats": {"contains": {"const": "json"}},
                    },
                },
                {
                    "properties": {
                        "json": {"type": "null"},
                        "formats": {"not": {"contains": {"const": "json"}}},
                    }
                },
            ],
        },
        {
            "description": "max_age cannot be used with session",
            "anyOf": [
                {"properties": {"max_age": {"type": "null"}}},
                {"properties": {"session": {"type": "null"}}},
            ],
        },
    ]
}


class ScrapeRequest(_Strict):
    model_config = ConfigDict(json_schema_extra=_ACROSS_FIELDS)

    url: Annotated[
        str,
        Field(
            description="http or https URL to fetch; surrounding whitespace is ignored",
            max_length=MAX_URL_LENGTH,
            json_schema_extra={"pattern": URL_PATTERN},
        ),
    ]
    engine: Annotated[
        EngineRequested,
        Field(
            description="auto: static, then js when the page is a JavaScript shell; billed at "
            "the engine that produced the answer"
        ),
    ] = "static"
    selectors: Annotated[
        dict[str, str] | None,
        Field(
            description="name -> CSS selector; ::text and ::attr(name) work as in parsel; "
            "a selector that is not valid CSS is a 400 naming it",
            json_schema_extra={"maxProperties": MAX_SELECTORS},
        ),
    ] = None
    respect_robots: bool = True
    timeout: Annotated[float, Field(gt=0, le=120, description="seconds")] = 20
    proxy_type: Annotated[
        TierRequested,
        Field(
            description="auto: direct, then datacenter, then residential while the answer is "
            "blocked (anti-bot page, 403, 429, reset connection); billed at the tier that "
            "produced the answer"
        ),
    ] = "none"
    max_credits: Annotated[
        int | None,
        Field(
            ge=0,
            description="the most this request may be billed; one that may cost more is a 402 "
            "(max_credits_exceeded) before anything is fetched or held, and auto does not try "
            "the steps that cost more; a document whose blocks of pages cost more fails "
            "document_over_budget, unbilled",
        ),
    ] = None
    formats: Annotated[
        list[Format],
        Field(
            description="outputs to add to the result, each as a field of the same name: "
            + ", ".join(OUTPUTS[name].summary for name in FORMATS)
        ),
    ] = Field(default_factory=list)
    only_main_content: Annotated[
        bool,
        Field(
            description="text, markdown and html hold the page's main content only, without "
            "navigation, header, footer, sidebars, comments, ads and cookie banners"
        ),
    ] = False
    include_tags: Annotated[
        list[str], Field(max_length=MAX_TAGS, description="keep only what matches; " + _TAGS_DOC)
    ] = Field(default_factory=list)
    exclude_tags: Annotated[
        list[str], Field(max_length=MAX_TAGS, description="drop what matches; " + _TAGS_DOC)
    ] = Field(default_factory=list)
    screenshot_full_page: Annotated[
        bool,
        Field(
            description="the whole page (bounded height) rather than the viewport; needs "
            '"screenshot" in formats'
        ),
    ] = False
    wait_for: Annotated[
        WaitFor | None,
        Field(
            description="after the page loaded, wait until a CSS selector is visible "
            '({"selector": "#prices"}) or for some milliseconds ({"ms": 1500}), within '
            "timeout; js engine only"
        ),
    ] = None
    settle_ms: Annotated[
        int | None,
        Field(
            ge=0,
            le=MAX_SETTLE_MS,
            description="after load, the page is read once no request, fetch or short timer of "
            "its own is pending and its DOM has not changed for this many milliseconds (at "
            "once when nothing changed after load), within the operator's settle limit; 0 reads "
            "it right after load; none: the operator's quiet period (100 ms); js engine only",
        ),
        Whole,
    ] = None
    actions: Annotated[
        list[Action],
        Field(
            max_length=MAX_ACTIONS,
            description="steps run in order after the page loaded (and after wait_for), before "
            "it is read; js engine only. The result then has actions and action_results",
        ),
    ] = Field(default_factory=list)
    device: Annotated[
        Literal["desktop", "mobile"],
        Field(
            description="mobile: a phone's viewport, user agent, touch and scale (js); a "
            "phone's user agent (static)"
        ),
    ] = "desktop"
    headers: Annotated[
        dict[str, str],
        Field(
            description="extra request headers, both engines; Host, Content-Length, hop-by-hop "
            "and Proxy-* headers are refused",
            json_schema_extra={
                "maxProperties": MAX_HEADERS,
                "propertyNames": {"pattern": HEADER_NAME_PATTERN},
                "additionalProperties": {
                    "type": "string",
                    "maxLength": MAX_HEADER_VALUE_LENGTH,
                    "pattern": HEADER_VALUE_PATTERN,
                },
            },
        ),
    ] = Field(default_factory=dict)
    cookies: Annotated[
        list[Cookie],
        Field(max_length=MAX_COOKIES, description="cookies for this request only, both engines"),
    ] = Field(default_factory=list)
    location: Annotated[
        Location | None,
        Field(
            description='{"country": "de", "languages": ["de-DE"]}: fetched through a proxy in '
            "that country (needs proxy_type datacenter, residential or auto), with its "
            "languages and, for js, its locale and time zone"
        ),
    ] = None
    max_age: Annotated[
        int | None,
        Field(
            ge=0,
            description="seconds: answer from this account's own successful scrape of the same "
            "request (every other field equal) within that time, free, with cached true; kept "
            "at most SCRAPESPY_CACHE_MAX_AGE_SECONDS. Absent: always scrape, keep nothing",
        ),
        Whole,
    ] = None
    json_: Annotated[
        JsonOptions | None,
        Field(
            alias="json",
            description='with "formats": ["json"]: {"selectors": <schema>} extracts records '
            'through a tree of CSS or XPath selectors; {"prompt", "schema"} asks the '
            "operator's language model. The result's json holds what it extracted",
        ),
    ] = None
    # sessions (service.scrape.sessions)
    session: Annotated[
        str | None,
        Field(
            description="the name of a session of this account (" + SESSION_NAME_RULE + "): its "
            "cookies, browser storage (js) and proxy exit carry over from one call naming it to "
            "the next; made by its first call, ended by DELETE /sessions/{id} or when idle",
            json_schema_extra={"pattern": SESSION_NAME_PATTERN},
        ),
    ] = None
    session_idle_seconds: Annotated[
        int | None,
        Field(
            ge=1,
            description="seconds: the session ends after this long unused, from this call on; "
            "at most SCRAPESPY_SESSION_MAX_IDLE_SECONDS (default SCRAPESPY_SESSION_IDLE_SECONDS)",
        ),
        Whole,
    ] = None

    @model_validator(mode="after")
    def _session_fits(self) -> ScrapeRequest:
        if self.session is not None and re.fullmatch(SESSION_NAME_PATTERN, self.session) is None:
            raise ValueError(f"'session': must be {SESSION_NAME_RULE}")
        if self.session_idle_seconds is not None and self.session is None:
            raise ValueError("'session_idle_seconds' needs 'session'")
        if self.session is not None and self.max_age is not None:
            raise ValueError(
                "'max_age' cannot be used with 'session' (a session's pages are its own)"
            )
        return self

    @property
    def country(self) -> str | None:
        """The country the page is to be fetched from (``location.country``), if any."""
        return self.location.country if self.location is not None else None

    @model_validator(mode="after")
    def _formats_fit(self) -> ScrapeRequest:
        for name in self.formats:
            needed = OUTPUTS[name].needs
            if needed is not None and self.engine != needed:
                raise ValueError(needs_engine(name, needed))
        if self.screenshot_full_page and "screenshot" not in self.formats:
            raise ValueError(FULL_PAGE_NEEDS_SCREENSHOT)
        if self.json_ is not None and "json" not in self.formats:
            raise ValueError(JSON_NEEDS_FORMAT)
        if self.json_ is None and "json" in self.formats:
            raise ValueError(FORMAT_NEEDS_JSON)
        if self.engine != "js":
            if self.actions:
                raise ValueError(ACTIONS_NEED_JS)
            if self.wait_for is not None:
                raise ValueError(WAIT_FOR_NEEDS_JS)
            if self.settle_ms is not None:
                raise ValueError(SETTLE_MS_NEEDS_JS)
        return self

    @field_validator("headers")
    @classmethod
    def _sendable_headers(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_HEADERS:
            raise ValueError(f"at most {MAX_HEADERS} headers")
        for name, text in value.items():
            lowered = name.lower()
            if lowered in REFUSED_HEADERS or lowered.startswith("proxy-"):
                raise ValueError(f"the {name!r} header cannot be set")
            if _VALID_NAME.search(name) is None:
                raise ValueError(f"{name!r} is not a valid header name")
            if len(text) > MAX_HEADER_VALUE_LENGTH or _HEADER_VALUE.search(text) is None:
                raise ValueError(
                    f"the value of {name!r} must be printable ASCII (no CR, LF or other control "
                    f"characters), at most {MAX_HEADER_VALUE_LENGTH} characters"
                )
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        try:
            authority = urlsplit(value.strip()).netloc
        except ValueError:
            raise ValueError("must be a valid http or https URL") from None
        if "@" in authority:
            raise ValueError(CREDENTIALS_REFUSED)
        if _HTTP_URL.search(value) is None:
            raise ValueError("must be a valid http or https URL")
        try:
            parts = urlsplit(value.strip())
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            raise ValueError("must be a valid http or https URL") from None
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError("must be a valid http or https URL")
        if any(ch.isspace() for ch in value.strip()):
            raise ValueError("must be a valid http or https URL")
        return value.strip()

    @field_validator("timeout")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number of seconds")
        return value

    @field_validator("max_credits", mode="before")
    @classmethod
    def _whole_credits(cls, value: Any) -> Any:
        """A whole number written as a float (``5.0``) is the integer JSON Schema says it is."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @field_validator("selectors")
    @classmethod
    def _few_selectors(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and len(value) > MAX_SELECTORS:
            raise ValueError(f"at most {MAX_SELECTORS} selectors")
        return value


def checked_scrape(
    data: dict[str, Any],
    countries: Mapping[str, Sequence[str]] | None = None,
    *,
    model: bool = False,
) -> tuple[ScrapeRequest, CompiledSelectors | None]:
    """``data`` as a scrape request, with its selectors compiled and its tags checked: the one
    check ``POST /scrape``, the dashboard's "try it" and ``scrapy crawl page`` share.
    ``countries`` (``Config.countries``): the request's ``location.country`` must be offered
    at its proxy tier. ``model``: the operator configured a language model
    (SCRAPESPY_LLM_BASE_URL), which json.prompt and the summary format need."""
    request = validate(ScrapeRequest, data)
    if "summary" in request.formats and not model:
        raise BadRequest(f"invalid request: {SUMMARY_NO_LLM}")
    if request.country is not None and countries is not None:
        why = unavailable(request.country, request.proxy_type, countries)
        if why is not None:
            raise BadRequest(f"invalid request: 'location.country': {why}")
    if request.json_ is not None:
        _check_json(request.json_, model)
    try:
        compiled = compile_selectors(request.selectors)
        compile_tags("include_tags", request.include_tags)
        compile_tags("exclude_tags", request.exclude_tags)
    except InvalidSelector as exc:
        raise BadRequest(f"invalid request: {exc}") from None
    return request, compiled


def _check_json(options: JsonOptions, model: bool) -> None:
    """The json.selectors schema runs as it is, or a 400 names its bad path; a prompt needs the
    operator's model, and its schema must be a JSON Schema (a 400 names its bad path)."""
    if options.selectors is None:
        if not model:
            raise BadRequest(f"invalid request: {NO_LLM}")
        if options.schema_ is not None:
            try:
                check_model_schema(options.schema_)
            except InvalidModelSchema as exc:
                where = f"json.schema.{exc.path}" if exc.path else "json.schema"
                raise BadRequest(f"invalid request: '{where}': {exc}") from None
        return
    try:
        check_schema(options.selectors)
    except InvalidSchema as exc:
        raise BadRequest(f"invalid request: {exc}") from None


PACKS = ("10", "50", "100")
MIN_AMOUNT_EUR = 5
MAX_AMOUNT_EUR = 10_000


class BuyRequest(_Strict):
    # documents _exactly_one: one of the two, the other absent or null
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["pack"],
                    "properties": {"pack": {"type": "string"}, "amount_eur": {"type": "null"}},
                },
                {
                    "required": ["amount_eur"],
                    "properties": {"amount_eur": {"type": "number"}, "pack": {"type": "null"}},
                },
            ]
        }
    )

    pack: Literal["10", "50", "100"] | None = None
    amount_eur: Annotated[
        float | None,
        Field(
            ge=MIN_AMOUNT_EUR,
            le=MAX_AMOUNT_EUR,
            description="euros, min 5, whole cents",
            # documents _whole_cents; validators compare decimal spellings, as _whole_cents does
            json_schema_extra={"multipleOf": 0.01},
        ),
    ] = None

    @model_validator(mode="after")
    def _exactly_one(self) -> BuyRequest:
        if (self.pack is None) == (self.amount_eur is None):
            raise ValueError("exactly one of 'pack' and 'amount_eur' must be given")
        return self

    @field_validator("amount_eur")
    @classmethod
    def _whole_cents(cls, value: float | None) -> float | None:
        if value is None:
            return None
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        cents = Decimal(repr(value)) * 100
        if cents != cents.to_integral_value():
            raise ValueError("must not have fractions of a cent")
        return value

    def amount_cents(self) -> int:
        if self.pack is not None:
            return int(self.pack) * 100
        assert self.amount_eur is not None
        return int(Decimal(repr(self.amount_eur)) * 100)


_MODEL_NAME = re.compile(r" or instance of \w+")


def _where(loc: tuple[Any, ...]) -> str:
    """A location as a caller writes it: ``actions[2].selector``, ``headers["X-A"]``."""
    parts = [part for part in loc if part != "__root__"]
    if len(parts) > 2 and parts[0] == "actions" and isinstance(parts[1], int):
        del parts[2]  # the step's type, which pydantic puts in the location of a tagged union
    where = ""
    for part in parts:
        if isinstance(part, int):
            where += f"[{part}]"
        elif str(part).isidentifier():
            where += f".{part}" if where else str(part)
        else:
            where += f'["{part}"]'
    return where


def _describe(error: dict[str, Any]) -> str:
    loc = _where(tuple(error.get("loc", ())))
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return f"unknown field '{loc}'"
    if kind == "missing":
        return f"'{loc}' is required"
    if kind == "union_tag_not_found":
        return f"'{loc}.type' is required"
    if kind == "union_tag_invalid":
        types = ", ".join(ACTION_TYPES)
        return f"'{loc}.type' must be one of {types}"
    msg = str(error.get("msg", "is invalid"))
    msg = _MODEL_NAME.sub("", msg.removeprefix("Value error, "))  # the class is ours, not theirs
    return f"'{loc}': {msg}" if loc else msg


def parse_json_object(body: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise BadRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
    return data


def validate(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        unknown = [e for e in errors if e.get("type") == "extra_forbidden"]
        first = unknown[0] if unknown else errors[0]
        if len(unknown) > 1:
            names = ", ".join(f"'{_where(tuple(e['loc']))}'" for e in unknown)
            raise BadRequest(f"unknown fields {names}") from None
        raise BadRequest(f"invalid request: {_describe(dict(first))}") from None
