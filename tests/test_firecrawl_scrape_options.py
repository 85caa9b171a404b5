"""Firecrawl's scrape options as native requests, and native results as Firecrawl's documents
(service.firecrawl.scrape, service.firecrawl.actions). The payloads are the ones firecrawl-py
builds (its own request preparation, no network), and every translation passes the native
request's own validation."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest
from firecrawl.v2.methods.scrape import _prepare_scrape_request
from firecrawl.v2.types import ScrapeOptions

from service.core.errors import BadRequest
from service.core.schemas import checked_scrape
from service.firecrawl.actions import SCROLL_PX
from service.firecrawl.scrape import document, firecrawl_message, native_scrape
from service.scrape.results import ScrapeResult, result_class

URL = "https://example.com/article"


def sdk_payload(**options: Any) -> dict[str, Any]:
    """What ``Firecrawl(...).scrape(URL, **options)`` posts, with the HTTP client's origin."""
    made = ScrapeOptions(**options) if options else None
    return {**_prepare_scrape_request(URL, made), "origin": "python-sdk@test"}


def translated(data: dict[str, Any], version: int = 2) -> dict[str, Any]:
    native = native_scrape(data, version)  # type: ignore[arg-type]
    checked_scrape(dict(native), model=True)  # the native request's own check accepts it
    return native


def refusal(data: dict[str, Any]) -> str:
    with pytest.raises(BadRequest) as refused:
        native_scrape(data, 2)
    return refused.value.message


def test_the_sdks_default_fields_are_accepted_and_mean_what_the_server_does():
    assert sdk_payload(formats=["markdown"]) == {
        "url": URL,
        "formats": ["markdown"],
        "onlyMainContent": True,
        "mobile": False,
        "removeBase64Images": True,
        "fastMode": False,
        "blockAds": True,
        "maxAge": 14_400_000,
        "storeInCache": True,
        "origin": "python-sdk@test",
    }
    assert translated(sdk_payload(formats=["markdown"])) == {
        "url": URL,
        "formats": ["markdown"],
        "only_main_content": True,
        "proxy_type": "none",
        "max_age": 14_400,
        "engine": "auto",
    }
    # a bare scrape: markdown of the main content, no cache
    assert translated(sdk_payload()) == {
        "url": URL,
        "formats": ["markdown"],
        "only_main_content": True,
        "proxy_type": "none",
        "engine": "auto",
    }


def test_a_url_without_a_scheme_is_http_as_firecrawl_reads_it():
    assert translated({"url": "example.com/a"})["url"] == "http://example.com/a"
    assert "'url'" in firecrawl_message(refusal_of_native({"url": "ftp://example.com"}))


def refusal_of_native(data: dict[str, Any]) -> str:
    with pytest.raises(BadRequest) as refused:
        checked_scrape(native_scrape(data, 2))
    return refused.value.message


def test_langchain_and_v1_bookkeeping_are_ignored():
    langchain = _prepare_scrape_request(URL, ScrapeOptions(integration="langchain"))
    assert "integration" in langchain
    assert translated(langchain)["url"] == URL
    v1 = {"url": URL, "origin": "python-sdk@1", "timeout": 30_000, "formats": ["markdown"]}
    assert translated(v1, 1)["timeout"] == 30.0


def test_formats_strings_objects_and_full_page_screenshots():
    native = translated(
        sdk_payload(formats=["rawHtml", "links", {"type": "screenshot", "full_page": True}])
    )
    assert native["formats"] == ["raw_html", "screenshot"]
    assert native["screenshot_full_page"] is True
    assert native["engine"] == "js"  # a screenshot needs the browser
    v1 = translated({"url": URL, "formats": ["html", "screenshot@fullPage"]}, 1)
    assert v1["formats"] == ["html", "screenshot"] and v1["screenshot_full_page"] is True
    assert translated({"url": URL, "formats": ["links"]})["formats"] == []


@pytest.mark.parametrize("name", ["branding", "extract", "query"])
def test_formats_the_server_cannot_make_are_refused_by_name(name):
    assert f"{name!r} format" in refusal({"url": URL, "formats": [{"type": name}]})
    assert "'formats'" in refusal({"url": URL, "formats": [name]})


