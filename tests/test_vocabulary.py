"""One vocabulary (service.core.vocabulary, service.core.formats): every format is made and
answered, and whatever offers the engines, tiers and formats (the API, the dashboard, the command
line, the auto ladder, the proxy pools) offers exactly those it declares.

A new format is its declaration and its producer, named by its dotted path. The last tests here
show it with toy formats; tests/test_e2e_format_modules.py adds one of each kind to a running
service."""

from __future__ import annotations

import re
from dataclasses import fields
from types import SimpleNamespace
from typing import get_args

import orjson
import pytest
from scrapy.http import HtmlResponse
from twisted.web.test.requesthelper import DummyRequest

from middlewares import proxy_pool
from service.core import config as config_module
from service.core.config import Config
from service.core.errors import BadRequest
from service.core.escalation import ladder
from service.core.formats import producer
from service.core.schemas import SCREENSHOT_NEEDS_JS, ScrapeRequest, validate
from service.core.vocabulary import (
    AUTO,
    ENGINES,
    FORMATS,
    OUTPUTS,
    TIERS,
    Output,
    ResidentialTrial,
    needs_engine,
)
from service.dashboard.forms import scrape_body, shown_try_form
from service.dashboard.pages import Pages
from service.extraction.outputs import STANDARD, OutputOptions, PageProducer, extract_page
from service.process.cli import main
from service.scrape import results

URL = "https://example.com/"


def test_the_vocabulary_declares_each_format_once_in_the_order_of_its_literal():
    assert OUTPUTS.names == FORMATS == (
        "markdown", "html", "raw_html", "screenshot", "json", "structured_data", "summary",
        "change_tracking",
    )  # fmt: skip
    assert ENGINES == ("static", "js")
    assert TIERS == ("none", "datacenter", "residential")  # cheapest first


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_has_a_producer_and_a_field_of_the_result(name: str) -> None:
    output = OUTPUTS[name]
    if name == "json":  # made from the page's tree by the request's schema, or by the model
        assert output.producer is None
    elif name == "change_tracking":  # the page's markdown against the account's snapshot
        assert output.producer is None
    else:
        assert output.producer is not None and callable(producer(output.producer))
    if output.made_from == "page" and output.producer is not None:
        # the extraction library's own producers of its formats are the same
        assert STANDARD[name] == PageProducer(output.producer, output.reads, output.attributes)
    assert output.field == name  # the API promises "each as a field of the same name"
    assert output.field in results.format_fields()
    made = results.result_class(results.ScrapeResult, (output.field,))
    assert output.field in {f.name for f in fields(made)}
    assert results.json_schema()["properties"][output.field]["description"] == output.description


def test_each_kind_of_format_is_made_where_its_input_is():
    assert OUTPUTS.made_from("response") == ("raw_html",)
    assert OUTPUTS.made_from("rendered_page") == ("screenshot",)
    assert OUTPUTS.made_from("page") == (
        "markdown", "html", "json", "structured_data", "change_tracking"
    )  # fmt: skip
    assert OUTPUTS.made_from("model") == ("summary",)
    assert OUTPUTS["screenshot"].producer == "service.browser.screenshot.screenshot_of"
    assert OUTPUTS["raw_html"].producer == "pipelines.result.raw_html_of"
    assert OUTPUTS["summary"].producer == "service.extraction.llm.summary"
    assert OUTPUTS["summary"].price == "model_tokens"
    assert {OUTPUTS[name].price for name in FORMATS if name != "summary"} == {"page"}


def test_the_request_accepts_exactly_the_vocabulary():
    properties = ScrapeRequest.model_json_schema()["properties"]
    assert tuple(properties["engine"]["enum"]) == (*ENGINES, AUTO)
    assert tuple(properties["proxy_type"]["enum"]) == (*TIERS, AUTO)
    assert tuple(properties["formats"]["items"]["enum"]) == FORMATS
    for name in FORMATS:
        engine = OUTPUTS[name].needs or "static"
        more = (
            {"json": {"selectors": {"baseSelector": "a", "fields": []}}} if name == "json" else {}
        )
        assert validate(ScrapeRequest, {"url": URL, "formats": [name], "engine": engine, **more})
    with pytest.raises(BadRequest):
        validate(ScrapeRequest, {"url": URL, "formats": ["pdf"]})


@pytest.mark.parametrize("name", [name for name in FORMATS if OUTPUTS[name].needs])
def test_a_format_that_needs_an_engine_is_refused_on_another(name: str) -> None:
    needed = OUTPUTS[name].needs
    assert needed is not None
    for engine in (*ENGINES, AUTO):
        if engine != needed:
            with pytest.raises(BadRequest) as refused:
                validate(ScrapeRequest, {"url": URL, "formats": [name], "engine": engine})
            assert refused.value.message == f"invalid request: {needs_engine(name, needed)}"


def test_the_screenshot_refusal_is_worded_as_it_always_was():
    assert OUTPUTS["screenshot"].needs == "js"
    assert SCREENSHOT_NEEDS_JS == '\'formats\': "screenshot" needs the js engine ("engine": "js")'


