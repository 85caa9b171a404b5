"""``POST /scrape``'s body (and a job's scrape options): :class:`ScrapeRequest`, and the one
check every front makes of it, :func:`checked_scrape`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    ConfigDict,
    Field,
    PlainValidator,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from service.core.errors import BadRequest
from service.core.formats import OUTPUTS, needs_engine, needs_model
from service.core.places import unavailable
from service.core.schemas.actions import Action, WaitFor
from service.core.schemas.change_tracking import ChangeTrackingOptions, check_tracking
from service.core.schemas.common import (
    _HEADER_VALUE,
    _HTTP_URL,
    _VALID_NAME,
    ACTIONS_NEED_JS,
    CREDENTIALS_REFUSED,
    FULL_PAGE_NEEDS_SCREENSHOT,
    HEADER_NAME_PATTERN,
    HEADER_VALUE_PATTERN,
    MAX_ACTIONS,
    MAX_COOKIES,
    MAX_HEADER_VALUE_LENGTH,
    MAX_HEADERS,
    MAX_SELECTORS,
    MAX_SETTLE_MS,
    MAX_TAGS,
    MAX_URL_LENGTH,
    REFUSED_HEADERS,
    SESSION_NAME_PATTERN,
    SESSION_NAME_RULE,
    SETTLE_MS_NEEDS_JS,
    URL_PATTERN,
    WAIT_FOR_NEEDS_JS,
    Whole,
    _Strict,
)
from service.core.schemas.page_options import (
    FORMAT_NEEDS_JSON,
    JSON_NEEDS_FORMAT,
    Cookie,
    JsonOptions,
    Location,
)
from service.core.schemas.scrape_rules import FORMATS_DOC, TAGS_DOC, across_fields
from service.core.schemas.validation import validate
from service.core.vocabulary import EngineRequested, TierRequested
from service.extraction import (
    CompiledSelectors,
    InvalidSelector,
    compile_selectors,
    compile_tags,
)


def _declared_format(value: Any) -> str:
    """A format declared in service.core.formats; the refusal words them as a Literal would."""
    if isinstance(value, str) and value in OUTPUTS.declared:
        return value
    names = [f"'{name}'" for name in OUTPUTS.names]
    expected = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


#: a format's name: one of those declared when the request is read (a deployment's own included)
FormatName = Annotated[str, PlainValidator(_declared_format, json_schema_input_type=str)]


class ScrapeRequest(_Strict):
    model_config = ConfigDict(json_schema_extra=across_fields)

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
        list[FormatName],
        Field(description=FORMATS_DOC),  # and each declared format (scrape_rules.across_fields)
    ] = Field(default_factory=list)
    only_main_content: Annotated[
        bool,
        Field(
            description="text, markdown and html hold the page's main content only, without "
            "navigation, header, footer, sidebars, comments, ads and cookie banners"
        ),
    ] = False
    include_tags: Annotated[
        list[str], Field(max_length=MAX_TAGS, description="keep only what matches; " + TAGS_DOC)
    ] = Field(default_factory=list)
    exclude_tags: Annotated[
        list[str], Field(max_length=MAX_TAGS, description="drop what matches; " + TAGS_DOC)
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
            description="after load, once no request of the page is in flight, a page whose DOM "
            "changed after load is read when its DOM has not changed for this many "
            "milliseconds, 500 ms after load at the earliest (a page unchanged since load at "
            "once, or 66 ms after load when it has scripts; its timers are not watched), within "
            "the operator's settle limit; 0 reads it right after load; none: the operator's "
            "quiet period (100 ms); js engine only",
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
    change_tracking: Annotated[
        ChangeTrackingOptions | None,
        Field(
            description='with "formats": ["change_tracking"]: {"modes": ["git-diff", "json"], '
            '"tag": "...", "selectors" | "prompt"/"schema"}; the page is compared with this '
            "account's previous scrape of the same URL and tag, and the result's "
            "change_tracking says how it changed",
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
    (SCRAPESPY_LLM_BASE_URL), which json.prompt and the formats made by a model need."""
    request = validate(ScrapeRequest, data)
    for name in request.formats:
        if OUTPUTS[name].made_from == "model" and not model:
            raise BadRequest(f"invalid request: {needs_model(name)}")
    if request.country is not None and countries is not None:
        why = unavailable(request.country, request.proxy_type, countries)
        if why is not None:
            raise BadRequest(f"invalid request: 'location.country': {why}")
    if request.json_ is not None:
        request.json_.check(model)
    check_tracking(request.change_tracking, request.formats, request.json_ is not None, model)
    try:
        compiled = compile_selectors(request.selectors)
        compile_tags("include_tags", request.include_tags)
        compile_tags("exclude_tags", request.exclude_tags)
    except InvalidSelector as exc:
        raise BadRequest(f"invalid request: {exc}") from None
    return request, compiled