def test_json_and_summary_are_the_native_model_formats():
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    v2 = translated(
        sdk_payload(
            formats=[
                "markdown",
                {"type": "json", "prompt": "The name", "schema": schema},
                {"type": "summary"},
            ]
        )
    )
    assert v2["formats"] == ["json", "markdown", "summary"]
    assert v2["json"] == {"prompt": "The name", "schema": schema}
    v1 = translated(
        {"url": URL, "formats": ["json"], "jsonOptions": {"schema": schema, "systemPrompt": None}},
        1,
    )
    assert v1["formats"] == ["json"] and v1["json"] == {"schema": schema}
    assert "'formats[0]'" in refusal({"url": URL, "formats": [{"type": "json"}]})
    assert "'formats[0].systemPrompt'" in refusal(
        {"url": URL, "formats": [{"type": "json", "prompt": "x", "systemPrompt": "be terse"}]}
    )


def test_milliseconds_become_seconds_and_the_timeout_keeps_the_native_bound():
    native = translated({"url": URL, "timeout": 45_000, "waitFor": 1500})
    assert native["timeout"] == 45.0
    assert native["wait_for"] == {"ms": 1500} and native["engine"] == "js"
    assert "'timeout'" in refusal({"url": URL, "timeout": 120_001})
    assert "'timeout'" in refusal({"url": URL, "timeout": 0})
    assert "'waitFor'" in refusal({"url": URL, "waitFor": -1})
    assert "wait_for" not in translated({"url": URL, "waitFor": 0})


def test_actions_map_one_to_one_onto_native_steps():
    native = translated(
        sdk_payload(
            actions=[
                {"type": "wait", "milliseconds": 200},
                {"type": "wait", "selector": "#list"},
                {"type": "click", "selector": "#q"},
                {"type": "write", "text": "tides"},
                {"type": "press", "key": "ENTER"},
                {"type": "scroll", "direction": "up"},
                {"type": "screenshot", "full_page": True},
                {"type": "executeJavascript", "script": "return 1"},
                {"type": "scrape"},
            ]
        )
    )
    steps = native["actions"]
    assert native["engine"] == "js"
    assert steps[:7] == [
        {"type": "wait", "ms": 200},
        {"type": "wait_for", "selector": "#list"},
        {"type": "click", "selector": "#q"},
        {"type": "type", "selector": "#q", "text": "tides"},
        {"type": "press", "key": "Enter"},
        {"type": "scroll", "direction": "up", "amount": SCROLL_PX},
        {"type": "screenshot", "full_page": True},
    ]
    assert steps[7]["type"] == "evaluate" and '"return 1"' in steps[7]["script"]
    assert steps[8]["type"] == "evaluate" and "outerHTML" in steps[8]["script"]
    every = translated({"url": URL, "actions": [{"type": "click", "selector": "a", "all": True}]})
    assert every["actions"] == [{"type": "click", "selector": "a", "all": True}]


def test_actions_that_cannot_be_done_honestly_are_refused():
    write_first = {"url": URL, "actions": [{"type": "write", "text": "x"}]}
    assert "'actions[0]'" in refusal(write_first) and "click" in refusal(write_first)
    after_all = [{"type": "click", "selector": "a", "all": True}, {"type": "write", "text": "x"}]
    assert "'actions[1]'" in refusal({"url": URL, "actions": after_all})
    pdf = refusal({"url": URL, "actions": [{"type": "pdf"}]})
    assert "'actions[0].type'" in pdf and "pdf" in pdf
    inside = {"url": URL, "actions": [{"type": "scroll", "selector": "#box"}]}
    assert "'actions[0].selector'" in refusal(inside)


def test_proxies_map_to_native_tiers():
    tiers = {
        proxy: translated({"url": URL, "proxy": proxy})["proxy_type"]
        for proxy in ("basic", "stealth", "enhanced", "auto")
    }
    assert tiers == {
        "basic": "datacenter",
        "stealth": "residential",
        "enhanced": "residential",
        "auto": "auto",
    }
    assert "'proxy'" in refusal({"url": URL, "proxy": "tor"})


