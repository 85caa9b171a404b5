"""What an operator sees: /metrics, request ids, JSON logs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.service import ServiceProcess, call
from service.billing import keys

FULL_CHROMIUM = "/usr/bin/chromium"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(data, name: str, **labels: str) -> float:
    return data.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_count_requests_scrapes_and_credits(service, site, accounts):
    account_id, key = accounts.create(credits=10)
    _, broke = accounts.create(credits=0)
    before = samples(call("GET", service.url("/metrics")).body.decode())
    assert service.scrape(key, {"url": site.url("/article")}).json["success"] is True
    assert service.scrape(key, {"url": site.url("/article")}).json["success"] is True
    assert service.scrape(key, {"url": site.url("/status/404")}).json["success"] is False
    assert service.scrape("spy_bad", {"url": site.url("/article")}).status == 401
    # refused at the key lookup or the hold: counted as requests only
    assert service.scrape(keys.generate_key(), {"url": site.url("/article")}).status == 401
    assert service.scrape(broke, {"url": site.url("/article")}).status == 402
    reply = call("GET", service.url("/metrics"))
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/plain")
    after = samples(reply.body.decode())

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    ok = dict(engine="static", tier_requested="none", tier_used="none", blocked="false")
    assert delta("scrapespy_scrapes_total", success="true", **ok) == 2
    assert delta("scrapespy_scrapes_total", success="false", **ok) == 1
    assert delta("scrapespy_credits_captured_total") == 2
    assert delta("scrapespy_http_requests_total", endpoint="/scrape", status="200") == 3
    assert delta("scrapespy_http_requests_total", endpoint="/scrape", status="401") == 2
    assert delta("scrapespy_http_requests_total", endpoint="/scrape", status="402") == 1
    assert delta("scrapespy_scrape_seconds_count", engine="static") == 3
    assert value(after, "scrapespy_holds_open") == 0


def test_browser_gauges_show_nothing_left_open_after_js_scrapes(service, site, accounts):
    _, key = accounts.create(credits=20)
    for _ in range(2):
        assert service.scrape(key, {"url": site.url("/js-only"), "engine": "js"}).json["success"]
    # a finished render's context closes just after its answer has gone (a bounded wait)
    deadline = time.monotonic() + 10
    while True:
        after = samples(call("GET", service.url("/metrics")).body.decode())
        settled = value(after, "scrapespy_browser_pages_open") <= 2 and (
            value(after, "scrapespy_browser_contexts_open") <= 2
        )
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    # at most the spare contexts (each with its page) made ahead of demand
    # (SCRAPESPY_BROWSER_SPARES = 2), never one per past request
    assert value(after, "scrapespy_browser_pages_open") <= 2
    # ...and the gauge does read the live browser: the spares are there
    assert 1 <= value(after, "scrapespy_browser_contexts_open") <= 2


@pytest.mark.skipif(not Path(FULL_CHROMIUM).exists(), reason="no full Chromium")
def test_the_full_chromium_keeps_no_spare_context(database_url, tmp_path, site, accounts):
    # its contexts cost it too much CPU to make them ahead of demand (SCRAPESPY_BROWSER_SPARES)
    proc = ServiceProcess(
        database_url, tmp_path, env={"SCRAPESPY_CHROMIUM_PATH": FULL_CHROMIUM}
    ).start()
    try:
        _, key = accounts.create(credits=20)
        for _ in range(2):
            reply = proc.scrape(key, {"url": site.url("/js-only"), "engine": "js"})
            assert reply.json["success"]
            assert reply.json["title"] == "Rendered by JS"
        deadline = time.monotonic() + 10
        while True:
            after = samples(call("GET", proc.url("/metrics")).body.decode())
            closed = value(after, "scrapespy_browser_contexts_open") == 0
            if closed or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert value(after, "scrapespy_browser_contexts_open") == 0
        assert value(after, "scrapespy_browser_pages_open") == 0
    finally:
        proc.stop()


def test_every_response_carries_a_request_id_that_the_access_log_names(service, site):
    reply = call("GET", service.url("/pricing"))
    request_id = reply.headers["X-Request-Id"]
    assert len(request_id) >= 8
    kept = call("GET", service.url("/healthz"), headers={"X-Request-Id": "trace-abc.123"})
    assert kept.headers["X-Request-Id"] == "trace-abc.123"
    junk = call("GET", service.url("/healthz"), headers={"X-Request-Id": "<script>"})
    assert junk.headers["X-Request-Id"] != "<script>"

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        access = service.access_entries()
        mine = [entry for entry in access if entry.get("request_id") == "trace-abc.123"]
        if mine:
            break
        time.sleep(0.05)
    assert mine and mine[0]["status"] == 200 and mine[0]["path"] == "/healthz"
    assert all("spy_" not in json.dumps(entry) for entry in access)


def test_every_line_the_service_writes_from_its_start_is_one_json_object(service, site, accounts):
    _, key = accounts.create(credits=10)
    assert service.scrape(key, {"url": site.url("/article")}).json["success"] is True
    lines = list(service.output)
    # the crawler's start-up report (settings, components) is among them, on one line each
    assert any("Overridden settings" in line for line in lines)
    not_json = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if not isinstance(entry, dict) or not {"ts", "level", "logger", "msg"} <= entry.keys():
            not_json.append(line)
    assert not_json == []
