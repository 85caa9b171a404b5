"""The dashboard's forms turned into the API's requests, and the usage CSV and chart."""

from __future__ import annotations

from datetime import UTC, date, datetime

import orjson
import pytest

from service.core.errors import BadRequest
from service.core.schemas import ScrapeRequest, parse_json_object, validate
from service.dashboard import export
from service.dashboard.chart import BASELINE, TOP, daily_chart, nice_ceiling
from service.dashboard.forms import (
    FormError,
    buy_order,
    form_fields,
    int_arg,
    page_number,
    parse_selectors,
    scrape_body,
    shown_try_form,
)
from service.dashboard.usage import DayTotal


def test_form_fields_keep_the_first_value_decoded():
    fields = form_fields({b"url": [b"https://a.example/", b"https://b.example/"], b"e": []})
    assert fields == {"url": "https://a.example/"}


def test_numbers_from_the_query_string_are_bounded():
    assert page_number({}) == 1
    assert page_number({b"page": [b"3"]}) == 3
    assert page_number({b"page": [b"0"]}) == 1
    assert page_number({b"page": [b"-4"]}) == 1
    assert page_number({b"page": [b"lots"]}) == 1
    assert page_number({b"page": [b"9" * 40]}) == 1_000_000
    assert int_arg({b"check": [b"2"]}, b"check", 0) == 2


def test_selectors_one_per_line_or_as_json():
    text = "heading = h1::text\n\nlinks = a[href='x']::attr(href)\n"
    assert parse_selectors(text) == {"heading": "h1::text", "links": "a[href='x']::attr(href)"}
    assert parse_selectors('{"t": "title::text"}') == {"t": "title::text"}
    assert parse_selectors("   ") is None
    with pytest.raises(FormError, match="line 2"):
        parse_selectors("a = b\njust a selector")
    with pytest.raises(FormError, match="not valid JSON"):
        parse_selectors("{nope")
    with pytest.raises(FormError, match="map names"):
        parse_selectors('{"t": 1}')


def test_the_try_form_becomes_a_strict_scrape_request():
    body = scrape_body(
        {
            "url": " https://example.com/ ",
            "engine": "js",
            "proxy_type": "datacenter",
            "timeout": "15",
            "selectors": "h = h1",
            "respect_robots": "on",
            "api_key": "spy_never_in_the_body",
        }
    )
    request = validate(ScrapeRequest, parse_json_object(body))
    assert request.url == "https://example.com/"
    assert (request.engine, request.proxy_type, request.timeout) == ("js", "datacenter", 15.0)
    assert request.selectors == {"h": "h1"} and request.respect_robots is True
    assert b"spy_" not in body
    unticked = orjson.loads(scrape_body({"url": "https://example.com/"}))
    assert unticked["respect_robots"] is False and "timeout" not in unticked
    with pytest.raises(FormError, match="Timeout"):
        scrape_body({"url": "https://example.com/", "timeout": "soon"})


def test_the_buy_form_gives_the_api_order():
    assert buy_order({"pack": "50"}).amount_cents() == 5000
    assert buy_order({"amount_eur": "12,50"}).amount_cents() == 1250
    assert buy_order({"amount_eur": "5"}).amount_cents() == 500
    for amount, message in [
        ("4.99", "smallest amount is 5"),
        ("10001", "largest amount"),
        ("7.123", "two decimals"),
        ("seven", "for example"),
        ("", "Choose a pack"),
        ("NaN", "smallest amount"),
    ]:
        with pytest.raises(BadRequest, match=message):
            buy_order({"amount_eur": amount})
    with pytest.raises(BadRequest, match="pack"):
        buy_order({"pack": "20"})


def test_csv_cells_cannot_become_spreadsheet_formulas():
    assert export.cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert export.cell("@SUM(A1)") == "'@SUM(A1)"
    assert export.cell("https://example.com/") == "https://example.com/"
    assert export.cell(None) == "" and export.cell(True) == "true" and export.cell(0) == "0"


