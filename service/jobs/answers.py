"""The answers of the jobs, typed once: ``POST /batch`` and ``/crawl`` (:class:`JobAccepted`),
``POST /map`` (:class:`MapResult`), ``GET /jobs`` (a page of :class:`JobItem`),
``GET /jobs/{id}`` (:class:`Job`) and ``DELETE /jobs/{id}`` (:class:`JobSummary`, which the
job's webhook events carry too).

The jobs (service.jobs.batches, batch_store, crawls) build these dicts on their hot paths as
plain dicts; ``/openapi.json`` documents them from the same types
(service.core.answer_schemas). Each field's description is the document's.
"""

from __future__ import annotations

from typing import Annotated, Literal

import orjson
from pydantic import ConfigDict, Field, GetPydanticSchema, with_config
from typing_extensions import TypedDict

from service.billing.answers import Count, Time
from service.jobs.crawl_rules import MAX_URLS as MAX_MAP_URLS
from service.scrape.results import ScrapeResult

RESULTS_LIMIT = 100  # results in one GET /jobs/{id}, and the most it may ask for

JobStatus = Literal["queued", "running", "completed", "cancelled", "failed", "insufficient_credits"]
# a finished page's result: the JSON POST /scrape answered, as the page's row stores it
StoredResult = Annotated[
    orjson.Fragment, GetPydanticSchema(lambda _source, handler: handler(ScrapeResult))
]
_CLOSED = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


@with_config(_CLOSED)
class JobAccepted(TypedDict):
    id: str
    status_url: str


@with_config(_CLOSED)
class JobItem(TypedDict):
    id: str
    kind: Literal["batch", "crawl"]
    status: JobStatus
    total: Annotated[
        int, Field(ge=0, description="pages in the job (a crawl's grow as it finds them)")
    ]
    created_at: Time
    finished_at: Time | None


@with_config(_CLOSED)
class Counts(TypedDict):
    done: Count
    failed: Count
    blocked: Count
    pending: Count
    skipped: Count


@with_config(_CLOSED)
class JobSummary(JobItem):
    error: Annotated[str | None, Field(description="why the job stopped early")]
    counts: Annotated[
        Counts,
        Field(
            description="pages by outcome; pending counts those queued and in flight, skipped "
            "those a stopped job will not scrape"
        ),
    ]
    credits_charged: Annotated[
        int, Field(ge=0, description="what the job's pages charged so far, from the ledger")
    ]


@with_config(_CLOSED)
class JobResult(TypedDict):
    index: Count
    url: str
    status: Literal["done", "failed", "blocked"]
    credits: Count
    result: Annotated[
        StoredResult | None, Field(description="what POST /scrape answers for the URL")
    ]


@with_config(_CLOSED)
class Job(JobSummary):
    results: Annotated[
        list[JobResult],
        Field(
            max_length=RESULTS_LIMIT,
            description="the finished pages, in the order of the job's URLs",
        ),
    ]
    next_cursor: Annotated[
        str | None,
        Field(description="the next page of results; null on the last one so far"),
    ]


@with_config(_CLOSED)
class MapResult(TypedDict):
    url: str
    urls: Annotated[
        list[str],
        Field(
            max_length=MAX_MAP_URLS,
            description="normalised, without duplicates: the sitemaps' first, then the start "
            "page's links",
        ),
    ]
    count: Count
    error: Annotated[
        str | None,
        Field(description="why no URL was found (then nothing was charged); null otherwise"),
    ]
    error_code: Literal["map_failed"] | None
