"""End to end: json.prompt/json.schema and the summary format through the real service, its
`openai` client and a local stand-in of the chat-completions API (tests.llm_standin).

What a caller sees: the model's JSON in ``json``, its tokens and their credits in
``llm_usage``, a ledger that moved by exactly ``credits_charged`` (the page plus the tokens),
the page and the tokens recorded apart (a ``scrape`` and an ``extraction`` entry of one hold,
and the usage row's ``extraction_credits``), the worst case held before anything is fetched (a
402 when it cannot be), a bad answer retried once then failed unbilled, a timeout and a 429
failed unbilled, a long page cut to its bound, each account's page sent alone, a batch job's
and a crawl's pages alike, and the operator's key nowhere in logs or answers. Without an
endpoint the fields are a 400.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from firecrawl import Firecrawl, V1FirecrawlApp
from firecrawl.v2.types import JsonFormat
from scrapespy.models import ScrapeResult as ClientResult

from harness.service import Accounts, ServiceProcess, call
from harness.site import TargetSite
from service.extraction.model_schema import most_tokens
from tests.conftest import a_database_of_its_own
from tests.llm_standin import API_KEY, SUMMARY, ModelStandin, Reply

PAGE_PRICE = 1  # static, no proxy
PER_1K = 3
MAX_INPUT, MAX_OUTPUT = 1000, 100
RESERVE = math.ceil(most_tokens(MAX_INPUT, MAX_OUTPUT) / 1000) * PER_1K
PRODUCT = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
    "required": ["name", "price"],
}
KETTLE = """<!doctype html><html><head><title>Blue kettle</title></head><body>
<nav>Home | Shop</nav><main><h1>Blue kettle</h1><p>Price: 24.90 EUR</p>
<p>A 1.7 litre kettle in enamelled steel.</p></main></body></html>"""


@pytest.fixture(scope="module")
def standin() -> Iterator[ModelStandin]:
    model = ModelStandin().start()
    yield model
    model.stop()


@pytest.fixture(scope="module")
def own(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Accounts]]:
    yield from a_database_of_its_own(database_url, tmp_path_factory.mktemp("llm-db"))


@pytest.fixture(scope="module")
def accounts(own: tuple[str, Accounts]) -> Accounts:
    return own[1]


@pytest.fixture(scope="module")
def modelled(
    own: tuple[str, Accounts], standin: ModelStandin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceProcess]:
    env = {
        "SCRAPESPY_LLM_BASE_URL": standin.base_url,
        "SCRAPESPY_LLM_MODEL": "stand-in-model",
        "SCRAPESPY_LLM_API_KEY": API_KEY,
        "SCRAPESPY_LLM_TIMEOUT_SECONDS": "2",
        "SCRAPESPY_LLM_MAX_INPUT_TOKENS": str(MAX_INPUT),
        "SCRAPESPY_LLM_MAX_OUTPUT_TOKENS": str(MAX_OUTPUT),
        "SCRAPESPY_LLM_CREDITS_PER_1K_TOKENS": str(PER_1K),
        "SCRAPESPY_LOG_LEVEL": "DEBUG",
        "SCRAPESPY_JOB_PAGES_IN_FLIGHT": "2",
    }
    proc = ServiceProcess(own[0], tmp_path_factory.mktemp("llm"), env=env).start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def kettle(site: TargetSite) -> str:
    site.page("/llm/kettle", KETTLE)
    return site.url("/llm/kettle")


@pytest.fixture(autouse=True)
def fresh(standin: ModelStandin) -> None:
    standin.calls.clear()
    standin.script.clear()


def asked(url: str, **more: Any) -> dict[str, Any]:
    return {
        "url": url,
        "formats": ["json"],
        "json": {"prompt": "The product on sale", "schema": PRODUCT},
        **more,
    }


def money(accounts: Accounts, account_id: int) -> tuple[int, int]:
    summary = accounts.summary(account_id)
    return summary["balance"], summary["held"]


def recorded(service: ServiceProcess, key: str) -> dict[str, list[dict[str, Any]]]:
    """What GET /ledger and GET /usage show of each hold: its entries, its usage row."""
    held: dict[str, list[dict[str, Any]]] = {}
    for entry in call("GET", service.url("/ledger"), key=key).json["items"]:
        if entry["kind"] != "grant":
            held.setdefault(entry["reference"], []).append(entry)
    for row in call("GET", service.url("/usage"), key=key).json["items"]:
        held.setdefault(row["reference"], []).append(row)
    return held


def assert_page_and_tokens_apart(service: ServiceProcess, key: str, results: list[dict]) -> None:
    """Each scrape's hold has a scrape entry for the page, an extraction entry for the tokens,
    and a usage row whose extraction_credits are the tokens' share of its credits."""
    held = recorded(service, key)
    assert len(held) == len(results), held
    shares = sorted((r["credits_charged"], r["llm_usage"]["credits"]) for r in results)
    found = []
    for reference, (extraction, page, row) in held.items():  # newest first
        assert (extraction["kind"], page["kind"]) == ("extraction", "scrape"), held
        assert page["amount"] == -PAGE_PRICE and page["reference"] == reference
        assert page["balance_after"] == extraction["balance_after"] - extraction["amount"]
        assert row["credits"] == PAGE_PRICE - extraction["amount"]
        assert row["extraction_credits"] == -extraction["amount"] > 0
        found.append((row["credits"], row["extraction_credits"]))
    assert sorted(found) == shares


