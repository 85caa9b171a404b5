"""Request bodies: one definition gives validation, error messages and the OpenAPI schemas."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from service.errors import BadRequest
from service.extraction import (
    CompiledSelectors,
    InvalidSelector,
    compile_selectors,
    compile_tags,
)

M = TypeVar("M", bound=BaseModel)

MAX_URL_LENGTH = 8192
MAX_SELECTORS = 50
MAX_TAGS = 50
FORMATS = ("markdown", "html", "raw_html", "screenshot")
SCREENSHOT_NEEDS_JS = '\'formats\': "screenshot" needs the js engine ("engine": "js")'
FULL_PAGE_NEEDS_SCREENSHOT = "'screenshot_full_page' needs \"screenshot\" in 'formats'"

# The documented ``url`` pattern, and the first check the service makes, so that what the schema
# accepts and what the service accepts are the same strings. Whitespace is spelled out (Python's
# str.isspace() set, which strip() removes) because ECMA, Python and Rust regexes disagree on \s.
_WS = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a"
    r"\u2028\u2029\u202f\u205f\u3000"
)
_PORT = r"(?:[0-9]{0,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
URL_PATTERN = (
    rf"^[{_WS}]*[Hh][Tt][Tt][Pp][Ss]?://(?:[^{_WS}/?#@\[\]]*@)?"
    rf"(?:[^{_WS}/?#@\[\]:]+|\[[0-9A-Fa-f:.]+\])(?::{_PORT})?(?:[/?#][^{_WS}]*)?[{_WS}]*$"
)
_HTTP_URL = re.compile(URL_PATTERN)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


Format = Literal["markdown", "html", "raw_html", "screenshot"]
_TAGS_DOC = (
    "CSS selectors (no pseudo-elements); a selector that is not valid CSS is a 400 naming it"
)

# What the validators below check across fields, written for /openapi.json.
_ACROSS_FIELDS: dict[str, Any] = {
    "allOf": [
        {
            "description": '"screenshot" needs the js engine',
            "anyOf": [
                {"properties": {"formats": {"not": {"contains": {"const": "screenshot"}}}}},
                {"required": ["engine"], "properties": {"engine": {"const": "js"}}},
            ],
        },
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
        Literal["static", "js", "auto"],
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
        Literal["none", "datacenter", "residential", "auto"],
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
            "the steps that cost more",
        ),
    ] = None
    formats: Annotated[
        list[Format],
        Field(
            description="outputs to add to the result, each as a field of the same name: "
            "markdown, html (cleaned), raw_html (as received or rendered), screenshot "
            "(base64 PNG; js engine only)"
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

    @model_validator(mode="after")
    def _formats_fit(self) -> ScrapeRequest:
        if "screenshot" in self.formats and self.engine != "js":
            raise ValueError(SCREENSHOT_NEEDS_JS)
        if self.screenshot_full_page and "screenshot" not in self.formats:
            raise ValueError(FULL_PAGE_NEEDS_SCREENSHOT)
        return self

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
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


def checked_scrape(data: dict[str, Any]) -> tuple[ScrapeRequest, CompiledSelectors | None]:
    """``data`` as a scrape request, with its selectors compiled and its tags checked: the one
    check ``POST /scrape``, the dashboard's "try it" and ``scrapy crawl page`` share."""
    request = validate(ScrapeRequest, data)
    try:
        compiled = compile_selectors(request.selectors)
        compile_tags("include_tags", request.include_tags)
        compile_tags("exclude_tags", request.exclude_tags)
    except InvalidSelector as exc:
        raise BadRequest(f"invalid request: {exc}") from None
    return request, compiled


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


def _describe(error: dict[str, Any]) -> str:
    loc = ".".join(str(part) for part in error.get("loc", ()) if part != "__root__")
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return f"unknown field '{loc}'"
    if kind == "missing":
        return f"'{loc}' is required"
    msg = str(error.get("msg", "is invalid"))
    msg = msg.removeprefix("Value error, ")
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
            names = ", ".join(f"'{e['loc'][0]}'" for e in unknown)
            raise BadRequest(f"unknown fields {names}") from None
        raise BadRequest(f"invalid request: {_describe(dict(first))}") from None
