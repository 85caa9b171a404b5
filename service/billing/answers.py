"""The answers of ``GET /account``, ``/usage``, ``/ledger`` and ``/pricing``, typed once.

The reads (service.web.account) and the price list (service.billing.pricing) build these dicts;
``/openapi.json`` documents them from the same types (service.core.answer_schemas). Each field's
description is the document's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Generic, Literal, TypeAlias, TypeVar

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from service.core.schemas import PACKS
from service.core.vocabulary import ENGINES, PROXY_TIERS, TIERS

T = TypeVar("T")
MAX_LIMIT = 1000  # the most rows a page of a listing holds (GET /usage, /ledger, /jobs)

Count = Annotated[int, Field(ge=0)]
Time = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
_CLOSED = ConfigDict(extra="forbid")


@with_config(_CLOSED)
class Page(TypedDict, Generic[T]):
    items: Annotated[list[T], Field(max_length=MAX_LIMIT)]
    next_cursor: Annotated[
        str | None, Field(description="the next page's cursor; null on the last page")
    ]


@with_config(_CLOSED)
class Bucket(TypedDict):
    per_second: Annotated[float, Field(gt=0)]
    burst: Annotated[int, Field(ge=1)]


@with_config(_CLOSED)
class RateLimits(TypedDict):
    scrape: Bucket
    reads: Bucket


@with_config(_CLOSED)
class Figures(TypedDict):
    """What the account's row says (service.web.account.figures)."""

    account_id: int
    email: str
    balance: Annotated[int, Field(ge=0, description="the sum of the ledger")]
    held: Annotated[int, Field(ge=0, description="credits reserved by scrapes in flight")]
    available: Annotated[int, Field(ge=0, description="balance - held")]
    residential_trials_left: Count
    residential_unlocked: bool


@with_config(_CLOSED)
class Account(Figures):
    rate_limits: Annotated[
        RateLimits,
        Field(description="the key's buckets: burst requests at once, then per_second"),
    ]


@with_config(_CLOSED)
class UsageRow(TypedDict):
    """one scrape as billed"""

    id: int
    created_at: Time
    url: str
    engine: Annotated[
        str,
        Field(
            description="the engine that answered; map for a POST /map, search for a POST "
            "/search's own charge (its scraped pages have rows of their own)",
            json_schema_extra={"enum": [*ENGINES, "map", "search"]},
        ),
    ]
    tier_requested: Annotated[str, Field(json_schema_extra={"enum": [*TIERS, "auto"]})]
    tier_used: Annotated[str, Field(json_schema_extra={"enum": list(TIERS)})]
    status_code: int | None
    success: bool
    blocked: bool
    error: str | None
    elapsed_ms: Count
    credits: Annotated[int, Field(ge=0, description="credits charged")]
    extraction_credits: Annotated[
        int,
        Field(
            ge=0,
            description="of credits, what the language model's tokens cost (json.prompt, "
            "summary): the ledger's extraction entry",
        ),
    ]
    trial: Annotated[bool, Field(description="a residential trial was used")]
    reference: Annotated[
        str | None, Field(description="hold:<id>, which the charge's ledger entry names too")
    ]


@with_config(_CLOSED)
class LedgerEntry(TypedDict):
    """one change of balance"""

    id: int
    created_at: Time
    kind: Annotated[
        Literal["grant", "purchase", "scrape", "extraction"],
        Field(
            description="extraction: the language model's share of a scrape's charge, after "
            "its scrape entry and naming the same hold"
        ),
    ]
    amount: Annotated[int, Field(description="credits added (negative: charged)")]
    balance_after: Count
    reference: str | None


def _closed(name: str, fields: dict[str, object], doc: str | None = None) -> object:
    """A closed TypedDict ``name`` of ``fields``, for keys that the vocabulary declares."""
    made = TypedDict(name, fields)  # type: ignore[misc]
    made.__doc__ = doc
    return with_config(_CLOSED)(made)


CountryCode = Annotated[str, Field(json_schema_extra={"pattern": "^[a-z]{2}$"})]

# keyed by the vocabulary's engines and tiers (service.core.vocabulary), in its order
if TYPE_CHECKING:
    TierCosts: TypeAlias = dict[str, int]
    Costs: TypeAlias = dict[str, TierCosts]
    TierCountries: TypeAlias = dict[str, list[str]]
else:
    TierCosts = _closed("TierCosts", {tier: Count for tier in TIERS})
    Costs = _closed("Costs", {engine: TierCosts for engine in ENGINES})
    TierCountries = _closed(
        "TierCountries",
        {tier: list[CountryCode] for tier in PROXY_TIERS},
        """The countries (ISO 3166-1 alpha-2) each proxy tier's proxies are in: what a request's
    ``location.country`` may name at that tier (with auto, at any of them).""",
    )


class SearchPrice(TypedDict):
    credits: Annotated[
        int, Field(ge=0, description="credits per search that found at least one result")
    ]
    backend: Annotated[str, Field(description="the search backend: searxng, brave or serper")]


class PriceList(TypedDict):
    currency: Literal["EUR"]
    credits_per_euro: Annotated[int, Field(ge=1)]
    packs: list[Annotated[str, Field(json_schema_extra={"enum": list(PACKS)})]]
    min_amount_eur: Annotated[float, Field(ge=0)]
    costs: Annotated[
        Costs, Field(description="credits per billed scrape, by engine and proxy tier")
    ]
    map_credits: Annotated[
        int, Field(ge=0, description="credits per POST /map that found at least one URL")
    ]
    document_pages_per_block: Annotated[
        int,
        Field(
            ge=1,
            description="a document (PDF) costs the scrape's price once per started block of "
            "this many pages; the scrape's hold is extended to it, within the balance, "
            "max_credits and the key's cap (else it fails document_over_budget, unbilled)",
        ),
    ]
    countries: Annotated[
        TierCountries,
        Field(description='the countries offered for "location", by proxy tier'),
    ]
    search: Annotated[
        SearchPrice | None,
        Field(description="POST /search's own price, besides its scraped results; null: off"),
    ]