def test_a_usage_row_is_one_csv_line():
    row = {
        "created_at": datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC),
        "url": "https://example.com/a,b",
        "engine": "static",
        "tier_requested": "datacenter",
        "tier_used": "none",
        "status_code": None,
        "success": False,
        "blocked": False,
        "error": "-timed out",
        "elapsed_ms": 20000,
        "credits": 0,
        "extraction_credits": 0,
        "trial": False,
    }
    lines = (export.header() + export.csv_lines([row])).decode().split("\r\n")
    assert lines[0].split(",") == list(export.COLUMNS)
    assert lines[1] == (
        '2025-03-04T05:06:07Z,"https://example.com/a,b",static,datacenter,none,,false,false,'
        "'-timed out,20000,0,0,false"
    )
    assert export.filename("Jo.Doe+x@example.com", "2025-03-04") == (
        "scrapespy-usage-JoDoex-2025-03-04.csv"
    )


def test_nice_ceilings():
    assert [nice_ceiling(n) for n in (0, 1, 2, 3, 6, 10, 11, 49, 51, 999)] == [
        1,
        1,
        2,
        5,
        10,
        10,
        20,
        50,
        100,
        1000,
    ]


def test_the_chart_stacks_charged_under_free_scrapes_on_one_scale():
    totals = [DayTotal(date(2025, 1, d), 0, 0, 0) for d in range(1, 31)]
    totals[29] = DayTotal(date(2025, 1, 30), 10, 4, 4)
    totals[0] = DayTotal(date(2025, 1, 1), 5, 5, 25)
    chart = daily_chart(totals)
    assert chart.scale == 10 and chart.scrapes == 15 and chart.credits == 29
    plot = BASELINE - TOP
    last, first, quiet = chart.bars[29], chart.bars[0], chart.bars[10]
    assert last.charged_height == pytest.approx(plot * 0.4)
    assert last.free_height == pytest.approx(plot * 0.6)
    assert last.free_y == pytest.approx(TOP)  # the busiest day fills the plot
    assert last.charged_y + last.charged_height == pytest.approx(BASELINE)
    assert first.free_height == 0 and first.charged_height == pytest.approx(plot / 2)
    assert quiet.charged_height == 0 and quiet.free_height == 0
    assert last.title == "2025-01-30: 10 scrapes, 4 charged, 4 credits"
    assert [label.text for label in chart.labels] == ["01 Jan", "16 Jan", "30 Jan"]
    assert all(bar.x + bar.width <= chart.width for bar in chart.bars)


def test_the_try_form_asks_for_outputs_only_when_ticked():
    body = orjson.loads(
        scrape_body(
            {
                "url": "https://example.com/",
                "engine": "js",
                "format_markdown": "on",
                "format_screenshot": "on",
                "only_main_content": "on",
                "screenshot_full_page": "on",
            }
        )
    )
    assert body["formats"] == ["markdown", "screenshot"]
    assert body["only_main_content"] is True and body["screenshot_full_page"] is True
    plain = orjson.loads(scrape_body({"url": "https://example.com/"}))
    assert not {"formats", "only_main_content", "screenshot_full_page"} & set(plain)
    shown = shown_try_form({"format_html": "on", "only_main_content": "on"})
    assert shown["format_html"] == "on" and shown["only_main_content"] == "on"
    assert shown["format_markdown"] == "" and shown["screenshot_full_page"] == ""


def test_the_try_form_takes_actions_as_json_a_device_and_wait_for():
    steps = '[{"type": "click", "selector": "#more"}, {"type": "wait", "ms": 200}]'
    form = {
        "url": "https://example.com/",
        "engine": "js",
        "actions": f"  {steps}\n",
        "device": "mobile",
        "wait_for": "#prices",
    }
    request = validate(ScrapeRequest, parse_json_object(scrape_body(form)))
    assert [step.type for step in request.actions] == ["click", "wait"]
    assert request.device == "mobile" and request.wait_for is not None
    assert request.wait_for.selector == "#prices"
    waited = orjson.loads(scrape_body({**form, "wait_for": "1500"}))
    assert waited["wait_for"] == {"ms": 1500}
    plain = orjson.loads(scrape_body({"url": "https://example.com/", "device": "desktop"}))
    assert not {"actions", "device", "wait_for"} & set(plain)
    with pytest.raises(FormError, match=r"^Actions: the JSON is not valid"):
        scrape_body({**form, "actions": '[{"type": "click",'})
    with pytest.raises(FormError, match=r"^Actions: write a JSON list of steps"):
        scrape_body({**form, "actions": '{"type": "click"}'})
    shown = shown_try_form(form)
    assert (shown["actions"], shown["device"], shown["wait_for"]) == (
        form["actions"],
        "mobile",
        "#prices",
    )
    assert shown_try_form({})["device"] == "desktop"
