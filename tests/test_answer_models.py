"""The answers of the reads, the price list and the jobs, as the real service gives them, are what
``/openapi.json`` says, field for field: each is checked against its schema with every object
closed (a key the type lacks fails, even where the document leaves an object open), and the
schemas are the types' (service.billing.answers, service.jobs.answers)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest

from harness.search_backends import Hit, SearchStandIn
from harness.service import Accounts, Reply, ServiceProcess, call
from harness.site import TargetSite
from service.billing import answers as billing
from service.core.answer_schemas import answer_schema
from service.jobs import answers as jobs
from service.scrape.results import ScrapeResult
from service.search.answers import SearchAnswer

FINISHED = ("completed", "cancelled", "failed", "insufficient_credits")


@pytest.fixture(scope="module")
def document(service: ServiceProcess) -> dict[str, Any]:
    reply = call("GET", service.url("/openapi.json"))
    assert reply.status == 200
    found: dict[str, Any] = reply.json
    return found


def closed(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists properties and
    says nothing of others (the price list, a scrape result)."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: {name: closed(sub) for name, sub in value.items()}
        if key in ("properties", "schemas")
        else closed(value)
        for key, value in schema.items()
    }
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def validator(document: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A validator of ``schema`` whose references reach the document's (closed) components."""
    root = {**closed(schema), "components": {"schemas": closed(document["components"]["schemas"])}}
    return jsonschema_rs.Draft202012Validator(root, validate_formats=True)


def answer_of(document: dict[str, Any], method: str, path: str, status: str) -> dict[str, Any]:
    """The schema the document gives the ``status`` answer of the operation."""
    content = document["paths"][path][method]["responses"][status]["content"]
    schema: dict[str, Any] = content["application/json"]["schema"]
    return schema


def check(
    document: dict[str, Any], method: str, path: str, reply: Reply, status: int = 200
) -> None:
    assert reply.status == status, reply.body
    schema = answer_of(document, method, path, str(status))
    errors = [str(error) for error in validator(document, schema).iter_errors(reply.json)]
    assert errors == [], (method, path)


def get(service: ServiceProcess, path: str, key: str | None = None) -> Reply:
    return call("GET", service.url(path), key=key)


@pytest.fixture(scope="module")
def used(service: ServiceProcess, accounts: Accounts, site: TargetSite) -> Iterator[str]:
    """A key whose account scraped (a success, a failure), mapped and ran a batch."""
    _, key = accounts.create(credits=1_000)
    assert service.scrape(key, {"url": site.url("/article")}).status == 200
    assert service.scrape(key, {"url": site.url("/status/404")}).status == 200
    assert call("POST", service.url("/map"), {"url": site.url("/article")}, key=key).status == 200
    yield key