def test_the_models_json_is_the_answer_and_the_ledger_is_exact(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, kettle: str
) -> None:
    account_id, key = accounts.create(credits=100)
    standin.script.append(Reply(json.dumps({"name": "Blue kettle", "price": 24.9})))
    reply = modelled.scrape(key, asked(kettle))
    assert reply.status == 200, reply.body
    result = reply.json
    assert result["success"] is True, result
    assert result["json"] == {"name": "Blue kettle", "price": 24.9}
    assert "markdown" not in result  # the model's input, not asked for
    (call_made,) = standin.calls
    assert "Price: 24.90 EUR" in call_made.text and "The product on sale" in call_made.text
    usage = result["llm_usage"]
    assert usage["prompt_tokens"] == len(call_made.text) // 4
    assert usage["completion_tokens"] > 0
    tokens = usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["credits"] == math.ceil(tokens / 1000) * PER_1K
    assert result["credits_charged"] == PAGE_PRICE + usage["credits"]
    assert money(accounts, account_id) == (100 - result["credits_charged"], 0)
    assert accounts.entries_sum(account_id) == 100 - result["credits_charged"]
    assert_page_and_tokens_apart(modelled, key, [result])
    (entries,) = recorded(modelled, key).values()
    assert entries[0]["balance_after"] == 100 - result["credits_charged"]
    read = ClientResult.model_validate(result)  # the Python client reads it as it came
    assert read.json_ == {"name": "Blue kettle", "price": 24.9}
    assert read.llm_usage == usage


def test_the_js_engine_sends_the_rendered_page(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=100)
    site.page(
        "/llm/rendered",
        "<html><body><main id='m'></main><script>document.getElementById('m').innerHTML ="
        " '<h1>Green kettle</h1><p>Price: 31 EUR</p>';</script></body></html>",
    )
    result = modelled.scrape(key, asked(site.url("/llm/rendered"), engine="js")).json
    assert result["success"] is True, result
    assert result["engine"] == "js"
    assert "Green kettle" in standin.calls[0].text and "Price: 31 EUR" in standin.calls[0].text
    assert result["json"] == {"name": "stand-in", "price": 1.5}
    assert money(accounts, account_id) == (100 - result["credits_charged"], 0)
    assert result["credits_charged"] > result["llm_usage"]["credits"] > 0


def test_a_summary_comes_with_markdown_when_asked(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, kettle: str
) -> None:
    _, key = accounts.create(credits=100)
    reply = modelled.scrape(key, {"url": kettle, "formats": ["summary", "markdown"]})
    result = reply.json
    assert result["success"] is True, result
    assert result["summary"] == SUMMARY
    assert "Blue kettle" in result["markdown"]
    assert result["credits_charged"] == PAGE_PRICE + result["llm_usage"]["credits"]


