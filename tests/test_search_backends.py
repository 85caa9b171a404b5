"""The search adapters read their backend's recorded answers (tests/fixtures/search) into the
answer's items; the results are filtered by domain, deduplicated and numbered; the domains go to
the backend as operators. No network: the adapters' item readers and the filters alone."""

from __future__ import annotations

import pytest

from harness.search_backends import fixture
from service.core.errors import BadRequest
from service.core.schemas.search import checked_search
from service.search import brave, searxng, serper
from service.search.backend import BackendFailed, listed
from service.search.results import asked_count, asked_text, kept

GAZETTE = "https://www.harbour-gazette.example/tides"
NEWS = "https://news.harbour-gazette.example/2026/11/spring-tides"
PHOTO_PAGE = "https://photos.harbour-gazette.example/quay-flood"
PHOTO = "https://photos.harbour-gazette.example/full/quay-flood.jpg"
WEB_ITEM = {
    "url": GAZETTE,
    "title": "Harbour tides - Harbour Gazette",
    "description": "The harbour floods twice a year when the spring tides meet a westerly gale.",
}
IMAGE_ITEM = {
    "url": PHOTO_PAGE,
    "title": "The quay under the spring tide",
    "image_url": PHOTO,
    "image_width": 1600,
    "image_height": 1067,
}


@pytest.mark.parametrize(
    ("read", "name", "path", "source"),
    [
        (searxng.item, "searxng_general", ("results",), "web"),
        (brave.item, "brave_web", ("web", "results"), "web"),
        (serper.item, "serper_search", ("organic",), "web"),
    ],
)
def test_a_web_result_of_each_backend(read, name, path, source) -> None:
    item = read(source, listed(fixture(name), *path)[0])
    assert {k: item[k] for k in WEB_ITEM} == WEB_ITEM  # Brave's <strong> marks taken out


@pytest.mark.parametrize(
    ("read", "name", "path"),
    [
        (searxng.item, "searxng_news", ("results",)),
        (brave.item, "brave_news", ("results",)),
        (serper.item, "serper_news", ("news",)),
    ],
)
def test_a_news_result_of_each_backend_has_its_date(read, name, path) -> None:
    item = read("news", listed(fixture(name), *path)[0])
    assert item["url"] == NEWS and item["title"] == "Spring tides flood the quay again"
    assert item["date"]


@pytest.mark.parametrize(
    ("read", "name", "path"),
    [
        (searxng.item, "searxng_images", ("results",)),
        (brave.item, "brave_images", ("results",)),
        (serper.item, "serper_images", ("images",)),
    ],
)
def test_an_image_result_of_each_backend(read, name, path) -> None:
    assert read("images", listed(fixture(name), *path)[0]) == IMAGE_ITEM


def test_an_answer_of_another_shape_is_a_failure_not_an_empty_result() -> None:
    with pytest.raises(BackendFailed):
        listed({"results": "not a list"}, "results")
    with pytest.raises(BackendFailed):
        listed({"web": 7}, "web", "results")
    assert listed({"query": "q"}, "results") == []


def test_searxng_language_joins_lang_and_country() -> None:
    request, _ = checked_search({"query": "q", "lang": "fr", "country": "BE"})
    query = searxng.Query("q", ("web",), 5, request.lang, request.country)
    assert searxng.language(query) == "fr-BE"


def test_results_are_filtered_deduplicated_numbered_and_cut_to_limit() -> None:
    request, _ = checked_search({"query": "q", "limit": 2, "include_domains": ["Example.org"]})
    items = [
        {"url": "https://www.example.org/a", "title": "a"},
        {"url": "https://other.example/b", "title": "b"},
        {"url": "https://www.example.org/a", "title": "a again"},
        {"url": "ftp://example.org/c", "title": "c"},
        {"url": "https://user:pw@example.org/d", "title": "d"},
        {"url": "https://example.org/e", "title": "e"},
        {"url": "https://example.org/f", "title": "f"},
    ]
    assert kept(request, items) == [
        {"url": "https://www.example.org/a", "title": "a", "position": 1},
        {"url": "https://example.org/e", "title": "e", "position": 2},
    ]
    assert asked_text(request) == "q site:example.org"
    assert asked_count(request) == 4


def test_a_query_is_text_a_backend_and_the_usage_log_can_carry() -> None:
    # valid JSON text, but PostgreSQL cannot store NUL
    request, _ = checked_search({"query": "tides\x00\x1b \U0001014f\nnow"})
    assert request.query == "tides   \U0001014f now"


def test_excluded_domains_go_to_the_backend_as_operators() -> None:
    request, _ = checked_search({"query": "q", "exclude_domains": ["a.example", "b.example"]})
    assert asked_text(request) == "q -site:a.example -site:b.example"
    assert kept(request, [{"url": "https://x.a.example/"}, {"url": "https://c.example/"}]) == [
        {"url": "https://c.example/", "position": 1}
    ]


def test_what_the_model_makes_and_bad_selectors_are_refused_under_scrape() -> None:
    """json.schema alone asks the language model as a prompt does: no hold bounds its tokens,
    so a search refuses both; a scrape option's refusal names the field under ``scrape.``."""
    json_options = {"formats": ["json"], "json": {"schema": {"type": "object"}}}
    for json_ in ({"schema": {"type": "object"}}, {"prompt": "the tides"}):
        with pytest.raises(BadRequest, match=r"'scrape\.json': the language model"):
            checked_search(
                {"query": "tides", "scrape": {**json_options, "json": json_}}, model=True
            )
    with pytest.raises(BadRequest, match=r"invalid CSS selector for scrape\.selectors\['a'\]"):
        checked_search({"query": "tides", "scrape": {"selectors": {"a": "p[["}}})
    with pytest.raises(BadRequest, match=r"'scrape\.actions\[0\]\.selector'"):
        checked_search(
            {
                "query": "tides",
                "scrape": {"engine": "js", "actions": [{"type": "click", "selector": "p[["}]},
            }
        )
    _, scrape = checked_search(
        {"query": "tides", "scrape": {"formats": ["json"], "json": {"selectors": SELECTORS}}}
    )
    assert scrape is not None and scrape.json_ is not None


SELECTORS = {"name": "tides", "baseSelector": "p", "fields": [{"name": "t", "type": "text"}]}