def test_the_document_gives_each_answer_its_types_schema(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    models: tuple[type, ...] = (
        billing.Account,
        billing.UsageRow,
        billing.LedgerEntry,
        jobs.JobItem,
        jobs.JobSummary,
        jobs.MapResult,
    )
    for model in models:
        assert schemas[model.__name__] == answer_schema(model), model.__name__
    assert schemas["Job"] == answer_schema(jobs.Job, (ScrapeResult,))
    assert answer_of(document, "get", "/pricing", "200") == answer_schema(billing.PriceList)
    assert answer_of(document, "post", "/batch", "202") == answer_schema(jobs.JobAccepted)
    assert answer_of(document, "post", "/crawl", "202") == answer_schema(jobs.JobAccepted)
    for path, item in (
        ("/usage", billing.UsageRow),
        ("/ledger", billing.LedgerEntry),
        ("/jobs", jobs.JobItem),
    ):
        page = answer_schema(billing.Page[item], (item,))  # type: ignore[valid-type]
        assert answer_of(document, "get", path, "200") == page, path


def test_a_key_the_type_lacks_fails_the_check(
    document: dict[str, Any], service: ServiceProcess, used: str
) -> None:
    """What the other tests rely on: an answer with one more key, at any depth, is refused."""
    account = get(service, "/account", used).json
    schema = answer_of(document, "get", "/account", "200")
    assert validator(document, schema).is_valid(account)
    assert not validator(document, schema).is_valid({**account, "plan": "free"})
    limits = {**account["rate_limits"], "scrape": {**account["rate_limits"]["scrape"], "x": 1}}
    assert not validator(document, schema).is_valid({**account, "rate_limits": limits})
    prices = get(service, "/pricing").json
    schema = answer_of(document, "get", "/pricing", "200")
    assert validator(document, schema).is_valid(prices)
    assert not validator(document, schema).is_valid({**prices, "vat": 0})


def test_the_reads_and_the_price_list(
    document: dict[str, Any], service: ServiceProcess, used: str
) -> None:
    check(document, "get", "/account", get(service, "/account", used))
    usage = get(service, "/usage", used)
    check(document, "get", "/usage", usage)
    # a success, a failure (its error), and a map
    assert {row["engine"] for row in usage.json["items"]} == {"static", "map"}
    assert {row["success"] for row in usage.json["items"]} == {True, False}
    ledger = get(service, "/ledger", used)
    check(document, "get", "/ledger", ledger)
    assert {entry["kind"] for entry in ledger.json["items"]} == {"grant", "scrape"}
    walked = get(service, "/usage?limit=1", used)
    check(document, "get", "/usage", walked)
    assert walked.json["next_cursor"] is not None
    check(document, "get", "/pricing", get(service, "/pricing"))


def test_a_map_that_found_urls_and_one_that_did_not(
    document: dict[str, Any], service: ServiceProcess, used: str, site: TargetSite
) -> None:
    found = call("POST", service.url("/map"), {"url": site.url("/article")}, key=used)
    check(document, "post", "/map", found)
    assert found.json["count"] > 0 and found.json["error_code"] is None
    failed = call("POST", service.url("/map"), {"url": site.url("/status/500")}, key=used)
    check(document, "post", "/map", failed)
    assert failed.json["error_code"] == "map_failed" and failed.json["urls"] == []


def test_a_batch_its_pages_the_listing_and_a_cancel(
    document: dict[str, Any], service: ServiceProcess, used: str, site: TargetSite
) -> None:
    urls = [site.url("/article"), site.url("/status/404")]
    accepted = call(
        "POST", service.url("/batch"), {"urls": urls, "formats": ["markdown"]}, key=used
    )
    check(document, "post", "/batch", accepted, 202)
    job_id = accepted.json["id"]
    deadline = time.monotonic() + 60
    while True:
        reply = get(service, f"/jobs/{job_id}", used)
        check(document, "get", "/jobs/{job_id}", reply)
        if reply.json["status"] in FINISHED and reply.json["counts"]["pending"] == 0:
            break
        assert time.monotonic() < deadline, reply.json
        time.sleep(0.2)
    results = reply.json["results"]
    assert [entry["status"] for entry in results] == ["done", "failed"]
    # a page's result is checked as POST /scrape's answer, a key of its own refused too
    schema = answer_of(document, "get", "/jobs/{job_id}", "200")
    odd = {**results[0], "result": {**results[0]["result"], "extra": 1}}
    assert not validator(document, schema).is_valid({**reply.json, "results": [odd]})
    assert all(entry["result"]["markdown"] is not None for entry in results[:1])
    first = get(service, f"/jobs/{job_id}?limit=1", used)
    check(document, "get", "/jobs/{job_id}", first)
    assert first.json["next_cursor"] is not None
    check(document, "get", "/jobs", get(service, "/jobs", used))
    check(
        document,
        "delete",
        "/jobs/{job_id}",
        call("DELETE", service.url(f"/jobs/{job_id}"), key=used),
    )


def test_a_crawl_and_its_cancel(
    document: dict[str, Any], service: ServiceProcess, used: str, site: TargetSite
) -> None:
    body = {"url": site.url("/article"), "max_pages": 3, "sitemap": "skip"}
    accepted = call("POST", service.url("/crawl"), body, key=used)
    check(document, "post", "/crawl", accepted, 202)
    job_id = accepted.json["id"]
    cancelled = call("DELETE", service.url(f"/jobs/{job_id}"), key=used)
    check(document, "delete", "/jobs/{job_id}", cancelled)
    assert cancelled.json["kind"] == "crawl"
    check(document, "get", "/jobs/{job_id}", get(service, f"/jobs/{job_id}", used))
    listed = get(service, "/jobs?limit=1", used)
    check(document, "get", "/jobs", listed)
    assert [item["id"] for item in listed.json["items"]] == [job_id]


@pytest.fixture(scope="module")
def searching(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, site: TargetSite
) -> Iterator[tuple[ServiceProcess, SearchStandIn]]:
    """A service searching on a SearXNG stand-in whose results point at the local site: a
    page, a 404 and a page robots.txt disallows."""
    hits = {
        "web": [
            Hit(site.url("/article"), "An article"),
            Hit(site.url("/status/404"), "Gone"),
            Hit(site.url("/private/secret"), "Private"),
        ],
        "news": [Hit(site.url("/news/1"), "News", "a story")],
        "images": [Hit(site.url("/photos/1"), "A photo")],
    }
    stand_in = SearchStandIn("searxng", hits).start()
    proc = ServiceProcess(
        database_url,
        tmp_path_factory.mktemp("answers-search"),
        env=stand_in.env(),
    ).start()
    yield proc, stand_in
    proc.stop()
    stand_in.stop()


def test_a_search_and_its_scraped_results(
    document: dict[str, Any],
    searching: tuple[ServiceProcess, SearchStandIn],
    accounts: Accounts,
) -> None:
    schemas = document["components"]["schemas"]
    assert schemas["SearchAnswer"] == answer_schema(SearchAnswer, (ScrapeResult,))
    proc, _ = searching
    _, key = accounts.create(credits=100)
    body = {
        "query": "tides",
        "limit": 3,
        "sources": ["web", "news", "images"],
        "scrape": {"formats": ["markdown"]},
    }
    found = call("POST", proc.url("/search"), body, key=key, timeout=120)
    check(document, "post", "/search", found)
    pages = [item["page"] for item in found.json["web"]]
    assert [page["success"] for page in pages] == [True, False, False]
    assert pages[2]["error_code"] == "robots_disallowed"
    assert found.json["news"] and found.json["images"]
    plain = call("POST", proc.url("/search"), {"query": "tides"}, key=key, timeout=120)
    check(document, "post", "/search", plain)
    assert "page" not in plain.json["web"][0]
    # a key the type lacks, in a result's page, fails the check
    schema = answer_of(document, "post", "/search", "200")
    odd = {**found.json["web"][0], "page": {**pages[0], "extra": 1}}
    assert not validator(document, schema).is_valid({**found.json, "web": [odd]})
    usage = call("GET", proc.url("/usage"), key=key)
    check(document, "get", "/usage", usage)
    assert "search" in {row["engine"] for row in usage.json["items"]}
