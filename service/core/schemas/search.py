"""``POST /search``'s body: :class:`SearchRequest`, and :func:`checked_search`, which also
checks its ``scrape`` options as ``POST /scrape`` would check them for every result.

``scrape`` takes ``POST /scrape``'s fields but ``url`` (each result's), and not those that
belong to one page's life (``session``, ``max_age``) nor those priced by the language model,
whose tokens no hold can bound before the results are known. Its ``max_credits`` bounds the
whole call: the search's price and every result's scrape together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from service.core.errors import BadRequest
from service.core.formats import OUTPUTS
from service.core.schemas.common import Whole, _Strict
from service.core.schemas.scrape import ScrapeRequest, checked_scrape
from service.core.schemas.validation import validate

MAX_QUERY_LENGTH = 500
MAX_LIMIT = 100
MAX_DOMAINS = 50
# what a result's scrape may not carry: its URL is the result's, and these live past one page
SCRAPE_REFUSED = ("url", "session", "session_idle_seconds", "max_age")
TIME_RANGES = ("qdr:h", "qdr:d", "qdr:w", "qdr:m", "qdr:y")
Source = Literal["web", "news", "images"]
_DOMAIN = r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# a stand-in URL for checking the scrape options before any result is known
_CHECKED_URL = "https://example.com/"


class SearchRequest(_Strict):
    query: Annotated[
        str,
        Field(min_length=1, max_length=MAX_QUERY_LENGTH, description="what to search for"),
    ]
    limit: Annotated[
        int, Field(ge=1, le=MAX_LIMIT, description="results wanted of each source"), Whole
    ] = 5
    sources: Annotated[
        list[Source], Field(min_length=1, max_length=3, description="web, news, images")
    ] = Field(default_factory=lambda: list[Source](["web"]))
    lang: Annotated[
        str | None,
        Field(pattern=r"^[a-z]{2}(?:-[A-Za-z]{2})?$", description="results' language, e.g. en"),
    ] = None
    country: Annotated[
        str | None, Field(pattern=r"^[A-Za-z]{2}$", description="ISO 3166-1 alpha-2 code")
    ] = None
    tbs: Annotated[
        Literal["qdr:h", "qdr:d", "qdr:w", "qdr:m", "qdr:y"] | None,
        Field(description="time range: the past hour, day, week, month or year"),
    ] = None
    include_domains: Annotated[
        list[Annotated[str, Field(max_length=253, pattern=_DOMAIN)]] | None,
        Field(max_length=MAX_DOMAINS, description="keep only results on these domains"),
    ] = None
    exclude_domains: Annotated[
        list[Annotated[str, Field(max_length=253, pattern=_DOMAIN)]] | None,
        Field(max_length=MAX_DOMAINS, description="drop results on these domains"),
    ] = None
    timeout: Annotated[
        float, Field(gt=0, le=120, description="seconds the search backend may take to answer")
    ] = 20
    scrape: Annotated[
        dict[str, Any] | None,
        Field(description="POST /scrape's options (without url), for every web result"),
    ] = None

    @field_validator("query")
    @classmethod
    def _plain_text(cls, value: str) -> str:
        """What a backend and a usage row can carry: control characters (NUL, which PostgreSQL
        cannot store, among them) become spaces."""
        return _CONTROL.sub(" ", value)

    @field_validator("sources")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("each source at most once")
        return value

    @field_validator("include_domains", "exclude_domains", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [v.lower().strip(".") if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _one_filter(self) -> SearchRequest:
        if self.include_domains is not None and self.exclude_domains is not None:
            raise ValueError("give include_domains or exclude_domains, not both")
        return self


def checked_search(
    data: dict[str, Any],
    countries: Mapping[str, Sequence[str]] | None = None,
    *,
    model: bool = False,
) -> tuple[SearchRequest, ScrapeRequest | None]:
    """``data`` as a search request, and its ``scrape`` options checked as one result's scrape
    would be (a 400 naming the field, before the backend is asked)."""
    request = validate(SearchRequest, data)
    if request.scrape is None:
        return request, None
    refused = sorted(set(request.scrape) & set(SCRAPE_REFUSED))
    if refused:
        raise BadRequest(f"invalid request: 'scrape.{refused[0]}': not allowed in a search")
    try:
        scrape, _ = checked_scrape({**request.scrape, "url": _CHECKED_URL}, countries, model=model)
    except BadRequest as error:
        raise BadRequest(_in_scrape(error.message)) from None
    # json.schema alone asks the model too (with a prompt of its own): neither is offered
    if scrape.json_ is not None and scrape.json_.selectors is None:
        raise BadRequest(
            "invalid request: 'scrape.json': the language model (prompt, schema) is not "
            "offered in a search"
        )
    if any(OUTPUTS[name].price == "model_tokens" for name in scrape.formats):
        raise BadRequest(
            "invalid request: 'scrape.formats': formats made by the model are not "
            "offered in a search"
        )
    return request, scrape


def _in_scrape(message: str) -> str:
    """A scrape's refusal as the search's: the field it names is under ``scrape``."""
    if message.startswith("invalid request: '"):
        return message.replace("invalid request: '", "invalid request: 'scrape.", 1)
    return message.replace("invalid CSS selector for ", "invalid CSS selector for scrape.", 1)


def result_scrape(options: dict[str, Any], url: str, share: int | None) -> dict[str, Any]:
    """The body of one result's scrape: the search's scrape options and the result's URL; the
    whole call's ``max_credits`` is not a page's: each page gets its ``share``
    (service.search.holds)."""
    body = {k: v for k, v in options.items() if k != "max_credits"} | {"url": url}
    if share is not None:
        body["max_credits"] = share
    return body