def test_a_bad_answer_is_retried_once_then_the_scrape_fails_unbilled(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, kettle: str
) -> None:
    account_id, key = accounts.create(credits=100)
    standin.script.extend([Reply("{not json"), Reply('{"name": "Kettle"}')])
    result = modelled.scrape(key, asked(kettle)).json
    assert result["success"] is False
    assert result["error_code"] == "llm_invalid_answer"
    assert "'price' is a required property" in result["error"]
    assert result["json"] is None and result["credits_charged"] == 0
    assert result["llm_usage"]["credits"] == 0 and result["llm_usage"]["prompt_tokens"] > 0
    assert len(standin.calls) == 2
    assert money(accounts, account_id) == (100, 0)


def test_a_retried_answer_that_validates_is_a_success(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, kettle: str
) -> None:
    _, key = accounts.create(credits=100)
    standin.script.extend([Reply('{"name": 3}'), Reply('{"name": "Kettle", "price": 2}')])
    result = modelled.scrape(key, asked(kettle)).json
    assert result["success"] is True, result
    assert result["json"] == {"name": "Kettle", "price": 2}


@pytest.mark.parametrize(
    ("reply", "code"),
    [(Reply('{"name": "x", "price": 1}', delay=4), "llm_timeout"), (Reply(status=429), None)],
)
def test_a_slow_or_busy_model_fails_the_scrape_unbilled(
    modelled: ServiceProcess,
    accounts: Accounts,
    standin: ModelStandin,
    kettle: str,
    reply: Reply,
    code: str | None,
) -> None:
    account_id, key = accounts.create(credits=100)
    standin.script.append(reply)
    result = modelled.scrape(key, asked(kettle)).json
    assert result["success"] is False
    assert result["error_code"] == (code or "llm_unavailable")
    assert result["credits_charged"] == 0
    assert money(accounts, account_id) == (100, 0)


def test_a_very_long_page_is_cut_to_the_input_bound(
    modelled: ServiceProcess,
    accounts: Accounts,
    standin: ModelStandin,
    site: TargetSite,
) -> None:
    _, key = accounts.create(credits=100)
    words = " ".join(f"word{i}" for i in range(60_000))
    site.page("/llm/long", f"<html><body><main><p>{words}</p></main></body></html>")
    result = modelled.scrape(key, asked(site.url("/llm/long"))).json
    assert result["success"] is True, result
    sent = standin.calls[0].body["messages"][1]["content"]
    assert "the rest was cut" in sent
    assert len(sent) < MAX_INPUT * 4 + 1000  # the page's bound, the prompt and the schema
    assert result["llm_usage"]["prompt_tokens"] < MAX_INPUT + 300


def test_the_worst_case_is_held_before_anything_is_fetched(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=RESERVE)  # the page's price is one too many
    site.page("/llm/unfetched", KETTLE)
    reply = modelled.scrape(key, asked(site.url("/llm/unfetched")))
    assert reply.status == 402, reply.body
    assert f"costs {PAGE_PRICE + RESERVE} credits" in reply.json["error"]
    capped = modelled.scrape(key, asked(site.url("/llm/unfetched"), max_credits=RESERVE))
    assert capped.status == 402
    assert capped.headers.get("X-Error-Code") == "max_credits_exceeded", capped.headers
    assert standin.calls == []
    assert site.count("/llm/unfetched") == 0
    assert money(accounts, account_id) == (RESERVE, 0)
    enough = modelled.scrape(key, asked(site.url("/llm/unfetched"), max_credits=RESERVE + 1))
    assert enough.status == 402  # the balance is still short by the page's price