def test_location_is_the_native_location_and_a_country_without_proxy_is_auto():
    native = translated(sdk_payload(location={"languages": ["de-DE", "en"]}))
    assert native["location"] == {"languages": ["de-DE", "en"]}
    assert native["proxy_type"] == "none" and "headers" not in native
    placed = translated({"url": URL, "location": {"country": "DE", "languages": None}})
    assert placed["location"] == {"country": "DE"} and placed["proxy_type"] == "auto"
    v1 = translated({"url": URL, "geolocation": {"country": "fr"}, "proxy": "stealth"})
    assert v1["location"] == {"country": "fr"} and v1["proxy_type"] == "residential"
    assert "'location.city'" in refusal({"url": URL, "location": {"city": "Berlin"}})
    assert "'location'" in refusal({"url": URL, "location": "DE"})


def test_max_age_is_kept_only_when_the_caller_lets_the_server_keep_answers():
    assert translated({"url": URL, "maxAge": 60_000})["max_age"] == 60
    for off in ({"maxAge": 0}, {"maxAge": 60_000, "storeInCache": False}):
        assert "max_age" not in translated({"url": URL, **off})
    assert "max_age" not in translated({"url": URL, "maxAge": 1, "zeroDataRetention": True})


def test_flags_are_accepted_by_value_and_features_refused_by_name():
    for accepted in ({"blockAds": False}, {"removeBase64Images": False}, {"mobile": True}):
        translated({"url": URL, **accepted})
    assert translated({"url": URL, "mobile": True})["device"] == "mobile"
    for field, value in (
        ("fastMode", True),
        ("skipTlsVerification", False),
        ("lockdown", True),
        ("parsePDF", False),
        ("blockAds", "yes"),
    ):
        assert f"'{field}'" in refusal({"url": URL, field: value}), field
    for field in ("jsonOptions", "agent"):
        assert f"'{field}'" in refusal({"url": URL, field: {}})
    # PDFs are converted: their text layer, no OCR, no page limit of the caller's
    for parsers in (["pdf"], [{"type": "pdf"}], [{"type": "pdf", "mode": "fast"}], []):
        translated({"url": URL, "parsers": parsers})
    translated({"url": URL, "parsePDF": True})
    for parsers in (["image"], [{"type": "pdf", "mode": "ocr"}], [{"type": "pdf", "maxPages": 2}]):
        assert "'parsers'" in refusal({"url": URL, "parsers": parsers}), parsers
    assert refusal({"url": URL, "sparkle": 1}) == "unknown field 'sparkle'"


def test_native_validation_messages_name_firecrawls_fields():
    for data, named in (
        ({"url": URL, "includeTags": ["p::before"]}, "includeTags[0]"),
        ({"url": URL, "actions": [{"type": "wait", "milliseconds": 999_999}]}, "'actions[0]"),
        ({"url": "ftp://example.com"}, "'url'"),
        ({"url": URL, "headers": {"Host": "x"}}, "'headers"),
    ):
        with pytest.raises(BadRequest) as native_error:
            checked_scrape(native_scrape(data, 2))
        assert named in firecrawl_message(native_error.value.message), native_error.value
    assert firecrawl_message("'wait_for.ms': too long") == "'waitFor': too long"
    assert firecrawl_message("'actions[3].ms': x") == "'actions[3].milliseconds': x"
    assert firecrawl_message("'exclude_tags': x, 'only_main_content'") == (
        "'excludeTags': x, 'onlyMainContent'"
    )


def a_result(**fields: Any) -> ScrapeResult:
    made = result_class(ScrapeResult, ("action_results", "markdown", "screenshot"))
    values: dict[str, Any] = {
        "url": URL,
        "final_url": URL + "?page=1",
        "status_code": 200,
        "success": True,
        "engine": "js",
        "elapsed_ms": 12,
        "error": None,
        "blocked": False,
        "proxy_used": False,
        "title": "Tides",
        "meta": {"description": "About tides", "og:title": "OG tides", "twitter:card": "x"},
        "headings": {},
        "links": [{"text": "a", "href": URL + "/a"}, {"text": "b", "href": URL + "/a"}],
        "images": [URL + "/i.png"],
        "text": "tides",
        "extracted": {},
        "error_code": None,
        "tier_used": "residential",
        "credits_charged": 7,
        "cached": False,
        "timings": {},
        "markdown": "# Tides",
        "screenshot": "iVBORw0KGgo=",
        **fields,
    }
    return made(**values)  # type: ignore[call-arg]


