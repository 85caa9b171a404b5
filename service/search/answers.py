"""``POST /search``'s answer, typed once: :class:`SearchAnswer`, of web and news
:class:`SearchItem` and :class:`SearchImage`.

The searcher (service.search.searcher) builds these as plain dicts from the backends' items
(service.search.backend says which fields each source has); ``/openapi.json`` documents them
from the same types (service.core.answer_schemas), a result's ``page`` as the component
``ScrapeResult`` that ``POST /scrape`` answers. Each field's description is the document's.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from service.scrape.results import ScrapeResult

_CLOSED = ConfigDict(extra="forbid")
Position = Annotated[int, Field(ge=1, description="the item's place in its list, from 1")]


@with_config(_CLOSED)
class SearchItem(TypedDict):
    """a web or news result"""

    url: str
    title: str
    description: str
    position: Position
    date: NotRequired[
        Annotated[str | None, Field(description="when the backend gives one, as it gives it")]
    ]
    page: NotRequired[
        Annotated[
            ScrapeResult | None,
            Field(
                description="web results, with scrape only: what POST /scrape answers for the "
                "result's URL, a failure included with its error_code; null for a URL no scrape "
                "takes"
            ),
        ]
    ]


@with_config(_CLOSED)
class SearchImage(TypedDict):
    """an image result: url is the page the image is on"""

    url: str
    title: str
    image_url: str | None
    image_width: int | None
    image_height: int | None
    position: Position


@with_config(_CLOSED)
class SearchAnswer(TypedDict):
    web: Annotated[list[SearchItem], Field(description="empty unless web is in sources")]
    news: Annotated[list[SearchItem], Field(description="empty unless news is in sources")]
    images: Annotated[list[SearchImage], Field(description="empty unless images is in sources")]
    credits_charged: Annotated[
        int,
        Field(
            ge=0,
            description="what the ledger took: the search's price (when anything was found) "
            "and each scraped page's charge",
        ),
    ]
    backend: Annotated[
        Literal["searxng", "brave", "serper"], Field(description="the backend that answered")
    ]