def test_each_account_s_page_goes_to_the_model_alone(
    modelled: ServiceProcess,
    accounts: Accounts,
    standin: ModelStandin,
    site: TargetSite,
) -> None:
    pages = {}
    for name in ("alice", "bob"):
        site.page(f"/llm/{name}", f"<html><body><main><p>Secret of {name}</p></main></body></html>")
        pages[name] = (accounts.create(credits=100)[1], site.url(f"/llm/{name}"))
    for key, url in pages.values():
        assert modelled.scrape(key, asked(url)).json["success"] is True
    alice, bob = standin.calls
    assert "Secret of alice" in alice.text and "Secret of bob" not in alice.text
    assert "Secret of bob" in bob.text and "Secret of alice" not in bob.text


def test_the_operators_key_is_never_logged_nor_answered(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, kettle: str
) -> None:
    _, key = accounts.create(credits=100)
    standin.script.extend([Reply("{bad"), Reply(status=500)])
    reply = modelled.scrape(key, asked(kettle))
    assert reply.json["error_code"] == "llm_unavailable"
    assert standin.calls[0].authorization == f"Bearer {API_KEY}"
    time.sleep(0.2)  # the access log line
    assert API_KEY not in "\n".join(modelled.output)
    assert API_KEY not in reply.body.decode()


def test_a_batch_jobs_pages_ask_the_model_and_are_billed_alike(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, kettle: str
) -> None:
    account_id, key = accounts.create(credits=200)
    body = {
        "urls": [kettle, kettle + "?2"],
        "formats": ["json"],
        "json": {"prompt": "The product", "schema": PRODUCT},
    }
    reply = call("POST", modelled.url("/batch"), body, key=key)
    assert reply.status == 202, reply.body
    deadline = time.monotonic() + 60
    while True:
        found = call("GET", modelled.url(f"/jobs/{reply.json['id']}"), key=key).json
        if found["status"] == "completed" and found["counts"]["pending"] == 0:
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    results = found["results"]
    assert len(results) == 2
    charged = 0
    for entry in results:
        result = entry["result"]
        assert result["success"] is True, result
        assert result["json"] == {"name": "stand-in", "price": 1.5}
        assert result["credits_charged"] == PAGE_PRICE + result["llm_usage"]["credits"]
        charged += result["credits_charged"]
    assert found["credits_charged"] == charged
    assert money(accounts, account_id) == (200 - charged, 0)
    assert_page_and_tokens_apart(modelled, key, [entry["result"] for entry in results])


def test_a_crawls_pages_each_get_the_models_summary(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=200)
    site.page(
        "/llm-crawl/", '<html><body><main><a href="/llm-crawl/two">two</a></main></body></html>'
    )
    site.page("/llm-crawl/two", "<html><body><main><p>Page two</p></main></body></html>")
    body = {
        "url": site.url("/llm-crawl/"),
        "max_pages": 2,
        "sitemap": "skip",
        "formats": ["summary"],
    }
    reply = call("POST", modelled.url("/crawl"), body, key=key)
    assert reply.status == 202, reply.body
    deadline = time.monotonic() + 60
    while True:
        found = call("GET", modelled.url(f"/jobs/{reply.json['id']}"), key=key).json
        if found["status"] == "completed" and found["counts"]["pending"] == 0:
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    results = [entry["result"] for entry in found["results"]]
    assert len(results) == 2
    assert all(result["summary"] == SUMMARY for result in results), results
    assert any("Page two" in call_made.text for call_made in standin.calls)
    charged = sum(result["credits_charged"] for result in results)
    assert charged == sum(PAGE_PRICE + result["llm_usage"]["credits"] for result in results)
    assert money(accounts, account_id) == (200 - charged, 0)
    assert_page_and_tokens_apart(modelled, key, results)


def test_without_an_endpoint_the_fields_are_a_400(
    service: ServiceProcess, tmp_path: Path, kettle: str
) -> None:
    for body, says in (
        (asked(kettle), "json.prompt needs a language model endpoint"),
        ({"url": kettle, "formats": ["summary"]}, '"summary" needs a language model endpoint'),
    ):
        reply = service.scrape("spy_" + "x" * 40, body)
        assert reply.status == 400, reply.body
        assert says in reply.json["error"]
        assert set(reply.json) == {"error"}


