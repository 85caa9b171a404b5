"""End to end: a deployment's own formats, one of each kind (made from the response, the
rendered page, the page and the language model), declared in a module of its own that
``SCRAPESPY_FORMAT_MODULES`` names, as an operator would: offered by ``/openapi.json``, made
by ``POST /scrape`` and by Firecrawl's ``POST /v2/scrape`` under their Firecrawl names, with no
change to the service."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from tests.conftest import a_database_of_its_own
from tests.llm_standin import API_KEY, SUMMARY, ModelStandin

MODULE = '''
"""Four throwaway formats, one of each kind."""

import re

from service.core.formats import Output
from service.extraction.llm import Answer, LanguageModel


def status_line(response, max_bytes):
    return f"HTTP {response.status} with {len(response.body)} bytes"


def rendered_title(response, max_bytes):
    return response.css("title::text").get()


def word_count(cleaned):
    return str(len(re.sub(r"<[^>]+>", " ", cleaned).split()))


async def headline(model: LanguageModel, markdown: str, within) -> Answer:
    return await model.text("Write a headline for this page.", markdown, within)


def _output(name, made_from, producer, firecrawl, **more):
    return Output(
        name,
        made_from,
        f"toy_formats.{producer}",
        field=name,
        description=f"the {name} of the page",
        summary=f"{name} (a toy)",
        label=name,
        firecrawl=firecrawl,
        **more,
    )


FORMATS = [
    _output("status_line", "response", "status_line", "statusLine"),
    _output("rendered_title", "rendered_page", "rendered_title", "renderedTitle"),
    _output("word_count", "page", "word_count", "wordCount"),
    _output("headline", "model", "headline", "headline", price="model_tokens"),
]
'''
PAGE = """<!doctype html><html><head><title>As sent</title>
<script>document.title = "As rendered";</script></head>
<body><p>one two three</p></body></html>"""
TOYS = ("status_line", "rendered_title", "word_count", "headline")


@pytest.fixture(scope="module")
def standin() -> Iterator[ModelStandin]:
    model = ModelStandin().start()
    yield model
    model.stop()


@pytest.fixture(scope="module")
def own(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("toy-formats-db"))


@pytest.fixture(scope="module")
def toyed(
    own: tuple[str, Accounts], standin: ModelStandin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    modules = tmp_path_factory.mktemp("toy-formats-modules")
    (modules / "toy_formats.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    path = os.pathsep.join(filter(None, [str(modules), os.environ.get("PYTHONPATH")]))
    env = {
        "PYTHONPATH": path,
        "SCRAPESPY_FORMAT_MODULES": "toy_formats",
        "SCRAPESPY_LLM_BASE_URL": standin.base_url,
        "SCRAPESPY_LLM_MODEL": "stand-in-model",
        "SCRAPESPY_LLM_API_KEY": API_KEY,
    }
    proc = ServiceProcess(own[0], Path(tmp_path_factory.mktemp("toy-formats")), env=env).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def page(site: TargetSite) -> str:
    site.page("/toy-formats/page", PAGE)
    return site.url("/toy-formats/page")


@pytest.fixture(scope="module")
def key(own: tuple[str, Accounts]) -> str:
    return own[1].create(credits=100)[1]


def test_openapi_offers_each_format_and_its_field(toyed: ServiceProcess) -> None:
    schemas = call("GET", toyed.url("/openapi.json")).json["components"]["schemas"]
    formats = schemas["ScrapeRequest"]["properties"]["formats"]
    assert formats["items"]["enum"][-4:] == list(TOYS)
    assert "status_line (a toy)" in formats["description"]
    assert {
        "description": '"rendered_title" needs the js engine',
        "anyOf": [
            {"properties": {"formats": {"not": {"contains": {"const": "rendered_title"}}}}},
            {"required": ["engine"], "properties": {"engine": {"const": "js"}}},
        ],
    } in schemas["ScrapeRequest"]["allOf"]
    result = schemas["ScrapeResult"]["properties"]
    for name in TOYS:
        assert result[name]["description"] == f"the {name} of the page"


def test_scrape_makes_the_response_page_and_model_formats(
    toyed: ServiceProcess, page: str, key: str
) -> None:
    reply = toyed.scrape(key, {"url": page, "formats": ["status_line", "word_count", "headline"]})
    assert reply.status == 200, reply.body
    body = reply.json
    assert body["success"] is True
    assert body["status_line"] == f"HTTP 200 with {len(PAGE.encode())} bytes"
    assert body["word_count"] == "3"
    assert body["headline"] == SUMMARY
    assert body["llm_usage"]["credits"] >= 0
    assert list(body)[-4:] == ["status_line", "word_count", "headline", "llm_usage"]


def test_scrape_makes_the_rendered_page_format_on_the_js_engine_only(
    toyed: ServiceProcess, page: str, key: str
) -> None:
    reply = toyed.scrape(key, {"url": page, "engine": "js", "formats": ["rendered_title"]})
    assert reply.status == 200, reply.body
    assert reply.json["rendered_title"] == "As rendered"
    refused = toyed.scrape(key, {"url": page, "formats": ["rendered_title"]})
    assert refused.status == 400
    assert refused.json["error"] == (
        'invalid request: \'formats\': "rendered_title" needs the js engine ("engine": "js")'
    )


def test_an_undeclared_format_is_refused_naming_the_declared_ones(
    toyed: ServiceProcess, page: str, key: str
) -> None:
    reply = toyed.scrape(key, {"url": page, "formats": ["pdf"]})
    assert reply.status == 400
    assert reply.json["error"].endswith(
        "'structured_data', 'summary', 'change_tracking', 'status_line', 'rendered_title', "
        "'word_count' or 'headline'"
    )


def firecrawl_scrape(service: ServiceProcess, key: str, body: dict[str, Any]) -> Any:
    return call("POST", service.url("/v2/scrape"), body, headers={"Authorization": f"Bearer {key}"})


def test_v2_scrape_makes_each_under_its_firecrawl_name(
    toyed: ServiceProcess, page: str, key: str
) -> None:
    formats = ["statusLine", "wordCount", "headline", "markdown"]
    reply = firecrawl_scrape(
        toyed, key, {"url": page, "formats": formats, "onlyMainContent": False}
    )
    assert reply.status == 200, reply.body
    data = reply.json["data"]
    assert data["statusLine"] == f"HTTP 200 with {len(PAGE.encode())} bytes"
    assert data["wordCount"] == "3"
    assert data["headline"] == SUMMARY
    assert data["markdown"].strip() == "one two three"
    rendered = firecrawl_scrape(toyed, key, {"url": page, "formats": ["renderedTitle"]})
    assert rendered.status == 200, rendered.body
    assert rendered.json["data"]["renderedTitle"] == "As rendered"
