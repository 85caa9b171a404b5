"""Typed answer of ``POST /search``: each source's items, the web ones with the scraped
``page`` when the search asked for ``scrape`` (the same :class:`~scrapespy.ScrapeResult` a
scrape answers, a failed one included)."""

from __future__ import annotations

from pydantic import Field

from scrapespy.models import Model, ScrapeResult


class SearchItem(Model):
    """A web or news result: ``page`` is its scrape's result, with ``scrape`` only."""

    url: str
    title: str = ""
    description: str = ""
    position: int = 0
    date: str | None = None
    page: ScrapeResult | None = None


class SearchImage(Model):
    url: str
    title: str = ""
    image_url: str | None = None
    image_width: int | None = None
    image_height: int | None = None
    position: int = 0


class SearchResult(Model):
    """``credits_charged``: the search's own price (when it found anything) and each page's."""

    web: list[SearchItem] = Field(default_factory=list)
    news: list[SearchItem] = Field(default_factory=list)
    images: list[SearchImage] = Field(default_factory=list)
    credits_charged: int = 0
    backend: str = ""