def test_a_schema_that_is_not_a_json_schema_is_a_400_naming_its_path(
    modelled: ServiceProcess, accounts: Accounts, kettle: str
) -> None:
    _, key = accounts.create(credits=100)
    bad = {"type": "object", "properties": {"price": {"type": "money"}}}
    reply = modelled.scrape(key, {**asked(kettle), "json": {"prompt": "x", "schema": bad}})
    assert reply.status == 400, reply.body
    assert "'json.schema.properties.price.type'" in reply.json["error"]


def test_firecrawls_clients_get_json_and_summary_from_the_model(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, kettle: str
) -> None:
    account_id, key = accounts.create(credits=100)
    client = Firecrawl(api_key=key, api_url=modelled.url(""), max_retries=1)
    standin.script.append(Reply(json.dumps({"name": "Blue kettle", "price": 24.9})))
    doc = client.scrape(
        kettle,
        formats=[JsonFormat(prompt="The product on sale", schema=PRODUCT), "summary"],
    )
    assert doc.json == {"name": "Blue kettle", "price": 24.9}
    assert doc.summary == SUMMARY
    assert "Price: 24.90 EUR" in standin.calls[0].text
    assert "Home | Shop" not in standin.calls[0].text  # onlyMainContent, Firecrawl's default
    charged = doc.metadata.credits_used
    assert charged > PAGE_PRICE
    v1 = V1FirecrawlApp(api_key=key, api_url=modelled.url(""))
    answer = v1.scrape_url(kettle, formats=["json"], json_options={"schema": PRODUCT})
    assert answer.json_field == {"name": "stand-in", "price": 1.5}
    charged += answer.metadata["creditsUsed"]
    assert money(accounts, account_id) == (100 - charged, 0)


def test_change_tracking_json_mode_by_prompt_compares_the_model_s_answers(
    modelled: ServiceProcess, accounts: Accounts, standin: ModelStandin, site: TargetSite
) -> None:
    account_id, key = accounts.create(credits=200)
    site.page("/llm/tracked", KETTLE)
    url = site.url("/llm/tracked")
    body = {
        "url": url,
        "formats": ["change_tracking"],
        "change_tracking": {"modes": ["json"], "prompt": "The product on sale", "schema": PRODUCT},
    }
    standin.script.append(Reply(json.dumps({"name": "Blue kettle", "price": 24.9})))
    first = modelled.scrape(key, body).json
    assert first["change_tracking"]["change_status"] == "new"
    assert first["change_tracking"]["json"] is None
    assert "json" not in first  # what the model extracted is compared, not answered
    assert first["credits_charged"] == PAGE_PRICE + first["llm_usage"]["credits"] > PAGE_PRICE
    site.page("/llm/tracked", KETTLE.replace("24.90", "19.90"))
    standin.script.append(Reply(json.dumps({"name": "Blue kettle", "price": 19.9})))
    second = modelled.scrape(key, body).json
    assert second["change_tracking"]["change_status"] == "changed"
    assert second["change_tracking"]["json"] == {"price": {"previous": 24.9, "current": 19.9}}
    assert len(standin.calls) == 2  # the previous version's answer was kept, not asked again
    assert "Price: 19.90 EUR" in standin.calls[1].text
    spent = first["credits_charged"] + second["credits_charged"]
    assert money(accounts, account_id) == (200 - spent, 0)

    # Firecrawl's v2 changeTracking format with a schema: the same history, through firecrawl-py
    standin.script.append(Reply(json.dumps({"name": "Blue kettle", "price": 17.5})))
    site.page("/llm/tracked", KETTLE.replace("24.90", "17.50"))
    client = Firecrawl(api_key=key, api_url=modelled.url(""), max_retries=1)
    doc = client.scrape(
        url,
        formats=[
            "markdown",
            {"type": "changeTracking", "modes": ["json"], "schema": PRODUCT},
        ],
    )
    tracking = doc.change_tracking
    assert tracking is not None and tracking["changeStatus"] == "changed"
    assert tracking["json"] == {"price": {"previous": 19.9, "current": 17.5}}