def test_the_dashboard_offers_exactly_the_vocabulary():
    session = SimpleNamespace(csrf_token="t", email="a@example.com")
    page = (
        Pages()
        .render(
            DummyRequest([b""]),
            "try.html",
            session=session,
            section="try",
            form=shown_try_form({}),
            outcome=None,
            error=None,
            result_json=None,
        )
        .decode()
    )
    selects = dict(re.findall(r'<select name="(\w+)">(.*?)</select>', page, re.S))
    assert tuple(re.findall(r'value="(\w+)"', selects["engine"])) == (*ENGINES, AUTO)
    assert tuple(re.findall(r'value="(\w+)"', selects["proxy_type"])) == (*TIERS, AUTO)
    offered = tuple(name for name in FORMATS if OUTPUTS[name].checkbox)
    # json needs its schema, summary the operator's model: neither is offered alone; a history
    # of the try-it's scrapes (change_tracking) would surprise
    assert offered == tuple(
        name for name in FORMATS if name not in ("json", "summary", "change_tracking")
    )
    assert tuple(re.findall(r'name="format_(\w+)"', page)) == offered
    body = scrape_body({"url": URL, "engine": "js", **{f"format_{name}": "on" for name in FORMATS}})
    assert tuple(validate(ScrapeRequest, orjson.loads(body)).formats) == offered


@pytest.mark.parametrize(("option", "offered"), [("--engine", ENGINES), ("--proxy", TIERS)])
def test_the_command_line_offers_exactly_the_vocabulary(
    option: str, offered: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["scrape", URL, option, "bogus"])
    choices = capsys.readouterr().err.split("choose from", 1)[1].split(")")[0]
    assert tuple(re.findall(r"\w+", choices)) == (*offered, AUTO)


def test_auto_climbs_the_vocabulary_cheapest_first_and_the_pools_are_its_proxied_tiers():
    config = Config(proxies_datacenter=("http://d:1",), proxies_residential=("http://r:1",))
    steps, _, _ = ladder(config, AUTO, AUTO, unlocked=True, trials_left=0, max_credits=None)
    assert steps is not None
    assert steps.engines == ENGINES and steps.tiers == TIERS
    assert proxy_pool.TIERS == TIERS[1:]
    assert config_module.ENGINES == ENGINES and config_module.TIERS == TIERS
    assert set(config.costs) == set(ENGINES)
    assert all(tuple(costs) == TIERS for costs in config.costs.values())


def test_a_residential_trial_is_held_direct_free_through_the_pool_and_billed_direct_after():
    trial = ResidentialTrial(unlocked=False, trials_left=1)
    assert trial.applies("residential") and trial.held_at("residential") == "none"
    assert not trial.applies("datacenter") and trial.held_at("datacenter") == "datacenter"
    assert not ResidentialTrial(unlocked=False, trials_left=0).allows("residential")
    assert ResidentialTrial(unlocked=True).allows("residential")
    assert not ResidentialTrial(unlocked=True).applies("residential")
    assert ResidentialTrial.used_up(True, "residential")
    assert not ResidentialTrial.used_up(True, "none")  # a fallback: billed direct
    assert not ResidentialTrial.used_up(False, "residential")


TOY = Output(
    "toy",
    "response",
    "tests.test_vocabulary.toy_of",
    field="toy",
    description="the response's status, spelled out",
    summary="toy",
    label="Toy",
)


def toy_of(response: HtmlResponse, max_bytes: int) -> str:
    return f"status {response.status}"


def shout(cleaned: str) -> str:
    return cleaned.upper()


def test_a_new_format_made_from_the_response_is_its_declaration_and_its_producer():
    registry = OUTPUTS.copy(TOY)
    response = HtmlResponse(URL, body=b"<p>hi</p>", encoding="utf-8")
    made = registry.from_response(["toy", "raw_html", "markdown"], response, 1000)
    assert made == {"toy": "status 200", "raw_html": "<p>hi</p>"}
    assert "toy" not in OUTPUTS.declared
    registry.declare(TOY)  # the same declaration again (a module imported twice) is no change
    with pytest.raises(ValueError, match="is declared already"):
        registry.declare(Output("markdown", "page", None, "markdown", "", "", ""))
    with pytest.raises(ValueError, match="tokens are billed"):
        Output("ask", "model", "a.b", field="ask", description="", summary="", label="")


def test_a_new_format_made_from_the_page_is_a_converter():
    producers = {
        "shout": PageProducer("tests.test_vocabulary.shout"),
        "html": STANDARD["html"],
    }
    options = OutputOptions(formats=frozenset(producers), producers=producers)
    page = extract_page("<p>hi <a href='/a'>there</a></p>", URL, options=options)
    assert page["shout"] == '<P>HI <A HREF="HTTPS://EXAMPLE.COM/A">THERE</A></P>'
    assert page["html"] == '<p>hi <a href="https://example.com/a">there</a></p>'
    assert OutputOptions.from_wire(options.to_wire()) == options


def test_the_python_clients_tools_mirror_the_vocabulary():
    """The client is a distribution of its own and cannot import it: it says it again."""
    from scrapespy import mcp

    assert get_args(mcp.Engine) == (*ENGINES, AUTO)
    assert get_args(mcp.Proxy) == (*TIERS, AUTO)
    # the tools answer text: every format but the screenshot, the structured data and json
    # (which needs a schema)
    not_text = ("screenshot", "structured_data")
    assert get_args(mcp.Format) == tuple(
        name for name in FORMATS if name not in not_text and OUTPUTS[name].checkbox
    )