def test_a_document_from_a_result_or_its_stored_json_is_the_same():
    data = {
        "formats": ["markdown", "links", "images", "screenshot"],
        "actions": [
            {"type": "screenshot"},
            {"type": "executeJavascript", "script": "1"},
            {"type": "scrape"},
        ],
    }
    result = a_result(
        action_results=[
            {"index": 0, "type": "screenshot", "screenshot": "AAAA"},
            {"index": 1, "type": "evaluate", "value": "hi"},
            {"index": 2, "type": "evaluate", "value": {"url": URL, "html": "<p>"}},
        ]
    )
    doc = document(result, data, 2)
    stored = orjson.loads(orjson.dumps(dataclasses.asdict(result)))
    assert document(stored, data, 2) == doc
    assert doc["markdown"] == "# Tides"
    assert doc["links"] == [URL + "/a"]
    assert doc["images"] == [URL + "/i.png"]
    assert doc["screenshot"] == "data:image/png;base64,iVBORw0KGgo="
    assert doc["actions"] == {
        "screenshots": ["data:image/png;base64,AAAA"],
        "scrapes": [{"url": URL, "html": "<p>"}],
        "javascriptReturns": [{"type": "string", "value": "hi"}],
        "pdfs": [],
    }
    assert doc["metadata"] == {
        "description": "About tides",
        "og:title": "OG tides",
        "twitter:card": "x",
        "title": "Tides",
        "ogTitle": "OG tides",
        "sourceURL": URL,
        "url": URL + "?page=1",
        "statusCode": 200,
        "proxyUsed": "stealth",
        "cacheState": "miss",
        "creditsUsed": 7,
    }


def test_a_failed_or_blocked_scrape_says_why_in_its_metadata():
    gone = a_result(success=False, status_code=0, error="connection refused", credits_charged=0)
    metadata = document(gone, {}, 2)["metadata"]
    assert metadata["error"] == "connection refused" and "statusCode" not in metadata
    assert metadata["creditsUsed"] == 0
    cached = document(a_result(cached=True, credits_charged=0), {}, 1)["metadata"]
    assert cached["cacheState"] == "hit" and "error" not in cached
    fell_back = document(a_result(tier_used="none"), {"proxy": "stealth"}, 2)
    assert "stealth proxy pool was unavailable" in fell_back["warning"]


def test_a_profile_is_a_session_of_that_name_and_always_saves():
    sent = sdk_payload(profile={"name": "shop", "saveChanges": True})
    native = translated(sent)
    assert native["session"] == "shop"
    assert "max_age" not in native  # the SDK's default maxAge would answer from the cache
    assert translated({"url": URL, "profile": {"name": "shop"}})["session"] == "shop"
    assert "'profile.saveChanges'" in refusal(
        {"url": URL, "profile": {"name": "shop", "saveChanges": False}}
    )
    assert "'profile.color'" in refusal({"url": URL, "profile": {"name": "a", "color": 1}})
    assert "'profile'" in refusal({"url": URL, "profile": "shop"})
    with pytest.raises(BadRequest) as bad_name:
        checked_scrape(native_scrape({"url": URL, "profile": {"name": "no spaces"}}, 2))
    assert "'profile.name'" in firecrawl_message(bad_name.value.message)


def test_change_tracking_v2_object_and_v1_options_are_the_native_format_and_options():
    v2 = translated(
        {
            "url": URL,
            "formats": [
                "markdown",
                {"type": "changeTracking", "modes": ["git-diff", "json"], "tag": "t", "schema": {}},
            ],
        }
    )
    assert v2["formats"] == ["change_tracking", "markdown"]
    assert v2["change_tracking"] == {"modes": ["git-diff", "json"], "tag": "t", "schema": {}}
    v1 = translated(
        {
            "url": URL,
            "formats": ["markdown", "changeTracking"],
            "changeTrackingOptions": {"modes": ["git-diff"], "tag": "t"},
        },
        version=1,
    )
    assert v1["formats"] == ["change_tracking", "markdown"]
    assert v1["change_tracking"] == {"modes": ["git-diff"], "tag": "t"}
    # the SDK's defaults (no modes, a null tag) ask nothing more than the format
    bare = translated({"url": URL, "formats": [{"type": "changeTracking", "tag": None}]})
    assert bare["formats"] == ["change_tracking"] and "change_tracking" not in bare
    refused = refusal({"url": URL, "formats": [{"type": "changeTracking", "when": "daily"}]})
    assert "'formats[0].when'" in refused
